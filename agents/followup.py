"""A follow-up's earlier turns, sealed: what a finished turn hands to the next one (issue 29).

After a turn, each mode's conversation so far (its earlier turns' and this turn's messages,
``agents/conversation.py``) is put in a *follow-up block* with the turn's number and an HMAC seal made with this
app's key. The block travels in the turn's JSON export and in the MCP tool's answer; a follow-up hands it back
(the page from its export, ``/compare`` and MCP as ``previous``) and the seal shows it is what this app made:
a tampered, foreign or malformed block is refused in one line, never run.

The key is the app's ``"followup"`` key (``agents/app_key.py``: from ``APP_SECRET``, else random per process).
Plain data only, so it is pickled to a worker process with the request.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents import app_key, prompts, strict_json
from agents.conversation import checked, conversation_of, fit
from agents.events import Reflection
from agents.llm.base import Message
from agents.modes.base import RunConfig
from agents.modes.reflexion import lessons
from agents.modes.registry import mode_of
from agents.trace import Trace
from tools.registry import ToolRegistry

FORMAT = "think-act-react/followup@1"
MAX_PREVIOUS_CHARS = 2_000_000  # a ``previous`` this long is refused before it is parsed


class FollowupError(ValueError):
    """A ``previous`` that cannot be continued: ``str(exc)`` is the one line to show an API caller; ``kind`` says
    which refusal it is (``missing``, ``changed``, ``malformed``, ``full``, ``gone``), so the page can word it
    for a teacher."""

    def __init__(self, line: str, kind: str = "malformed") -> None:
        super().__init__(line)
        self.kind = kind


@dataclass(frozen=True)
class Previous:
    """An opened follow-up block: the turns so far and each mode's conversation over them."""

    # oldest first: {"question", "answers": {panel: answer}, "numbers": {panel: …}, "expected", "edits": {panel: …}}
    turns: tuple[dict[str, Any], ...]
    history: dict[str, tuple[Message, ...]]  # by panel: a mode's id, or a fork's (react@2)
    trusted: bool = True  # its seal is this app's (a recording's block may be anyone's)

    @property
    def turn(self) -> int:
        """Turns already asked (the follow-up is ``turn + 1``)."""
        return len(self.turns)

    def block(self) -> dict[str, Any]:
        """The block again (an export keeps the turns it continued: replay, share and fork read them), sealed only
        when this app sealed it: a recording's turns stay as trustworthy as the recording."""
        block = sealed(list(self.turns), self.history)
        return block if self.trusted else {**block, "seal": None}


@dataclass(frozen=True)
class FollowUp:
    """A follow-up as a run takes it: the earlier turns, and how many observations each mode had cut to fit."""

    previous: Previous
    cuts: dict[str, int]


def _digest(body: Mapping[str, Any]) -> str:
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return app_key.seal("followup", text)


def shared_turn(trace: Trace) -> list[Message]:
    """A turn as the modes without a conversation of their own carry it (the hybrids, Reflexion): its question
    and answer, and Reflexion's reflections, which its next turn starts its memory with."""
    answer = trace.answer if trace.answer is not None else f"(no answer: {trace.error or 'stopped'})"
    learned = lessons([e.text for _, e in trace.events if isinstance(e, Reflection)])
    return [{"role": "user", "content": prompts.question_message(trace.question)},
            {"role": "assistant", "content": f"Final Answer: {answer}{learned}"}]


def next_history(previous: Previous | None, traces: Mapping[str, Trace], registry: ToolRegistry,
                 config: RunConfig) -> dict[str, tuple[Message, ...]]:
    """Each mode's conversation after this turn: its earlier turns, then this turn's messages rebuilt from its trace
    (``conversation_of``; the question and answer for a mode that keeps none of its own)."""
    out: dict[str, tuple[Message, ...]] = {}
    for mode, trace in traces.items():
        # a fork made in this turn (react@2) continues the earlier turns of the mode it forked
        earlier = list(previous.history.get(mode, previous.history.get(mode_of(mode), ()))) if previous else []
        own = conversation_of(trace, registry, config) or shared_turn(trace)
        out[mode] = (*earlier, *own)
    return out


def numbers(trace: Trace) -> dict[str, Any]:
    """A turn's row of figures for one mode, which the next turns' tables and exports keep."""
    return {"steps": trace.step_count, "llm_calls": trace.llm_calls, "tool_calls": trace.tool_calls,
            "tokens": trace.prompt_tokens + trace.completion_tokens, "seconds": round(trace.elapsed_s, 2)}


def sealed(turns: list[dict[str, Any]], history: Mapping[str, Any]) -> dict[str, Any]:
    """The block a turn hands on: its turns (this one last) and each mode's conversation."""
    body = {"format": FORMAT, "turns": [dict(t) for t in turns],
            "history": {m: [dict(x) for x in msgs] for m, msgs in history.items()}}
    return {**body, "seal": _digest(body)}


def block_for(previous: Previous | None, question: str, traces: Mapping[str, Trace], registry: ToolRegistry,
              config: RunConfig, *, expected: str | None = None,
              edits: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The sealed block of a finished turn (its export's and the MCP answer's ``followup``): each panel's answer,
    figures and conversation, the turn's own expected answer (each turn is marked against its own) and the
    teacher's edits of a fork (``{panel: {"step", "original", "edited"}}``), which the next turns' panels show."""
    history = next_history(previous, traces, registry, config)
    turn = {"question": question, "answers": {m: t.answer for m, t in traces.items()},
            "numbers": {m: numbers(t) for m, t in traces.items()}, "expected": expected,
            **({"edits": {m: dict(e) for m, e in edits.items()}} if edits else {})}
    return sealed([*(previous.turns if previous else ()), turn], history)


def opened(previous: Any, *, max_turns: int, verify: bool = True) -> Previous:
    """A ``previous`` as a caller sends it — an export or MCP answer (a dict, or its JSON text) holding a
    ``followup`` block, or the block itself — checked and opened, or :class:`FollowupError` (one line).

    ``verify=False`` skips the seal: a recording's earlier turns, shown by a replay and carried by a fork, are
    as trustworthy as the recorded turn itself, which a visitor's file may hold anything in."""
    data = _parsed(previous)
    block = data.get("followup", data) if isinstance(data, dict) else None
    if not isinstance(block, dict) or block.get("format") != FORMAT:
        raise FollowupError("previous must be the JSON this app returned for the earlier turn (its export, or the "
                            "MCP tool's answer): it has no follow-up block.", "missing")
    seal = block.get("seal")
    body = {k: v for k, v in block.items() if k != "seal"}
    trusted = isinstance(seal, str) and hmac.compare_digest(seal, _digest(body))
    if verify and not trusted:
        raise FollowupError("previous was changed, or made by another copy of this app (or before a restart): "
                            "it cannot be continued — ask the question anew.", "changed")
    turns, history = body.get("turns"), body.get("history")
    if not isinstance(turns, list) or not turns or not all(_is_turn(t) for t in turns) \
            or not isinstance(history, dict):
        raise FollowupError("previous has a malformed follow-up block: ask the question anew.")
    if len(turns) >= max_turns:
        raise FollowupError(f"This conversation has reached its {max_turns} turns: start a new question.", "full")
    try:
        opened_history = {str(m): tuple(checked(msgs, limit_chars=MAX_PREVIOUS_CHARS)) for m, msgs in history.items()}
    except ValueError as exc:
        raise FollowupError(f"previous has a malformed follow-up block: {exc}.") from None
    return Previous(tuple(turns), opened_history, trusted)


def _is_turn(turn: Any) -> bool:
    return isinstance(turn, dict) and isinstance(turn.get("question"), str) and isinstance(turn.get("answers"), dict)


def _parsed(previous: Any) -> Any:
    if isinstance(previous, str):
        if len(previous) > MAX_PREVIOUS_CHARS:
            raise FollowupError(f"previous is longer than {MAX_PREVIOUS_CHARS:,} characters.")
        try:
            return strict_json.loads(previous)
        except (ValueError, RecursionError):  # RecursionError: JSON nested past the parser's depth
            raise FollowupError("previous must be JSON: the text this app returned for the earlier turn.",
                                "missing") from None
    return previous


def follow_up(previous: Previous, modes: tuple[str, ...], budget: int) -> tuple[FollowUp, dict[str, tuple]]:
    """The earlier turns each of ``modes`` is given, within ``budget`` tokens (the oldest observations cut to their
    first line), as a :class:`FollowUp` and the request's ``history``. A mode new to the conversation starts
    afresh (its panel says so): it has no earlier turns of its own."""
    history, cuts = {}, {}
    for mode in modes:
        if mode not in previous.history:
            continue
        messages, cut = fit(previous.history[mode], budget)
        history[mode] = tuple(messages)
        if cut:
            cuts[mode] = cut
    return FollowUp(previous, cuts), history


def recorded(block: Any) -> Previous | None:
    """A recording's ``previous`` block (the turns it continued), or None when it has none or a malformed one; its
    ``trusted`` says whether this app sealed it."""
    if block is None:
        return None
    try:
        return opened(block, max_turns=10**6, verify=False)
    except FollowupError:
        return None
