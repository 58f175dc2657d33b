"""A scripted model with the real interface, for testing loops without a network.

Like openai-agents' ``ScriptedModel`` and pydantic-ai's ``FunctionModel``: it replays the
replies it was given, records every request, and fails loudly when the code under test
makes a call nobody scripted or leaves a scripted reply unused, so a test cannot pass by
accident.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agents.llm.base import Chunk, LLMFailure, Message, ToolCallDelta


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted reply. ``tool_calls`` are ``(name, arguments)`` with arguments a dict or JSON text."""

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[tuple[str, Any], ...] = ()
    prompt_tokens: int | None = 10
    completion_tokens: int | None = None  # None: counted as whitespace-separated words of text
    finish_reason: str = "stop"  # "length": the server's token limit cut it short
    fail: LLMFailure | None = None  # raised after streaming text and tool calls: a reply cut off midway


@dataclass(frozen=True)
class Request:
    """A recorded call, as the model received it."""

    messages: list[Message]
    stop: list[str] | None
    max_tokens: int | None
    temperature: float | None
    tools: list[dict[str, Any]] | None


ScriptEntry = str | ScriptedReply | LLMFailure | Callable[[Request], str | ScriptedReply]


class ScriptMismatch(AssertionError):
    """The code under test called the model more (or fewer) times than scripted."""


@dataclass
class ScriptedModel:
    """Replays ``steps`` in order: a string or :class:`ScriptedReply` is streamed back, an
    :class:`LLMFailure` is raised, a callable gets the :class:`Request` and returns the reply
    (so a test can assert on what was sent).

    ``honour_stop`` mimics a server that applies ``stop``; off by default, because many
    servers ignore it and the loops must cut client-side anyway.
    """

    steps: list[ScriptEntry]
    model_id: str = "scripted"
    chunk_size: int = 7
    honour_stop: bool = False
    requests: list[Request] = field(default_factory=list)
    closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def stream(
        self,
        messages: list[Message],
        *,
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Iterator[Chunk]:
        request = Request(copy.deepcopy(messages), stop, max_tokens, temperature, copy.deepcopy(tools))
        with self._lock:
            self.requests.append(request)
            index = len(self.requests) - 1
        if index >= len(self.steps):
            raise ScriptMismatch(
                f"unexpected model call #{index + 1}: only {len(self.steps)} scripted; "
                f"last message: {messages[-1].get('content')!r:.200}"
            )
        return self._play(self.steps[index], request)

    def _play(self, step: ScriptEntry, request: Request) -> Iterator[Chunk]:
        if callable(step) and not isinstance(step, (str, ScriptedReply)):
            step = step(request)
        if isinstance(step, LLMFailure):
            raise step
        reply = ScriptedReply(text=step) if isinstance(step, str) else step
        text = reply.text
        if self.honour_stop and request.stop:
            cuts = [text.find(s) for s in request.stop if s in text]
            text = text[: min(cuts)] if cuts else text
        if reply.reasoning:
            yield Chunk(reasoning=reply.reasoning)
        for i in range(0, len(text), self.chunk_size):
            yield Chunk(text=text[i : i + self.chunk_size])
        for i, (name, args) in enumerate(reply.tool_calls):
            arguments = args if isinstance(args, str) else json.dumps(args)
            yield Chunk(tool_calls=(ToolCallDelta(index=i, id=f"call_{i}", name=name, arguments=""),))
            yield Chunk(tool_calls=(ToolCallDelta(index=i, arguments=arguments),))
        if reply.fail is not None:
            raise reply.fail
        yield Chunk(finish_reason=reply.finish_reason)
        completion = reply.completion_tokens if reply.completion_tokens is not None else len(text.split())
        yield Chunk(prompt_tokens=reply.prompt_tokens, completion_tokens=completion)

    def close(self) -> None:
        self.closed = True

    @property
    def unused(self) -> int:
        return len(self.steps) - len(self.requests)

    def assert_done(self) -> None:
        """Fail unless every scripted reply was consumed."""
        if self.unused > 0:
            raise ScriptMismatch(f"{self.unused} scripted repl{'y' if self.unused == 1 else 'ies'} never requested")
