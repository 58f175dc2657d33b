"""Follow-up questions: each mode continues the conversation it had.

A mode's conversation is what its model saw after the system prompt. :func:`conversation_of` rebuilds it from a
finished trace by running the mode's own loop again over the recorded replies and observations (as a fork does),
so it is byte for byte what the model was sent. :class:`Continuing` puts those earlier turns before the new
question of every request; the modes' loops do not change. The turns are plain chat messages, so they travel in a
:class:`~agents.request.RunRequest`; :func:`fit` keeps them under a token budget.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from agents import prompts
from agents.events import Observation, Retry, Usage
from agents.llm.base import ChatModel, Chunk, LLMFailure, Message
from agents.modes.base import RunConfig
from agents.modes.registry import ModeSpec, get_mode, mode_of
from agents.modes.text_protocol import THIRD_REPEAT
from agents.parsing_code import close_code
from agents.replay import REASONING, RUNNER, ReplayModel, ReplayRunner, answered_action
from agents.trace import Trace
from tools.registry import ToolRegistry

CHARS_PER_TOKEN = 4  # the estimate servers' usage bears out for English text
CUT_MARK = " […cut to its first line to fit the context budget]"
ROLES = ("user", "assistant", "tool")  # what earlier turns may hold: never a system prompt of their own


class Continuing:
    """A model whose every request carries ``earlier`` (a mode's earlier turns) right after the system prompt.

    It also keeps the last request as the mode sent it (``sent``) and that request's streamed text
    (``reply``), so the turn that follows can be built from them."""

    def __init__(self, inner: ChatModel, earlier: Sequence[Message]) -> None:
        self._inner = inner
        self.earlier = [dict(m) for m in earlier]
        self.model_id = getattr(inner, "model_id", "")
        self.sent: list[Message] = []
        self.reply = ""

    def stream(self, messages: list[Message], **kwargs: Any) -> Iterator[Chunk]:
        self.sent, self.reply = list(messages), ""
        lead = 1 if messages and messages[0].get("role") == "system" else 0
        for chunk in self._inner.stream([*messages[:lead], *self.earlier, *messages[lead:]], **kwargs):
            self.reply += chunk.text
            yield chunk

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:  # the inner model's other attributes (``answered``, settings)
        return getattr(self._inner, name)


class _Recorder(Continuing):
    """Replays recorded replies (no earlier turns) and fails a call past them: the rebuild never calls a model."""

    def __init__(self, replies: list[Usage]) -> None:
        super().__init__(ReplayModel(replies, _NoLiveCalls()), ())


class _NoLiveCalls:
    model_id = ""

    def stream(self, messages: list[Message], **kwargs: Any) -> Iterator[Chunk]:
        raise LLMFailure("the recorded run ends here")  # as the model's own failure would: inside the loop's call
        yield  # a generator, so the failure comes where a model's does: when the loop reads the reply

    def close(self) -> None:
        pass


def conversation_of(trace: Trace, registry: ToolRegistry, config: RunConfig) -> list[Message] | None:
    """The messages ``trace``'s mode exchanged after its system prompt, its last reply included; None when the
    mode keeps no conversation of its own (the hybrids, which combine several) or nothing was answered.

    ``registry`` and ``config`` must be the run's (the loop is run again over the recorded replies). A follow-up's
    trace rebuilds its own turn: the turn after it carries the earlier turns and then this one."""
    try:
        spec = get_mode(mode_of(trace.mode))  # a fork's panel (react@2) keeps its mode's conversation
    except ValueError:
        return None
    if spec.id == "codeact":
        return _programs_and_outputs(trace)
    if not spec.forkable:
        return None
    events = [e for _, e in trace.events]
    start = max((i + 1 for i, e in enumerate(events) if isinstance(e, Retry)), default=0)
    replies = [e for e in events[start:] if isinstance(e, Usage) and e.reply is not None]
    if not replies:
        return None
    if REASONING in spec.options:  # Think-only: the question and what it said, no observations
        return [{"role": "user", "content": prompts.question_message(trace.question)},
                {"role": "assistant", "content": replies[-1].reply}]
    return _replayed(spec, trace, events[start:], replies, registry, config)


def _replayed(spec: ModeSpec, trace: Trace, events: list, replies: list[Usage], registry: ToolRegistry,
              config: RunConfig) -> list[Message] | None:
    """A tool loop run again over the recorded replies and observations, its last request kept."""
    kept = [i for i, e in enumerate(events) if isinstance(e, Observation) and not (e.output == THIRD_REPEAT
                                                                                    and e.is_error)]
    runner = ReplayRunner(registry, config, [events[i] for i in kept], [answered_action(events, i) for i in kept])
    model = _Recorder(replies)
    try:
        for _ in spec.run(trace.question, model, registry, config, **{RUNNER: runner}):
            pass
    except Exception:  # noqa: BLE001 - a run that cannot be rebuilt keeps no conversation (the caller says so)
        return None
    if not model.sent:
        return None
    lead = 1 if model.sent[0].get("role") == "system" else 0
    answered = [{"role": "assistant", "content": model.reply}] if model.reply else []  # a failed last call: none
    return [*model.sent[lead:], *answered]


def _programs_and_outputs(trace: Trace) -> list[Message] | None:
    """CodeAct's conversation, read from its trace (its loop is no fork's to run again): the question, then each
    reply with its program closed and what the program printed, as the loop appends them (``agents/modes/codeact``)."""
    events = [e for _, e in trace.events]
    start = max((i + 1 for i, e in enumerate(events) if isinstance(e, Retry)), default=0)
    out: list[Message] = [{"role": "user", "content": prompts.question_message(trace.question)}]
    for event in events[start:]:
        if isinstance(event, Usage) and event.reply is not None:
            out.append({"role": "assistant", "content": close_code(event.reply)})
        elif isinstance(event, Observation) and not event.nested:
            out.append({"role": "user", "content": prompts.observation_message(event.output)})
    return out if len(out) > 1 else None


def tokens(messages: Sequence[Message]) -> int:
    """An estimate of what ``messages`` cost in tokens (their text over :data:`CHARS_PER_TOKEN`)."""
    return sum(len(str(m.get("content") or "")) for m in messages) // CHARS_PER_TOKEN


def fit(messages: Sequence[Message], budget: int) -> tuple[list[Message], int]:
    """``messages`` within ``budget`` tokens: the oldest observations first cut to their first line. Returns the
    messages and how many observations were cut (0: they fit as they were). What still does not fit is left
    to the server, whose context error is one clear line (``agents/llm/http_errors.py``)."""
    out = [dict(m) for m in messages]
    cut = 0
    for m in out:
        if tokens(out) <= budget:
            break
        if _is_observation(m):
            first = str(m["content"]).strip().split("\n", 1)[0]
            if first + CUT_MARK != m["content"] and len(first) + len(CUT_MARK) < len(str(m["content"])):
                m["content"] = first + CUT_MARK
                cut += 1
    return out, cut


def _is_observation(message: Message) -> bool:
    return message.get("role") == "tool" or (message.get("role") == "user"
                                             and str(message.get("content") or "").startswith("Observation"))


def checked(messages: object, limit_chars: int = 200_000) -> list[Message]:
    """Earlier turns from outside (an API call, a file) as messages, or ValueError (one line): a list of
    ``{"role", "content"}`` with the roles of :data:`ROLES` only (a caller cannot slip in a system prompt)."""
    if not isinstance(messages, list):
        raise ValueError("the earlier turns must be a list of messages")
    out: list[Message] = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content", ""), str):
            raise ValueError(f"each earlier message needs a role ({', '.join(ROLES)}) and text content")
        out.append({k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id")})
    if sum(len(m.get("content") or "") for m in out) > limit_chars:
        raise ValueError(f"the earlier turns are longer than {limit_chars:,} characters")
    return out
