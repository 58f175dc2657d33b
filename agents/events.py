"""The typed event stream: everything a mode does, as small frozen dataclasses.

Modes yield these; the trace collects them; the UI, the CLI and the export only render
them. One type per kind, each with a ``kind`` tag so a trace serialises to JSON and back
without guessing. The parser returns three of them (``Action``, ``FinalAnswer``,
``ParseError``) directly, so a parsed step *is* the event the panel shows.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

Channel = Literal["thought", "answer", "reasoning"]
ToolInput = str | dict


@dataclass(frozen=True)
class TokenDelta:
    """A streamed piece of model text, tagged with what it is becoming."""

    text: str
    channel: Channel = "thought"
    kind: ClassVar[str] = "token"


@dataclass(frozen=True)
class Thought:
    """A complete thought (ReAct reasoning, or a whole chain of thought in Think mode); ``sample``: the line that
    reports CoT-SC's ``sample``-th chain of thought (each one a step, as Think-only's one chain is)."""

    text: str
    sample: int = 0
    kind: ClassVar[str] = "thought"
    optional: ClassVar[tuple[str, ...]] = ("sample",)


@dataclass(frozen=True)
class Action:
    """A tool call chosen by the model; ``thought`` is the text that preceded it, if any.

    CodeAct adds two flags, both off elsewhere (and left out of an export when off): ``code``, the
    action is a program (``input``) run in the sandbox, whose Observation is what it printed; ``nested``,
    a tool call made *by* that program while it ran, shown under it (its Observation is nested too).
    """

    tool: str
    input: ToolInput
    thought: str = ""
    code: bool = False
    nested: bool = False
    kind: ClassVar[str] = "action"
    optional: ClassVar[tuple[str, ...]] = ("code", "nested")


@dataclass(frozen=True)
class Observation:
    """What a tool returned (or why it could not), as the model will read it."""

    tool: str
    output: str
    is_error: bool = False
    elapsed_s: float = 0.0
    cached: bool = False
    nested: bool = False  # the result of a call a CodeAct program made (see Action)
    kind: ClassVar[str] = "observation"
    optional: ClassVar[tuple[str, ...]] = ("nested",)


@dataclass(frozen=True)
class FinalAnswer:
    """The run's answer; ``forced`` when the budget ran out or loops forced it (``why``: what forced it, when it was
    not the step budget)."""

    text: str
    forced: bool = False
    why: str = ""
    kind: ClassVar[str] = "answer"
    optional: ClassVar[tuple[str, ...]] = ("why",)


@dataclass(frozen=True)
class ParseError:
    """Model output that fit no known format; ``message`` is sent back to the model."""

    message: str
    text: str = ""
    kind: ClassVar[str] = "parse_error"


@dataclass(frozen=True)
class LLMError:
    """A failed model call, as one human line (never a traceback).

    ``reason`` is machine-readable, for code that reacts to it (see ``LLMFailure.reason``):
    "interrupted" makes a comparison run the mode again once the others are done.
    """

    message: str
    reason: str = ""
    kind: ClassVar[str] = "llm_error"


QUEUE, TURN, BACKOFF, SANDBOX = "queue", "turn", "backoff", "sandbox"  # what a mode waits for (Waiting.cause)


@dataclass(frozen=True)
class Waiting:
    """The mode waits for the model server (or its sandbox), and ``message`` says what for; until the matching
    :class:`Waited` the time is not the mode's own (``Trace.waiting_s``).

    ``cause`` is one of four: "queue" (queued at the app's own gate, ``LLM_MAX_CONCURRENT``), "turn" (a server
    that serves one request at a time serves another first), "backoff" (a pause of ``seconds`` before a retry) or
    "sandbox" (CodeAct's program waits for the sandboxes' memory, ``APP_SANDBOX_MB``: the server is not involved).
    A reply under way when a wait begins is asked for again afterwards: what it streamed is not its reply.
    ``learned``: the wait begins because the server was just found to serve one request at a time (it closed
    this reply when another of ours arrived); from now on the app sends it one request at a time. ``rerun``: the
    mode's attempt ended (``reason`` says why, as an ``LLMError``'s would) and it runs again once the other modes
    have finished — or, if it cannot, ends with that error."""

    message: str = "waiting for the model server"
    cause: str = QUEUE
    seconds: float | None = None
    learned: bool = False
    rerun: bool = False
    reason: str = ""
    kind: ClassVar[str] = "waiting"
    optional: ClassVar[tuple[str, ...]] = ("seconds", "learned", "rerun", "reason")


@dataclass(frozen=True)
class Waited:
    """The wait the last :class:`Waiting` announced is over, after ``seconds``: left out of the mode's own time."""

    seconds: float
    cause: str = QUEUE
    kind: ClassVar[str] = "waited"


@dataclass(frozen=True)
class Retry:
    """The mode starts over after a failure it can recover from; earlier errors no longer describe the run."""

    message: str
    kind: ClassVar[str] = "retry"


@dataclass(frozen=True)
class Usage:
    """One finished LLM call: token counts and wall time.

    ``estimated`` is set when the server reported no usage and the counts were
    approximated from text length, so metrics never pass off a guess as a measurement
    (also for a call that ended early: cut off, timed out or stopped).

    ``reply`` and ``tool_calls`` keep the reply exactly as the loop sends it back to the model
    (text cut at any hallucinated Observation; native calls as ``(id, name, arguments)``), so a
    fork can rebuild the conversation byte for byte. None: the call failed (nothing was sent
    back) or the trace predates forking.

    ``model`` is the model that answered, as the server named it in its reply (None: it did not say, or
    the trace predates it); written to JSON only when set.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    elapsed_s: float = 0.0
    estimated: bool = False
    reply: str | None = None
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    model: str | None = None
    kind: ClassVar[str] = "usage"
    optional: ClassVar[tuple[str, ...]] = ("model",)

    def __post_init__(self) -> None:
        # JSON turns the tuples into lists; keep the event hashable and from_dict(to_dict()) equal.
        if self.reply is not None and not isinstance(self.reply, str):
            object.__setattr__(self, "reply", str(self.reply))
        if self.model is not None and not isinstance(self.model, str):
            object.__setattr__(self, "model", None)  # a file's odd value names no model
        calls = self.tool_calls if isinstance(self.tool_calls, list | tuple) else ()
        object.__setattr__(self, "tool_calls",
                           tuple(tuple(str(x) for x in c) for c in calls if isinstance(c, list | tuple)))


@dataclass(frozen=True)
class Truncated:
    """The server ended the last reply at the token limit (``finish_reason="length"``): whole, but cut short."""

    message: str = "the reply hit the token limit"
    kind: ClassVar[str] = "truncated"


@dataclass(frozen=True)
class Paused:
    """A stepping run waits after its ``step``-th model reply (and its observations) until told to go on.

    Nothing is in flight while it waits: the reply is complete and the next call has not started.
    """

    step: int
    kind: ClassVar[str] = "paused"


@dataclass(frozen=True)
class Resumed:
    """A paused mode goes on; ``waited_s`` is left out of the trace's times (metrics count what ran)."""

    waited_s: float = 0.0
    kind: ClassVar[str] = "resumed"


@dataclass(frozen=True)
class Forked:
    """The run continues from a teacher's edit: observation ``step`` (0-based, as in ``Trace.steps``)
    said ``original`` and now says ``edited`` (for Think-only, step 0 is its reasoning)."""

    step: int
    original: str
    edited: str
    kind: ClassVar[str] = "forked"


@dataclass(frozen=True)
class Trial:
    """Reflexion starts attempt ``n`` of at most ``of``; the reflections of the failed ones are in its prompt."""

    n: int
    of: int
    kind: ClassVar[str] = "trial"


GRADED, SELF_CHECK = "expected", "self"  # who decided an Evaluation: the expected answer, or the model itself


@dataclass(frozen=True)
class Evaluation:
    """Reflexion's evaluator on one trial's ``answer`` (None: the trial gave none): right or not, ``by`` whom.

    ``by`` is "expected" (graded against the expected answer by exact match, as in the paper) or
    "self" (the model's own judgement of its answer, when no expected answer was given); ``reason``
    is one line for people (it never holds the expected answer, which the model must not see).
    """

    correct: bool
    by: str
    reason: str = ""
    answer: str | None = None
    kind: ClassVar[str] = "evaluation"

    @property
    def label(self) -> str:
        """Who judged, in words a panel shows beside the ✓ / ✗."""
        return "graded against the expected answer" if self.by == GRADED else "the model's own judgement"


@dataclass(frozen=True)
class Reflection:
    """Reflexion's self-reflection on a failed trial (what went wrong, what to do differently), kept for the next."""

    text: str
    kind: ClassVar[str] = "reflection"


Event = (TokenDelta | Thought | Action | Observation | FinalAnswer | ParseError | LLMError | Usage | Truncated
         | Waiting | Waited | Retry | Paused | Resumed | Forked | Trial | Evaluation | Reflection)

EVENT_TYPES: dict[str, type] = {
    cls.kind: cls
    for cls in (TokenDelta, Thought, Action, Observation, FinalAnswer, ParseError, LLMError, Usage, Truncated,
                Waiting, Waited, Retry, Paused, Resumed, Forked, Trial, Evaluation, Reflection)
}


_FIELD_NAMES: dict[type, tuple[tuple[str, bool], ...]] = {}


def _fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """``(name, optional)`` per field; an optional field is one a class lists in ``optional`` (default off:
    False for a flag, None for a value)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        optional = getattr(cls, "optional", ())
        names = _FIELD_NAMES[cls] = tuple((f.name, f.name in optional) for f in dataclasses.fields(cls))
    return names


def _optional_value(cls: type, name: str, value: Any) -> Any:
    """An optional field read from a file: a flag counts only when ``true``; a value is kept as it is."""
    default = next(f.default for f in dataclasses.fields(cls) if f.name == name)
    return value is True if isinstance(default, bool) else value


def event_to_dict(event: Event) -> dict[str, Any]:
    """Serialise an event as ``{"kind": ..., **fields}`` (JSON-safe).

    What ``dataclasses.asdict`` gives for these flat events (containers copied), at a seventh of its
    cost: a run's export serialises thousands of token events, on a server shared by every visitor.
    Optional fields (``Action.code``/``nested``, ``Usage.model``) are written only when set, so other runs'
    exports keep their shape; :func:`event_from_dict` gives a missing one its default."""
    out: dict[str, Any] = {"kind": event.kind}
    for name, optional in _fields(type(event)):
        value = getattr(event, name)
        if optional and not value:
            continue
        out[name] = copy.deepcopy(value) if isinstance(value, dict | list | tuple) else value
    return out


def event_from_dict(data: dict[str, Any]) -> Event:
    """Inverse of :func:`event_to_dict`; unknown keys are ignored, unknown kinds raise ValueError.

    An optional flag counts only when it is ``true`` (a file's ``"nested": "no"`` is not a nesting)."""
    cls = EVENT_TYPES.get(data.get("kind", ""))
    if cls is None:
        raise ValueError(f"unknown event kind: {data.get('kind')!r}")
    fields = dict(_fields(cls))
    return cls(**{k: (_optional_value(cls, k, v) if fields[k] else v) for k, v in data.items() if k in fields})
