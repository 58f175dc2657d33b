"""Grounding marks: where each claim of a mode's final answer came from, for that mode.

A claim (:func:`claims_in`: a number, a date, a name, a quoted phrase) is *given* (in the question: this wins),
*backed* (in an observation the mode received before it answered, normalised; :class:`Source` names it) or
*unbacked*. It is string matching, not understanding: a paraphrase is not matched, and a backed claim can still
be wrong (docs/modes.md, "Grounding marks").

Pure functions over text and traces, read by the step-aligned map (``agents/alignment.py``) and the evidence test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

from agents.correctness import number_spans, number_text
from agents.events import Action, FinalAnswer, Observation, Retry

if TYPE_CHECKING:
    from agents.llm.base import Message
    from agents.trace import Trace

Mark = Literal["given", "backed", "unbacked"]
Kind = Literal["number", "year", "date", "name", "quote"]
MARKS: tuple[Mark, ...] = ("backed", "given", "unbacked")  # the order counts are written in
UNBACKED_MEANS = "not found in the question or any observation: reasoning, a calculation, or a guess"
EXCERPT_CHARS = 60  # of an observation, on each side of the words that back a claim
MAX_QUOTE_CHARS = 160

_MONTHS = {name: n for n, names in enumerate(
    [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
     ("december", "dec")], start=1) for name in names}
_MONTH = r"(?P<m{n}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<d{n}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<y{n}>\d{{4}})"
_DATE = re.compile("|".join(f"(?:{p})" for p in (
    r"\b" + _DAY.format(n=1) + r"\s+(?:of\s+)?" + _MONTH.format(n=1) + r",?\s+" + _YEAR.format(n=1) + r"\b",
    r"\b" + _MONTH.format(n=2) + r"\s+" + _DAY.format(n=2) + r",?\s+" + _YEAR.format(n=2) + r"\b",
    r"\b" + _MONTH.format(n=3) + r",?\s+" + _YEAR.format(n=3) + r"\b",
    r"\b" + _YEAR.format(n=4) + r"-(?P<m4>[01]\d)-(?P<d4>[0-3]\d)\b",
    r"\b" + _DAY.format(n=5) + r"\s+(?:of\s+)?" + _MONTH.format(n=5) + r"\b",
    r"\b" + _MONTH.format(n=6) + r"\s+" + _DAY.format(n=6) + r"\b(?!\s*[:.]\d)",
)), re.IGNORECASE)
_QUOTE = re.compile(r'"([^"\n]{2,LIMIT})"|“([^”\n]{2,LIMIT})”|«\s?([^»\n]{2,LIMIT}?)\s?»'
                    .replace("LIMIT", str(MAX_QUOTE_CHARS)))
_AROUND_PUNCTUATION = re.compile(r" ?([^\w ]) ?")
_WORD = re.compile(r"[^\W\d_][\w'’]*(?:-[\w'’]+)*")
_YEARS = (1000, 2100)  # a whole number in this range may be a year (:func:`_is_year`)
_YEAR_BEFORE = re.compile(r"\b(?:in|since|from|until|till|by|of|year|around|circa|c\.|before|after|between|and)\s+$",
                          re.IGNORECASE)
_YEAR_AFTER = re.compile(r"\s*(?:BCE?|AD|CE|A\.D\.|B\.C\.)\b")
# Lower-case words that may join the capitalised words of one name ("Bank of England", "Leonardo da Vinci").
_JOINERS = frozenset({"of", "the", "de", "da", "di", "du", "del", "della", "van", "von", "der", "den", "la", "le"})
# Capitalised words that open sentences or label answers rather than name anything; a name never starts with one.
_NOT_NAMES = frozenset("""
a an the i it its it's this that these those there here he she they we you my our your their his her
in on at by for from with without of to and or but if when while after before during since because as so
is are was were be been am do does did has have had will would can could should may might must shall
yes no not none nothing unknown maybe perhaps probably likely possibly approximately about around roughly
nearly almost exactly just only also then therefore thus hence however based according answer final result
total each every all some most many much more less few several both either neither one
supports refutes enough info true false correct incorrect bc ad bce ce
""".split())


@dataclass(frozen=True)
class Observed:
    """An observation a mode received, as grounding reads it: its text and the call that produced it.

    ``index`` is its place among the trace's observations (0-based, in event order, a CodeAct program's
    calls counted): the map finds its row from it. An earlier turn's observation (a follow-up) has no index and
    the ``turn`` it came in."""

    text: str
    tool: str = ""
    input: str = ""
    index: int | None = None
    turn: int | None = None


@dataclass(frozen=True)
class Source:
    """The observation that backs a claim: the mode that received it, the call, the words around the match, and
    where it is: ``index`` among the trace's observations, ``row`` on the map (1-based, once placed), or the
    earlier ``turn`` of a follow-up."""

    mode: str
    tool: str
    input: str
    excerpt: str
    index: int | None = None
    row: int | None = None
    turn: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "row": self.row, "turn": self.turn, "observation": self.index, "tool": self.tool,
                "input": self.input, "excerpt": self.excerpt}


@dataclass(frozen=True)
class Claim:
    """One claim of an answer: its text as written, what kind it is, its mark, every place the answer states it
    (``spans``: start and end offsets in the answer) and, when backed, its :class:`Source`."""

    text: str
    kind: Kind
    mark: Mark
    spans: tuple[tuple[int, int], ...]
    source: Source | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "mark": self.mark, "spans": [list(s) for s in self.spans],
                "source": self.source.to_dict() if self.source is not None else None}


@dataclass(frozen=True)
class _Found:
    """A claim as extracted, before it is marked: ``form`` is what matching compares."""

    text: str
    kind: Kind
    form: Any  # a number's value, a date's (year, month, day), a name's or quote's folded words
    start: int
    end: int


# --- claims -------------------------------------------------------------------------------------


def claims_in(text: str) -> list[_Found]:
    """The claims ``text`` makes, in order: quoted phrases, dates, numbers (a lone 1000–2100 is a year), then
    capitalised names; a claim inside another (a number in a date or a quote) is not one of its own."""
    found: list[_Found] = []
    taken: list[tuple[int, int]] = []

    def add(claim: _Found) -> None:
        if claim.start < claim.end and not any(claim.start < e and s < claim.end for s, e in taken):
            found.append(claim)
            taken.append((claim.start, claim.end))

    for m in _QUOTE.finditer(text):
        inner = next(g for g in m.groups() if g is not None)
        if words := _fold_words(inner):
            add(_Found(m.group(0), "quote", words, m.start(), m.end()))
    for date, start, end in _dates(text):
        add(_Found(text[start:end], "date", date, start, end))
    for value, start, end in number_spans(text):
        add(_Found(text[start:end], "year" if _is_year(text, value, start, end) else "number", value, start, end))
    for start, end in _names(text):
        add(_Found(text[start:end], "name", _fold_words(text[start:end]), start, end))
    return sorted(found, key=lambda c: c.start)


def _is_year(text: str, value: Fraction, start: int, end: int) -> bool:
    """A whole number from 1000 to 2100, written as four digits, that the answer is, or that follows "in",
    "since", … or precedes "BC", "AD", …"""
    if not (value.denominator == 1 and _YEARS[0] <= value <= _YEARS[1] and text[start:end].isdigit()):
        return False
    return not text[:start].strip() and not text[end:].strip(" .") or bool(
        _YEAR_BEFORE.search(text[:start]) or _YEAR_AFTER.match(text[end:]))


def _dates(text: str) -> list[tuple[tuple[int | None, int, int | None], int, int]]:
    """``((year, month, day), start, end)`` for each date written with a month ("20 July 1969", "July 1969",
    "July 20", "1969-07-20"); a missing part is None."""
    out = []
    for m in _DATE.finditer(text):
        groups = {k[0]: v for k, v in m.groupdict().items() if v is not None}
        month = _MONTHS.get(groups["m"].lower().rstrip(".")) if not groups["m"].isdigit() else int(groups["m"])
        day = int(groups["d"]) if "d" in groups else None
        if month is None or not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
            continue
        out.append(((int(groups["y"]) if "y" in groups else None, month, day), m.start(), m.end()))
    return out


def _names(text: str) -> list[tuple[int, int]]:
    """Spans of capitalised names: capitalised words next to each other, or joined by "of", "da", … (a word of
    :data:`_NOT_NAMES` cannot open one; a single letter is no name)."""
    words = list(_WORD.finditer(text))
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(words):
        if not _capitalised(words[i].group()) or words[i].group().casefold() in _NOT_NAMES:
            i += 1
            continue
        j = i
        while j + 1 < len(words):
            gap = text[words[j].end():words[j + 1].start()]
            nxt = words[j + 1].group()
            if gap == " " and _capitalised(nxt):
                j += 1
            elif (gap == " " and nxt in _JOINERS and j + 2 < len(words) and _capitalised(words[j + 2].group())
                  and text[words[j + 1].end():words[j + 2].start()] == " "):
                j += 2
            else:
                break
        end = words[j].end() - (2 if words[j].group().endswith(("'s", "’s")) else 0)  # "Eiffel's": "Eiffel"
        if end - words[i].start() > 1:
            spans.append((words[i].start(), end))
        i = j + 1
    return spans


def _capitalised(word: str) -> bool:
    return word[:1].isupper()


def _fold_words(text: str) -> tuple[str, ...]:
    """Case and punctuation folded: the words of ``text``, lower case."""
    return tuple(w.casefold() for w in re.findall(r"\w+", text))


# --- marks --------------------------------------------------------------------------------------


def ground(answer: str | None, questions: Sequence[str], observed: Sequence[Observed], mode: str) -> list[Claim]:
    """Each distinct claim of ``answer`` marked: given (in one of ``questions``), backed (in one of ``observed``,
    the first such, in order), or unbacked."""
    claims: dict[tuple, Claim] = {}
    asked = [_Text(q) for q in questions]
    seen = [(o, _Text(o.text)) for o in observed]  # each text read once, whatever the number of claims
    for found in claims_in(answer or ""):
        key = (found.kind if found.kind in ("name", "quote") else "value", found.form)
        if key in claims:
            claim = claims[key]
            claims[key] = replace(claim, spans=(*claim.spans, (found.start, found.end)))
            continue
        spans = ((found.start, found.end),)
        if any(q.where(found) is not None for q in asked):
            claims[key] = Claim(found.text, found.kind, "given", spans)
            continue
        source = next((_source(o, at, mode) for o, text in seen if (at := text.where(found)) is not None), None)
        claims[key] = Claim(found.text, found.kind, "backed" if source else "unbacked", spans, source)
    return list(claims.values())


def stated_at(text: str, claim: str, kind: Kind) -> tuple[int, int] | None:
    """Where ``text`` states the claim written ``claim`` of ``kind``, matched as :func:`ground` matches it (a
    number or a year by value); None when it does not."""
    numeric = {"number", "year"}
    found = next((f for f in claims_in(claim) if f.kind == kind or {f.kind, kind} <= numeric), None)
    return _Text(text).where(found) if found is not None else None


class _Text:
    """A question or an observation as claims are looked for in it: its numbers and dates read once, when asked."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._numbers: dict[Fraction, tuple[int, int]] | None = None
        self._dates: list | None = None

    def where(self, claim: _Found) -> tuple[int, int] | None:
        """Where the text states ``claim``, normalised (case, whitespace, punctuation; numbers by value)."""
        if claim.kind in ("number", "year"):
            if self._numbers is None:
                self._numbers = {}
                for value, start, end in number_spans(self.text):
                    self._numbers.setdefault(value, (start, end))
            return self._numbers.get(claim.form)
        if claim.kind == "date":
            self._dates = _dates(self.text) if self._dates is None else self._dates
            year, month, day = claim.form
            return next(((s, e) for (y, m, d), s, e in self._dates
                         if m == month and (year is None or y == year) and (day is None or d == day)), None)
        if not all(w in self.text.casefold() for w in claim.form):  # most texts lack a word: no regex for them
            return None
        pattern = r"(?<!\w)" + r"\W+".join(re.escape(w) for w in claim.form) + r"(?!\w)"
        found = re.search(pattern, self.text, re.IGNORECASE)
        return found.span() if found else None


def _source(observed: Observed, at: tuple[int, int], mode: str) -> Source:
    text, (start, end) = observed.text, at
    lead = "…" if start > EXCERPT_CHARS else ""
    tail = "…" if end + EXCERPT_CHARS < len(text) else ""
    excerpt = lead + " ".join(text[max(0, start - EXCERPT_CHARS):end + EXCERPT_CHARS].split()) + tail
    return Source(mode, observed.tool, observed.input, excerpt, observed.index, turn=observed.turn)


def counts(claims: Iterable[Claim]) -> dict[str, int]:
    """How many claims have each mark: ``{"backed": n, "given": n, "unbacked": n}``."""
    out = dict.fromkeys(MARKS, 0)
    for claim in claims:
        out[claim.mark] += 1
    return out


def counts_text(claims: Sequence[Claim]) -> str:
    """"3 backed · 1 given · 1 unbacked" (the marks with none left out); "" for an answer without claims."""
    return " · ".join(f"{n} {mark}" for mark, n in counts(claims).items() if n)


# --- from a trace -------------------------------------------------------------------------------


def observed_in(trace: Trace) -> list[Observed]:
    """The observations ``trace``'s mode received before its final answer, in order; a mode run again after a
    failure (``Retry``) received only those of its last attempt. Indices count every observation of the trace."""
    out: list[Observed] = []
    action: Action | None = None
    call: Action | None = None
    index = 0
    for event in trace.of(Action | Observation | Retry | FinalAnswer):  # type: ignore[arg-type]
        if isinstance(event, Retry):
            out = []
        elif isinstance(event, FinalAnswer):
            break
        elif isinstance(event, Action):
            call, action = (event, action) if event.nested else (None, event)
        else:
            made = call if event.nested else action
            out.append(Observed(event.output, event.tool, input_line(made.input) if made else "", index))
            index += 1
    return out


def earlier_observed(history: Sequence[Message]) -> list[Observed]:
    """The observations in a follow-up's earlier turns (a mode's conversation so far), each with its turn: tool
    results and ``Observation:`` messages, counted from each ``Question:`` that opens a turn."""
    out: list[Observed] = []
    turn = 0
    for message in history:
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        if message.get("role") == "user" and text.startswith("Question:"):
            turn += 1
        elif message.get("role") == "tool" or (message.get("role") == "user" and text.startswith("Observation:")):
            out.append(Observed(text.removeprefix("Observation:").strip(), turn=max(turn, 1)))
    return out


def claims_of(trace: Trace, *, questions: Sequence[str] = (), earlier: Sequence[Observed] = ()) -> list[Claim]:
    """The marked claims of ``trace``'s final answer: given by its question (and ``questions``, a follow-up's
    earlier ones), backed by ``earlier`` (a follow-up's earlier observations) or by what it observed."""
    if not trace.answer:
        return []
    return ground(trace.answer, [trace.question, *questions], [*earlier, *observed_in(trace)], trace.mode)


def input_line(value: str | dict) -> str:
    """A tool input on one line: a text input as written, a native call's arguments as ``key=value``."""
    if isinstance(value, dict):
        if len(value) == 1:
            return " ".join(str(next(iter(value.values()))).split())
        return ", ".join(f"{k}={' '.join(str(v).split())}" for k, v in value.items())
    return " ".join(str(value).split())


def folded(text: str) -> str:
    """Text as the map compares tool inputs: case and whitespace folded (none around operators and punctuation),
    each number written by its value ("17 * 23 + 5.0" and "17*23+5" are one input)."""
    out, pos = [], 0
    for value, start, end in number_spans(text):
        written = text[start:end]
        sign = written[0] if written[0] in "+-−" else ""
        parts = [number_text(abs(v)) for v, _, _ in number_spans(written.replace("/", " / "))]
        out += [text[pos:start], sign, "/".join(parts) if "/" in written else number_text(abs(value))]
        pos = end
    spaced = " ".join("".join([*out, text[pos:]]).casefold().split())
    return _AROUND_PUNCTUATION.sub(r"\1", spaced)
