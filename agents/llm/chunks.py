"""One streamed ``ChatCompletionStreamOutput`` as the engine reads it (:func:`to_chunk`): text, reasoning, tool-call
deltas, the finish reason and the token counts a server reported, each checked, since a server's reply is as
untrusted as its listing: a count that is not a whole number up to :data:`MAX_REPORTED_TOKENS` is not believed
(the tokens are then estimated), so none such as ``1e400`` reaches a sum, a cost or an export."""

from __future__ import annotations

import logging
from typing import Any

from agents.llm.base import Chunk, ToolCallDelta

log = logging.getLogger(__name__)

MAX_REPORTED_TOKENS = 10**9  # tokens one call may report; a larger count is not believed (then estimated)


def to_chunk(out: Any) -> Chunk | None:
    """One ``ChatCompletionStreamOutput`` → :class:`Chunk` (reasoning from ``reasoning`` or ``reasoning_content``)."""
    usage = getattr(out, "usage", None)
    choices = getattr(out, "choices", None) or []
    text = reasoning = ""
    calls: tuple[ToolCallDelta, ...] = ()
    if choices:
        delta = choices[0].delta
        text = delta.content or ""
        reasoning = getattr(delta, "reasoning", None) or _extra(delta, "reasoning_content") or ""
        calls = tuple(
            ToolCallDelta(
                index=getattr(tc, "index", 0) or 0,
                id=getattr(tc, "id", None) or None,
                name=getattr(tc.function, "name", None) or None,
                arguments=getattr(tc.function, "arguments", None) or "",
            )
            for tc in (delta.tool_calls or [])
        )
    finish = (getattr(choices[0], "finish_reason", None) or None) if choices else None
    prompt = _count(getattr(usage, "prompt_tokens", None)) if usage else None
    completion = _count(getattr(usage, "completion_tokens", None)) if usage else None
    if not (text or reasoning or calls or usage or finish):
        return None
    return Chunk(text=text, reasoning=reasoning, tool_calls=calls, prompt_tokens=prompt, completion_tokens=completion,
                 finish_reason=finish)


def _count(value: Any) -> int | None:
    """A token count a server reported, when it is a whole number from 0 to :data:`MAX_REPORTED_TOKENS`; else none
    (the tokens are then estimated), so a count such as ``1e400`` never reaches a sum, a cost or an export."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_REPORTED_TOKENS \
        else None


def _extra(obj: Any, key: str) -> Any:
    """Fields the generated types do not declare are kept in the object's dict form."""
    try:
        return obj.get(key) if hasattr(obj, "get") else getattr(obj, key, None)
    except Exception:  # a malformed chunk field reads as absent
        log.warning("could not read %r from a streamed chunk", key, exc_info=True)
        return None
