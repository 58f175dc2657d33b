"""The model interface the modes depend on, and the chunks it streams.

One streaming method is the whole contract, so the real Hugging Face client and the
scripted test double are interchangeable: a loop tested against ``ScriptedModel`` runs
unchanged against ``HFInferenceModel``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

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
    """One streamed piece of a reply: visible text, hidden reasoning, tool-call fragments or usage."""

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallDelta, ...] = ()
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def has_usage(self) -> bool:
        return self.prompt_tokens is not None or self.completion_tokens is not None


class LLMFailure(Exception):
    """A model call that failed for good; ``str(exc)`` is the one human line shown to the user."""


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
