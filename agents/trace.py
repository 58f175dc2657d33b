"""One mode's run, as the events it produced: the single source for metrics, export and replay.

A :class:`Trace` stores every event with its time offset from the start of the run, and
derives everything else (answer, steps, token counts, flags) from them, so the numbers
shown under a panel, printed by the CLI and saved in an export cannot disagree.
``from_dict(to_dict())`` rebuilds the same trace exactly, which is what replay relies on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agents import strict_json
from agents.events import (
    Action,
    Evaluation,
    Event,
    FinalAnswer,
    Forked,
    LLMError,
    Observation,
    ParseError,
    Paused,
    Reflection,
    Resumed,
    Retry,
    Thought,
    TokenDelta,
    Trial,
    Truncated,
    Usage,
    Waited,
    Waiting,
    event_from_dict,
    event_to_dict,
)
from agents.llm import pricing
from agents.modes.registry import forked_mode, get_mode, mode_title
from agents.transcript import fmt_input, fmt_output, metrics_line, quoted, reflexion_line


@dataclass(frozen=True)
class Step:
    """One Action → Observation round, with the thought that led to it.

    A CodeAct step is one program: ``input`` is its code, ``observation`` what it printed, and ``calls``
    the tool calls it made while it ran (each a Step of its own, without a thought)."""

    thought: str
    action: str
    input: str | dict
    observation: str
    elapsed_s: float
    is_error: bool = False
    cached: bool = False
    calls: tuple[Step, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = {"thought": self.thought, "action": self.action, "input": self.input,
                "observation": self.observation, "elapsed_s": round(self.elapsed_s, 4)}
        if self.calls:  # only CodeAct's steps have it: the other modes' JSON keeps its shape
            data["calls"] = [{k: v for k, v in c.to_dict().items() if k != "thought"} for c in self.calls]
        return data


@dataclass
class Trace:
    """Events of one mode's run, each with its offset in seconds from the start."""

    mode: str
    question: str = ""
    events: list[tuple[float, Event]] = field(default_factory=list)
    elapsed_s: float = 0.0
    _t0: float = field(default_factory=time.perf_counter, repr=False, compare=False)
    _paused_s: float = field(default=0.0, repr=False, compare=False)  # time spent waiting for "next step"
    # every event but the streamed tokens: what the metrics read, so a live panel's numbers cost per step, not token
    _steps: list[Event] = field(default_factory=list, repr=False, compare=False)
    # the process's prices when the run began (agents.llm.pricing); a saved run's own price when read back
    prices: pricing.PriceBook | None = field(default_factory=pricing.current, repr=False, compare=False)

    _waited_s: float = field(default=0.0, repr=False, compare=False)  # the waits over (Waited), in seconds
    _wait_from: float | None = field(default=None, repr=False, compare=False)  # where a wait still open began

    def __post_init__(self) -> None:
        self._steps = [e for _, e in self.events if not isinstance(e, TokenDelta)]
        for t, event in self.events:
            self._count_wait(event, t)

    def _count_wait(self, event: Event, t: float) -> None:
        if isinstance(event, Waiting) and self._wait_from is None:
            self._wait_from = t
        elif isinstance(event, Waited):
            self._waited_s += max(0.0, event.seconds)
            self._wait_from = None

    def add(self, event: Event, t: float | None = None) -> Event:
        """Record an event now (or at offset ``t``) and return it, so loops can ``yield trace.add(e)``.

        Offsets leave out the time a stepping run waited (each :class:`Resumed` says how long), so
        the wall time counts only what ran and a replay does not sit through a class discussion.
        """
        if isinstance(event, Resumed) and t is None:
            self._paused_s += event.waited_s
        offset = self._now() if t is None else t
        self.events.append((offset, event))
        if not isinstance(event, TokenDelta):
            self._steps.append(event)
            self._count_wait(event, offset)
        self.elapsed_s = max(self.elapsed_s, offset)
        return event

    def _now(self) -> float:
        return max(0.0, time.perf_counter() - self._t0 - self._paused_s)

    def finish(self) -> None:
        """Mark the end of the run (the wall time includes work after the last event)."""
        self.elapsed_s = max(self.elapsed_s, self._now())

    def of(self, kind: type) -> list[Any]:
        if kind is TokenDelta:
            return [e for _, e in self.events if isinstance(e, kind)]
        return [e for e in self._steps if isinstance(e, kind)]

    @property
    def answer(self) -> str | None:
        answers = self.of(FinalAnswer)
        return answers[-1].text if answers else None

    @property
    def forced(self) -> bool:
        return any(a.forced for a in self.of(FinalAnswer))

    @property
    def error(self) -> str | None:
        """The last model error of the last attempt: a mode run again after an error (``Retry``) may succeed."""
        error = None
        for event in self._steps:
            if isinstance(event, LLMError):
                error = event.message
            elif isinstance(event, Retry):
                error = None
        return error

    @property
    def truncated_calls(self) -> int:
        """Replies the server ended at the token limit (``finish_reason="length"``)."""
        return len(self.of(Truncated))

    @property
    def parse_errors(self) -> int:
        return len(self.of(ParseError))

    @property
    def llm_calls(self) -> int:
        return len(self.of(Usage))

    @property
    def tool_calls(self) -> int:
        """Calls of the tool registry: every Observation, except that of a program (CodeAct), whose calls are
        its nested Observations; the program itself is a step, not a tool call."""
        calls, code = 0, False
        for event in self._steps:
            if isinstance(event, Action) and not event.nested:
                code = event.code
            elif isinstance(event, Observation):
                calls += event.nested or not code
        return calls

    @property
    def prompt_tokens(self) -> int:
        return sum(u.prompt_tokens for u in self.of(Usage))

    @property
    def completion_tokens(self) -> int:
        return sum(u.completion_tokens for u in self.of(Usage))

    @property
    def tokens_estimated(self) -> bool:
        return any(u.estimated for u in self.of(Usage))

    @property
    def answered_by(self) -> str | None:
        """The model that answered this run's last call, as the server named it (None: no server said)."""
        return next((u.model for u in reversed(self.of(Usage)) if u.model), None)

    @property
    def price(self) -> pricing.Price | None:
        """USD per million tokens for this run's model: the server's listing, else the owner's; None: unknown."""
        return self.prices.price_for(self.answered_by) if self.prices is not None else None

    @property
    def cost(self) -> float | None:
        """Tokens × price in USD (an estimate when :attr:`tokens_estimated`); None without a price."""
        price = self.price
        return price.cost(self.prompt_tokens, self.completion_tokens) if price is not None else None

    @property
    def llm_seconds(self) -> float:
        return sum(u.elapsed_s for u in self.of(Usage))

    @property
    def waiting_s(self) -> float:
        """Seconds spent waiting — queued at the app's gate, for a one-at-a-time server's turn, in a back-off before
        a retry, for room in the Python sandbox — not working: each :class:`Waited`, and a wait still open up to the
        trace's end (a run stopped while it waited)."""
        total = self._waited_s
        if self._wait_from is not None:
            total += max(0.0, self.elapsed_s - self._wait_from)
        return min(total, self.elapsed_s)

    @property
    def own_s(self) -> float:
        """The mode's own time: its wall time less :attr:`waiting_s` (the table's Time column)."""
        return max(0.0, self.elapsed_s - self.waiting_s)

    @property
    def steps(self) -> list[Step]:
        """Action → Observation pairs (of every trial, for Reflexion); an action still waiting for its observation
        is left out. Nested pairs (the tool calls of a CodeAct program) go into their program's step, not the list."""
        steps: list[Step] = []
        thought, pending, call, calls = "", None, None, []
        for event in self._steps:
            if isinstance(event, Thought):
                thought = event.text
            elif isinstance(event, Action) and event.nested:
                call = event
            elif isinstance(event, Action):
                pending, calls = event, []
            elif isinstance(event, Observation) and event.nested:
                if call is not None:
                    calls.append(Step("", call.tool, call.input, event.output, event.elapsed_s, event.is_error,
                                      event.cached))
                call = None
            elif isinstance(event, Observation) and pending is not None:
                steps.append(Step(pending.thought or thought, pending.tool, pending.input, event.output,
                                  event.elapsed_s, event.is_error, event.cached, tuple(calls)))
                thought, pending, calls = "", None, []
            elif isinstance(event, Trial):  # a Reflexion trial starts afresh
                thought, pending, calls = "", None, []
        return steps

    @property
    def step_count(self) -> int:
        """The steps the metrics, the table and the benchmark count: Action → Observation rounds (:attr:`steps`), and
        each chain of thought — one for Think-only, one per CoT-SC sample, in CoT-SC alone and in both hybrids
        alike — so an answered Think run is "1 step", not 0."""
        rounds = len(self.steps) - self._joined_calls()
        samples = sum(1 for t in self.of(Thought) if t.sample)
        if samples or rounds or _uses_tools(self.mode):
            return rounds + samples
        return max(self.llm_calls, 1 if self.of(Thought) or self.of(FinalAnswer) else 0)

    def _joined_calls(self) -> int:
        """Observations after the first of one native reply's calls, run at once: that reply is one step."""
        joined, seen = 0, None  # seen: observations so far of a reply with several calls
        for event in self._steps:
            if isinstance(event, Usage):
                seen = 0 if len(event.tool_calls) > 1 else None
            elif isinstance(event, Observation) and not event.nested and seen is not None:
                joined, seen = joined + (seen > 0), seen + 1
        return joined

    @property
    def trials(self) -> list[dict[str, Any]]:
        """Reflexion's trials, in order: each one's answer, verdict (who judged, why) and reflection.

        Empty for every other mode. The run's ``answer`` is the last trial's; its ``steps`` and
        calls count every trial, the evaluator's and the reflections' calls included.
        """
        trials: list[dict[str, Any]] = []
        for event in self._steps:
            if isinstance(event, Trial):
                trials.append({"n": event.n, "answer": None, "correct": None, "by": None, "reason": None,
                               "reflection": None})
            elif isinstance(event, Evaluation) and trials:
                trials[-1].update(answer=event.answer, correct=event.correct, by=event.by, reason=event.reason)
            elif isinstance(event, Reflection) and trials:
                trials[-1]["reflection"] = event.text
        return trials

    def summary(self) -> dict[str, Any]:
        """The CLI's per-run JSON object (see README: ``python -m agents ask --json``); a Reflexion run adds
        ``trials`` (see :attr:`trials`)."""
        extra = {"trials": trials} if (trials := self.trials) else {}
        return {
            "answer": self.answer,
            "forced": self.forced,
            "error": self.error,
            "steps": [s.to_dict() for s in self.steps],
            "llm_calls": self.llm_calls,
            "tool_calls": self.tool_calls,
            "parse_errors": self.parse_errors,
            "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                      "estimated": self.tokens_estimated},
            "hit_token_limit": self.truncated_calls,
            "elapsed_s": round(self.elapsed_s, 4),
            "waiting_s": round(self.waiting_s, 4),
            **pricing.cost_fields(self.price, self.prompt_tokens, self.completion_tokens),
            **extra,
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything needed to replay the run, plus the derived summary for readers of the file."""
        return {
            "mode": self.mode,
            "question": self.question,
            "elapsed_s": self.elapsed_s,
            "events": [{"t": t, **event_to_dict(e)} for t, e in self.events],
            "summary": self.summary(),
            **({"price": price.to_dict()} if (price := self.price) is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        """Rebuild a trace saved by :meth:`to_dict` (the ``summary`` is derived again, not trusted)."""
        price = pricing.Price.from_dict(data.get("price"))  # a saved run keeps its own price, or has none
        trace = cls(mode=str(data.get("mode", "")), question=str(data.get("question", "")),
                    prices=pricing.PriceBook(fixed=price) if price is not None else None)
        for item in data.get("events", []):
            trace.add(event_from_dict(item), float(item.get("t", 0.0)))
        trace.elapsed_s = float(data.get("elapsed_s", trace.events[-1][0] if trace.events else 0.0))
        return trace

    def to_json(self) -> str:
        return strict_json.dumps(self.to_dict(), ensure_ascii=False, indent=1)

    def to_markdown(self) -> str:
        """A readable transcript: question, numbered thought/action/observation steps, answer, metrics."""
        title = mode_title(self.mode)
        lines = [f"### {title}", "", f"**Question:** {self.question}", ""]
        n = call = 0
        for _, event in self.events:
            if isinstance(event, TokenDelta | Usage | Waited | Resumed) or (isinstance(event, Waiting)
                                                                             and not event.learned):
                continue
            if isinstance(event, Paused):
                lines.append(f"_⏸ Paused after step {event.step}._")
            elif isinstance(event, Forked):
                # only a tool loop has observations; a fork of a single chain of thought edits its reasoning
                what = f"Observation {event.step + 1}" if self.of(Observation) else "Reasoning"
                lines.append(f"**✎ {what} edited by the teacher** (was: {quoted(event.original)}):"
                             f"\n\n```text\n{event.edited}\n```")
            elif isinstance(event, Truncated):
                lines.append(f"_✂ {event.message[:1].upper()}{event.message[1:]}._")
            elif isinstance(event, Retry):
                lines.append(f"**⟳ Retry:** {event.message}")
            elif isinstance(event, Waiting):
                lines.append(f"_⏳ {event.message[:1].upper()}{event.message[1:]}._")
            elif isinstance(event, Thought):
                lines.append(f"**Thought:** {event.text}")
            elif isinstance(event, Action) and event.nested:
                call += 1
                lines.append(f"> **Call {n}.{call}:** `{event.tool}` ← {fmt_input(event.input)}")
            elif isinstance(event, Action):
                n, call = n + 1, 0
                shown = f"\n\n```python\n{event.input}\n```" if event.code else fmt_input(event.input)
                lines.append(f"**Action {n}:** `{event.tool}` ← {shown}")
            elif isinstance(event, Observation):
                flag = " (error)" if event.is_error else (" (cached)" if event.cached else "")
                label, quote = (f"Result {n}.{call}", "> ") if event.nested else (f"Observation {n}", "")
                lines.append(f"{quote}**{label}**{flag} _{event.elapsed_s:.2f} s_:{fmt_output(event.output, quote)}")
            elif isinstance(event, ParseError):
                lines.append(f"**Format error, re-prompted:** {event.message}")
            elif isinstance(event, LLMError):
                lines.append(f"**Model error:** {event.message}")
            elif isinstance(event, FinalAnswer):
                forced = (f" (forced: {event.why})" if event.why else " (forced)") if event.forced else ""
                lines.append(f"**Final answer{forced}:** {event.text}")
            elif isinstance(event, Trial | Evaluation | Reflection):
                lines.append(reflexion_line(event))
            lines.append("")
        lines.append(f"_{metrics_line(self)}_")
        return "\n".join(lines).strip() + "\n"


def _uses_tools(mode: str) -> bool:
    """Whether ``mode`` (or the mode a fork continues) acts through tools; an unknown id (an old recording) does."""
    forked = forked_mode(mode)
    try:
        return get_mode(forked[0] if forked else mode).uses_tools
    except ValueError:
        return True
