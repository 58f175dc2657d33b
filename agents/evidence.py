"""The evidence test: change the observation an answer rests on, let the mode continue, and say what happened.

A finished trace's backed claim (``agents/grounding.py``) names the observation that backs it. :func:`plan`
picks that claim (the first backed one, or the one asked for) and makes one stated change to the observation:
a number moves to another plausible value ("396 → 512"), a year or a date is moved, and a name is swapped for
another name from the same run's observations or, failing one, a name of the question's kind. The rerun is a
Fork from that observation (:func:`evidence_run`, ``agents/fork.py``); :func:`judge` reads its answer into
one of four verdicts (:data:`VERDICTS`).

Pure functions over traces, apart from :func:`evidence_run`, which only builds the Fork's run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

from agents.correctness import number_spans
from agents.events import Action, FinalAnswer, Forked, Observation
from agents.fork import fork, fork_run
from agents.grounding import Claim, Kind, claims_in, claims_of, folded, input_line, stated_at
from agents.trace import Trace

if TYPE_CHECKING:
    from agents.comparison import ComparisonRun, ModelFactory, Sink
    from agents.llm.base import ChatModel
    from agents.modes.base import RunConfig
    from tools.registry import ToolRegistry

Outcome = Literal["followed", "changed", "ignored", "looked_up"]
VERDICTS: dict[Outcome, str] = {
    "followed": "the answer followed the evidence ({before} → {after})",
    "changed": "the answer changed, but not to the evidence ({before} → {now})",
    "ignored": "the answer ignored the changed evidence (still {before})",
    "looked_up": "the mode looked it up again",
}
NEEDS_A_MODEL = "The evidence test needs a model that can answer: connect one to run it on this replay."
CHANGEABLE: tuple[Kind, ...] = ("number", "year", "date", "name")
YEAR_SHIFT = 7  # a year claim moves by this many years
DATE_SHIFT = 3  # a date's year moves by this many years
_OTHER_NAMES = {  # a name of the question's kind, when the run's observations hold no other name
    "person": ("Ada Lovelace", "Niels Bohr", "Grace Hopper"),
    "place": ("Lisbon", "Oslo", "Nairobi"),
    "thing": ("Halden", "Corvin", "Marlow"),
}


class EvidenceError(ValueError):
    """The test cannot run on this trace, or an export's block is not one: one clear line."""


@dataclass(frozen=True)
class Change:
    """The stated change: the claim as the answer writes it, what the observation said (``old``) and says now
    (``new``), and where: observation ``step`` (0-based, as the Fork counts them) of the mode's trace."""

    mode: str
    claim: str
    kind: Kind
    old: str
    new: str
    step: int
    tool: str
    input: str
    original: str
    edited: str

    @property
    def text(self) -> str:
        """"396 → 515"."""
        return f"{self.old} → {self.new}"

    def line(self) -> str:
        """What the page states before the rerun, in one line."""
        return (f"The evidence test changes observation {self.step + 1} ({self.tool or 'the tool'}): "
                f"{self.text}, and lets the mode continue from there.")

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "claim": self.claim, "kind": self.kind, "old": self.old,
                "new": self.new, "step": self.step, "tool": self.tool, "input": self.input,
                "original": self.original, "edited": self.edited}

    @classmethod
    def from_dict(cls, data: Any) -> Change:
        """A change read back from an export; ValueError (one line) when it is not one."""
        if not isinstance(data, dict):
            raise EvidenceError("the evidence test's change must be an object")
        fields = ("mode", "claim", "kind", "old", "new", "tool", "input", "original", "edited")
        if any(not isinstance(data.get(f), str) for f in fields) or data.get("kind") not in CHANGEABLE:
            raise EvidenceError("the evidence test's change lacks its texts or has an unknown kind")
        step = data.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise EvidenceError("the evidence test's change has no step")
        return cls(**{f: data[f] for f in fields}, step=step)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Verdict:
    """How the rerun's answer met the change: its :data:`Outcome`, the one line that says so, the answer."""

    outcome: Outcome
    line: str
    answer: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "line": self.line, "answer": self.answer}

    @classmethod
    def from_dict(cls, data: Any) -> Verdict:
        if not isinstance(data, dict) or data.get("outcome") not in VERDICTS or not isinstance(data.get("line"), str):
            raise EvidenceError("the evidence test's verdict must be one of " + ", ".join(VERDICTS))
        answer = data.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise EvidenceError("the evidence test's answer must be text")
        return cls(data["outcome"], data["line"], answer)


# --- the change ---------------------------------------------------------------------------------


def testable(trace: Trace) -> list[Claim]:
    """The backed claims of ``trace``'s answer the test can change: a number, year, date or name backed by one
    of this turn's observations that the Fork can edit (a step, not a call inside a CodeAct program)."""
    steps = _steps(trace)
    return [c for c in claims_of(trace) if c.mark == "backed" and c.kind in CHANGEABLE and c.source is not None
            and c.source.index is not None and c.source.index in steps]


def plan_change(trace: Trace, claim: str | None = None) -> Change:
    """The change for ``claim`` (as the answer writes it; None: the first testable claim). ValueError, one
    clear line, when the answer has none to test."""
    if not trace.answer:
        raise EvidenceError(f"{trace.mode} has no answer to test yet")
    claims = testable(trace)
    if not claims:
        raise EvidenceError(f"no claim of this answer is backed by an observation the test can change "
                            f"({trace.mode})")
    if claim is not None and not isinstance(claim, str):
        raise EvidenceError("the claim must be text, as the answer writes it")
    chosen = claims[0] if not claim else next((c for c in claims if _same(c.text, claim)), None)
    if chosen is None:
        raise EvidenceError(f"no backed claim {claim!r} in {trace.mode}'s answer; it has: "
                         + ", ".join(c.text for c in claims))
    assert chosen.source is not None and chosen.source.index is not None
    observations = [e for e in trace.of(Observation)]  # type: ignore[arg-type]
    original = observations[chosen.source.index].output
    at = stated_at(original, chosen.text, chosen.kind)
    assert at is not None  # grounding found it there
    old = original[at[0]:at[1]]
    new = _changed(chosen.kind, old, trace, original)
    edited = _replace_all(original, chosen.text, chosen.kind, new)
    return Change(trace.mode, chosen.text, chosen.kind, old, new, _steps(trace)[chosen.source.index],
                  chosen.source.tool, chosen.source.input, original, edited)


def _steps(trace: Trace) -> dict[int, int]:
    """Each observation's index (grounding's count, nested ones too) → its step (the Fork's count)."""
    out: dict[int, int] = {}
    step = 0
    for index, event in enumerate(trace.of(Observation)):  # type: ignore[arg-type]
        if not event.nested:
            out[index] = step
            step += 1
    return out


def _same(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def _changed(kind: Kind, before: str, trace: Trace, observation: str) -> str:
    if kind == "name":
        return _other_name(before, trace, observation)
    if kind == "year":
        return _moved_year(before, YEAR_SHIFT)
    if kind == "date":
        return _moved_date(before)
    return _moved_number(before)


def _moved_number(written: str) -> str:
    """Another plausible value of the same size and form: 30% more ("396" → "515"), whole numbers
    staying whole, decimals keeping their places, thousands keeping their separators."""
    value, start, end = number_spans(written)[0]
    text = written[start:end]
    places = len(text.split(".")[1]) if "." in text else 0
    new = value * Fraction(13, 10) if value else Fraction(5)
    if places == 0:
        rounded = Fraction(round(new))
        if rounded == value:
            rounded += 1
        out = f"{int(rounded):,}" if "," in text else str(int(rounded))
    else:
        out = f"{float(new):.{places}f}"
        if Fraction(out) == value:
            out = f"{float(value) + 10 ** -places:.{places}f}"
    return written[:start] + out + written[end:]


def _moved_year(written: str, years: int) -> str:
    def shift(m: re.Match[str]) -> str:
        year = int(m.group())
        return str(year - years if year + years > 2100 else year + years)
    return re.sub(r"\d{4}", shift, written, count=1)


def _moved_date(written: str) -> str:
    """A date moved: its year by :data:`YEAR_SHIFT`, or its day by a week when it has no year."""
    if re.search(r"\b\d{4}\b", written):
        return _moved_year(written, DATE_SHIFT)

    def day(m: re.Match[str]) -> str:
        d = int(m.group())
        return str(d + 7 if d + 7 <= 28 else d - 7)
    return re.sub(r"\b[0-3]?\d\b", day, written, count=1)


def _other_name(before: str, trace: Trace, observation: str) -> str:
    """Another name from the run's observations (the one that backs the claim first), not one the question or
    the answer states; else a name of the question's kind."""
    taken = {" ".join(c.text.casefold().split()) for c in claims_in(f"{trace.question}\n{trace.answer or ''}")}
    texts = [observation, *(o.output for o in trace.of(Observation))]  # type: ignore[attr-defined]
    for text in texts:
        for found in claims_in(text):
            folded_name = " ".join(found.text.casefold().split())
            if found.kind == "name" and folded_name not in taken and not _same(found.text, before):
                return found.text
    question = trace.question.casefold()
    kind = "person" if re.search(r"\bwho\b", question) else "place" if re.search(
        r"\bwhere\b|\bcity\b|\bcountry\b|\briver\b|\bcapital\b", question) else "thing"
    return next(n for n in _OTHER_NAMES[kind] if n.casefold() not in taken and not _same(n, before))


def _replace_all(text: str, claim: str, kind: Kind, after: str) -> str:
    """``text`` with every place it states ``claim`` written ``after`` instead."""
    out, rest = [], text
    while (at := stated_at(rest, claim, kind)) is not None and at[1] > at[0]:
        out += [rest[:at[0]], after]
        rest = rest[at[1]:]
    return "".join([*out, rest])


# --- the verdict --------------------------------------------------------------------------------


def judge(change: Change, rerun: Trace) -> Verdict:
    """The rerun's answer against the change: looked it up again (it re-ran the backing tool call after the
    edit), followed (it states the new value), ignored (it states the old one), or changed to something else
    (a rerun without an answer among them: "no answer")."""
    answer = rerun.answer
    if _looked_again(change, rerun):
        return Verdict("looked_up", VERDICTS["looked_up"], answer)
    if answer and stated_at(answer, change.new, change.kind) is not None:
        return Verdict("followed", VERDICTS["followed"].format(before=change.claim, after=change.new), answer)
    if answer and stated_at(answer, change.claim, change.kind) is not None:
        return Verdict("ignored", VERDICTS["ignored"].format(before=change.claim), answer)
    now = next((f.text for f in claims_in(answer or "") if f.kind == change.kind
                or {f.kind, change.kind} <= {"number", "year"}), None)
    now = now or (" ".join(answer.split())[:60] if answer else "no answer")
    return Verdict("changed", VERDICTS["changed"].format(before=change.claim, now=now), answer)


def evidence_block(source: str, change: Change, verdict: Verdict) -> dict[str, Any]:
    """An export's record of one test: the panel tested (``source``), the change, the verdict."""
    return {"source": source, "change": change.to_dict(), "verdict": verdict.to_dict()}


def read_block(block: Any) -> tuple[str, Change, Verdict]:
    """An export's ``evidence`` entry read back; EvidenceError (one line) when it is not one."""
    if not isinstance(block, dict) or not isinstance(block.get("source"), str):
        raise EvidenceError("an evidence test must name the panel it tested")
    return block["source"], Change.from_dict(block.get("change")), Verdict.from_dict(block.get("verdict"))


def verdict_line(block: Any) -> str:
    """An export's ``evidence`` block as one line ("Evidence test: 396 → 515 — the answer followed …"); "" when
    it is not one."""
    try:
        change = Change.from_dict(block.get("change")) if isinstance(block, dict) else None
        verdict = Verdict.from_dict(block.get("verdict")) if change is not None else None
    except ValueError:
        return ""
    if change is None or verdict is None:
        return ""
    return f"Evidence test: {change.text} — {verdict.line}"


def _looked_again(change: Change, rerun: Trace) -> bool:
    """A call after the edit to the same tool with the same input (folded as the map folds inputs), before the
    answer. The loop answers an exact repeat from its memory, with the changed text: the mode asked again all the
    same, and the verdict says so rather than judging an answer it may have reasoned about differently."""
    events = [e for _, e in rerun.events]
    start = next((i for i, e in enumerate(events) if isinstance(e, Forked)), None)
    if start is None:
        return False
    want = folded(change.input)
    for event in events[start + 1:]:
        if isinstance(event, FinalAnswer):
            break
        if isinstance(event, Action) and event.tool == change.tool and folded(input_line(event.input)) == want:
            return True
    return False


def evidence_run(trace: Trace, change: Change, *, registry: ToolRegistry, config: RunConfig,
                 model_factory: ModelFactory | None = None, sink: Sink | None = None) -> ComparisonRun:
    """The rerun, not yet started: the Fork of ``trace`` at the change's step with its edited observation."""
    return fork_run(trace, change.step, change.edited, registry=registry, config=config,
                    model_factory=model_factory, sink=sink)


def test_evidence(trace: Trace, model: ChatModel, registry: ToolRegistry, config: RunConfig,
                  claim: str | None = None) -> tuple[Change, Trace, Verdict]:
    """The whole test at once (the API and tests): the change, the rerun's trace, its verdict."""
    change = plan_change(trace, claim)
    rerun = Trace(trace.mode, trace.question)
    for event in fork(trace, change.step, change.edited, model, registry, config):
        rerun.add(event)
    rerun.finish()
    return change, rerun, judge(change, rerun)


test_evidence.__test__ = False  # type: ignore[attr-defined]  # a name pytest would otherwise collect
