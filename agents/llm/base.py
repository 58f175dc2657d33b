"""The model interface the modes depend on, and the chunks it streams.

One streaming method is the whole contract, so the real Hugging Face client and the
scripted test double are interchangeable: a loop tested against ``ScriptedModel`` runs
unchanged against ``HFInferenceModel``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agents.events import Waited, Waiting

if TYPE_CHECKING:
    from agents.llm.settings import LLMSettings

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of a native tool call; ``arguments`` arrive as JSON-string fragments to join by ``index``."""

    index: int = 0
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True)
class Chunk:
    """One streamed piece of a reply: visible text, hidden reasoning, tool-call fragments or usage.

    ``finish_reason`` is the server's word that the reply is whole ("stop", "tool_calls") or was
    cut at ``max_tokens`` ("length"); a stream that ends without it was cut off and the model
    client raises instead of ending normally. ``news`` is a chunk carrying nothing but an event of the
    client's own for the mode to pass on: a :class:`~agents.events.Waiting` (the call waits for the
    server: its gate, its turn, a back-off) or the :class:`~agents.events.Waited` that ends it.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallDelta, ...] = ()
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    news: Waiting | Waited | None = None

    @property
    def has_usage(self) -> bool:
        return self.prompt_tokens is not None or self.completion_tokens is not None

    @property
    def waiting(self) -> bool:
        """The call waits (its tokens, if any came, were not its reply: it is asked for again)."""
        return isinstance(self.news, Waiting)


class LLMFailure(Exception):
    """A model call that failed for good; ``str(exc)`` is the one human line shown to the user.

    ``reason`` says what kind of failure it was, for code that reacts to it: "" (any), "incomplete"
    (the server ended the reply without saying it was done), "interrupted" (the same, while
    another of our requests was open to that server: it probably serves one request at a time),
    "busy" (no first token within ``LLM_TIMEOUT`` while others of ours were open: probably queued
    behind them), "timeout", "stopped", "context" (the request is longer than the model's context window).
    ``tokens`` estimates what was streamed before the failure, so the call's usage is still counted.
    """

    def __init__(self, message: str, *, reason: str = "", tokens: int = 0) -> None:
        super().__init__(message)
        self.reason, self.tokens = reason, tokens


@runtime_checkable
class ChatModel(Protocol):
    """What a mode needs from a model: a streaming chat call and a way to let go of it."""

    model_id: str

    def stream(
        self,
        messages: list[Message],
        *,
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Iterator[Chunk]:
        """Stream one reply. Raises :class:`LLMFailure` (only) when the call fails."""
        ...

    def close(self) -> None:
        """Release the connection; an in-flight ``stream`` ends promptly. Safe to call twice, from any thread."""
        ...


@dataclass
class ToolCall:
    """A complete native tool call, assembled from :class:`ToolCallDelta` fragments."""

    id: str
    name: str
    arguments: str


def assemble_tool_calls(deltas: list[ToolCallDelta]) -> list[ToolCall]:
    """Join streamed tool-call fragments by index, in the order the calls started."""
    calls: dict[int, ToolCall] = {}
    for d in deltas:
        call = calls.setdefault(d.index, ToolCall(id=d.id or f"call_{d.index}", name="", arguments=""))
        if d.id:
            call.id = d.id
        if d.name and not call.name:  # sent whole in the first fragment; some servers repeat it
            call.name = d.name
        call.arguments += d.arguments
    return list(calls.values())


# The two ways code asks for models, one name each. The engine takes a ModelFactory and calls it once
# per mode (a fresh client per run: closing one never ends another visitor's stream). The app takes a
# ModelBuilder, because each run's settings differ (a visitor's token, a chosen model).
ModelFactory = Callable[[], ChatModel]
ModelBuilder = Callable[["LLMSettings"], ChatModel]
