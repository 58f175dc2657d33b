"""One trace as the step-aligned map reads it: its mode's *moves*, each with the cost so far (:func:`moves_of`).

A move is an action with its observation (a CodeAct program's tool calls are its actions; a program that calls
none is one ``python`` move), a reasoning step (a mode without tools: Think-only's chain of thought, by line and
sentence), a row of CoT-SC votes (the hybrids' tally), or a Reflexion verdict with its reflection; a Reflexion
trial opens a band. A mode run again after a failure (``Retry``) shows its last attempt. ``agents/alignment.py``
puts the moves of several modes into rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Literal

from agents.events import (
    Action,
    Evaluation,
    Forked,
    Observation,
    Reflection,
    Retry,
    Thought,
    TokenDelta,
    Trial,
    Usage,
)
from agents.grounding import folded, input_line
from agents.modes.codeact import CODE_TOOL
from agents.modes.hybrids import VOTES
from agents.modes.registry import forked_mode, get_mode
from tools import default_registry, registry

if TYPE_CHECKING:
    from agents.trace import Trace

MoveKind = Literal["action", "reasoning", "votes", "verdict"]
MAX_REASONING_STEPS = 12  # Think-only's column: longer reasoning ends in one "…" step
SHORT = 48  # characters of an input or an observation in a cell's line
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"“])")


@dataclass(frozen=True)
class Cost:
    """What a mode had spent when a move ended: tokens (``estimated`` when some were), tool calls, seconds."""

    tokens: int = 0
    estimated: bool = False
    tool_calls: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Move:
    """One thing a mode did, as its cell shows it: ``line`` is the cell's one line.

    ``key`` is what aligns it with another mode's move (an action's tool and folded input; None: a row of its
    own); ``observations`` the indices (among the trace's observations) it shows; ``band`` opens a Reflexion
    trial; ``edited``: a fork's teacher edited this observation, and the fork branches here."""

    kind: MoveKind
    line: str
    key: tuple[str, str] | None = None
    tool: str = ""
    input: str = ""
    observation: str = ""
    is_error: bool = False
    observations: tuple[int, ...] = ()
    band: str = ""
    edited: bool = False
    cost: Cost = Cost()


def verb_of(tool: str) -> str:
    """What a call of ``tool`` does, in a sentence: the tool's declared verb (``tools.registry.tool``)."""
    if tool == CODE_TOOL:
        return "ran a program"
    _declare_app_tools()
    return registry.verb_of(tool)


@cache
def _declare_app_tools() -> None:
    """The app's own tools, declared once (a recording may be read before any run)."""
    default_registry()


def short(text: str, limit: int = SHORT) -> str:
    """``text`` on one line, cut to ``limit`` characters with "…"."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def reasoning_steps(text: str) -> list[str]:
    """A chain of thought as its steps: its lines, long ones cut into sentences; past
    :data:`MAX_REASONING_STEPS` the rest is one last step."""
    steps = [s for line in text.splitlines() for s in _SENTENCE.split(line.strip()) if s.strip(" -*•")]
    if len(steps) > MAX_REASONING_STEPS:
        steps = [*steps[: MAX_REASONING_STEPS - 1], " ".join(steps[MAX_REASONING_STEPS - 1:])]
    return steps


def uses_tools(mode: str) -> bool:
    """Whether ``mode`` (or the mode a fork continues) acts; an unknown id (an old recording) does."""
    base = forked[0] if (forked := forked_mode(mode)) else mode
    try:
        return get_mode(base).uses_tools
    except ValueError:
        return True


class Walk:
    """Reads one trace's events into moves, event by event (``agents.alignment.MapBuilder`` feeds it only the new
    ones)."""

    def __init__(self, trace: Trace) -> None:
        self.trace, self.read = trace, 0  # events read so far
        self.acting = uses_tools(trace.mode)
        self.moves: list[Move] = []
        self.version = 0  # changes whenever a move is added or changed
        self.tokens, self.estimated, self.tool_calls, self.seconds = 0, False, 0, 0.0
        self.observed = 0  # observations so far: a move names its observations by this index
        self.action: Action | None = None  # waiting for its observation
        self.program: Action | None = None  # a CodeAct program running
        self.calls: list[int] = []  # the moves of its tool calls
        self.call: Action | None = None
        self.pairs: list[int] = []  # the move of each Action → Observation pair (a fork's step index)
        self.band = ""
        self.thought_at = 0  # where the last chain of thought's steps begin

    def feed(self) -> None:
        """Read the events the trace gained since the last call."""
        events = self.trace.events
        for t, event in events[self.read:]:
            if not isinstance(event, TokenDelta):
                self.seconds = max(self.seconds, t)
                self.event(event)
        self.read = len(events)

    def add(self, move: Move) -> None:
        band, self.band = self.band, ""
        self.moves.append(replace(move, band=band or move.band,
                                  cost=Cost(self.tokens, self.estimated, self.tool_calls, self.seconds)))
        self.version += 1

    def change(self, at: int, **fields: object) -> None:
        self.moves[at] = replace(self.moves[at], **fields)  # type: ignore[arg-type]
        self.version += 1

    def event(self, event: object) -> None:
        if isinstance(event, Usage):
            self.tokens += event.prompt_tokens + event.completion_tokens
            self.estimated = self.estimated or event.estimated
        elif isinstance(event, Observation):
            self.observe(event)
            self.observed += 1
        elif isinstance(event, Action):
            self.act(event)
        elif isinstance(event, Thought):
            self.thought(event.text)
        elif isinstance(event, Retry):  # the mode starts over: its earlier attempt is not what it did
            self.moves, self.pairs, self.action, self.program = [], [], None, None
            self.version += 1
        elif isinstance(event, Trial):
            self.band = f"Trial {event.n} of {event.of}"
        elif isinstance(event, Evaluation):
            said = f"answer “{short(event.answer, 32)}”" if event.answer else "no answer"
            self.add(Move("verdict", f"{'✓ right' if event.correct else '✗ wrong'} · {said} ({event.label})"))
        elif isinstance(event, Reflection) and self.moves and self.moves[-1].kind == "verdict":
            self.change(-1, line=f"{self.moves[-1].line} · reflection: {short(event.text, 60)}")
        elif isinstance(event, Forked):
            self.forked(event)

    def thought(self, text: str) -> None:
        if text.startswith(VOTES):
            tally = text.split(":", 1)[-1].strip()
            self.add(Move("votes", f"votes: {short(tally, 80)}", ("votes", ""), "CoT-SC", tally))
        elif not self.acting:
            self.thought_at = len(self.moves)
            for step in reasoning_steps(text):
                self.add(Move("reasoning", short(step, 60), input=step))

    def act(self, event: Action) -> None:
        if event.nested:
            self.call = event
        elif event.code:
            self.program, self.calls, self.action = event, [], None
        else:
            self.action, self.program = event, None

    def observe(self, event: Observation) -> None:
        if event.nested:
            if self.call is not None:
                self.tool_calls += 1
                self.calls.append(len(self.moves))
                self.add(_act(self.call.tool, self.call.input, event, (self.observed,)))
            self.call = None
        elif self.program is not None:
            if self.calls:  # what the program printed is shown with its last call
                self.change(self.calls[-1], observations=(*self.moves[self.calls[-1]].observations, self.observed))
            else:
                self.add(_act(CODE_TOOL, self.program.input, event, (self.observed,)))
            self.program = None
        elif self.action is not None:
            self.tool_calls += 1
            self.pairs.append(len(self.moves))
            self.add(_act(self.action.tool, self.action.input, event, (self.observed,)))
            self.action = None

    def forked(self, event: Forked) -> None:
        """The fork's edit: the move of the observation it changed (Think-only: its reasoning) is where it
        branches."""
        at = self.pairs[event.step] if event.step < len(self.pairs) else (
            self.thought_at if not self.acting and self.moves else None)
        if at is not None and at < len(self.moves):
            self.change(at, edited=True)


def _act(tool: str, value: str | dict, observation: Observation, indices: tuple[int, ...]) -> Move:
    text = input_line(value)
    shown = observation.output.strip().splitlines()[0] if observation.output.strip() else "(nothing)"
    line = f"{tool}({short(text, SHORT)}) → {'✗ ' if observation.is_error else ''}{short(shown, SHORT)}"
    return Move("action", line, (tool, folded(text)), tool, text, observation.output, observation.is_error, indices)


def moves_of(trace: Trace) -> list[Move]:
    """The moves of ``trace``'s mode, in order (of its last attempt, when it was run again after a failure)."""
    walk = Walk(trace)
    walk.feed()
    return walk.moves
