"""What a stand-in model server sends for one request: a :class:`StubReply` and its OpenAI-style SSE chunks.

Shared by the tests' thread server (:mod:`agents.llm.stub_server`), the bench's asyncio server
(:mod:`bench.async_stub`) and the toy model's policy (:mod:`agents.llm.toy_model`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StubReply:
    """What the server sends for one request."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    usage: tuple[int, int] | None = None  # (prompt, completion); None: estimated from lengths
    status: int = 200
    error_body: str = ""
    error_code: str = ""  # the error body's OpenAI-style "code" (llama.cpp, vLLM: "context_length_exceeded")
    headers: dict[str, str] = field(default_factory=dict)
    reject_stop: bool = False  # answer 400 when the request carries `stop`
    disconnect_after: int | None = None  # drop the connection after this many SSE events
    end_after: int | None = None  # end the body cleanly after this many SSE events: no finish_reason, no [DONE]
    finish_reason: str | None = None  # overrides "stop"/"tool_calls", e.g. "length"
    pause_after: int | None = None  # go silent for `pause_s` after this many SSE events, then go on
    pause_s: float = 0.0
    usage_in_stream: bool = True  # False: like llama-cpp-python, no usage chunk even if asked
    hang: bool = False  # accept, then never answer
    first_token_delay: float | None = None  # overrides the server's latency
    token_delay: float | None = None
    model: str | None = None  # the `model` the reply names (None: the one asked for, as most servers echo it)


Responder = Callable[[dict[str, Any]], StubReply]


def sse_events(reply: StubReply, body: dict[str, Any], size: int) -> list[str]:
    """The chunk objects of one streamed reply, in OpenAI's shape (both stubs send these)."""
    model = reply.model or body.get("model") or "stub"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": finish}
        return json.dumps({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0,
                           "model": model, "choices": [choice]})

    text = _apply_stop(reply.text, body.get("stop"))
    events = [chunk({"reasoning": reply.reasoning[i : i + size]}) for i in range(0, len(reply.reasoning), size)]
    events += [chunk({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    for n, (name, args) in enumerate(reply.tool_calls):
        arguments = args if isinstance(args, str) else json.dumps(args)
        call = {"index": n, "id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": ""}}
        events.append(chunk({"tool_calls": [call]}))
        for i in range(0, len(arguments), size):
            part = {"index": n, "id": f"call_{n}", "type": "function",
                    "function": {"arguments": arguments[i : i + size]}}
            events.append(chunk({"tool_calls": [part]}))
    events.append(chunk({}, reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")))
    if reply.usage_in_stream and (body.get("stream_options") or {}).get("include_usage"):
        prompt, completion = reply.usage or (
            sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4,
            max(1, len(reply.text + reply.reasoning) // 4),
        )
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        events.append(json.dumps({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0,
                                  "model": model, "choices": [], "usage": usage}))
    return events


def _apply_stop(text: str, stop: list[str] | str | None) -> str:
    """Cut at the first stop sequence, as real servers do (the client must still cut too)."""
    stops = [stop] if isinstance(stop, str) else (stop or [])
    cuts = [text.find(s) for s in stops if s and s in text]
    return text[: min(cuts)] if cuts else text
