"""The parent's side of the CodeAct sandbox's tool channel: frames in, checked calls out.

A frame is a 4-byte big-endian length, then that many bytes of JSON. The child is untrusted (it runs model-written
code), so everything it sends is checked here before the parent acts on it: a frame over the cap, bytes that are
not JSON, an unknown ``op`` or a field of the wrong type is a :class:`ProtocolError` and the session stops the
process; a well-formed call is refused with a reason when its tool is not one of the run's enabled tools, its
arguments nest too deeply, or the step has made too many calls. Only what passes reaches
:meth:`tools.registry.ToolRegistry.call`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

HEADER = 4
MAX_NAME_CHARS = 64
MAX_ARG_DEPTH = 8
STATUSES = ("ok", "error", "memory")  # what a child may report for a step it finished itself


class ProtocolError(Exception):
    """The child sent something that is not a frame of this protocol; the message says what."""


def encode(obj: dict[str, Any]) -> bytes:
    """One frame: the length, then ASCII JSON (lone surrogates escaped, so any text survives)."""
    data = json.dumps(obj, allow_nan=False).encode("ascii")
    return len(data).to_bytes(HEADER, "big") + data


class FrameReader:
    """Bytes from the child's channel → frames (dicts), with a cap on each frame's size."""

    def __init__(self, max_frame: int) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()
        self._frames: list[dict[str, Any]] = []

    def feed(self, data: bytes) -> None:
        """Take in bytes; raise :class:`ProtocolError` at the first bad frame."""
        self._buf += data
        while len(self._buf) >= HEADER:
            size = int.from_bytes(self._buf[:HEADER], "big")
            if size > self.max_frame:
                raise ProtocolError(f"a frame of {size:,} bytes (the limit is {self.max_frame:,})")
            if len(self._buf) < HEADER + size:
                return
            body = bytes(self._buf[HEADER : HEADER + size])
            del self._buf[: HEADER + size]
            self._frames.append(_decode(body))

    @property
    def ready(self) -> bool:
        """A whole frame waits to be taken."""
        return bool(self._frames)

    @property
    def pending(self) -> bool:
        """Bytes or frames received and not yet taken."""
        return bool(self._buf or self._frames)

    def next(self) -> dict[str, Any] | None:
        return self._frames.pop(0) if self._frames else None


def _decode(body: bytes) -> dict[str, Any]:
    try:
        frame = json.loads(body)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(f"a frame that is not JSON ({type(exc).__name__})") from None
    if not isinstance(frame, dict) or frame.get("op") not in ("ready", "call", "done"):
        raise ProtocolError("a frame that is not a call, a result or a greeting")
    return frame


def clean(text: str) -> str:
    """Text from the child without lone surrogates (they would break the export and the HTTP stream)."""
    return text.encode("utf-8", "replace").decode("utf-8")


@dataclass(frozen=True)
class Call:
    """A well-formed call frame: the tool name and arguments as sent, and a refusal when it may not run."""

    tool: str
    args: dict[str, Any]
    refusal: str | None = None


def check_call(frame: dict[str, Any], enabled: list[str], index: int, max_calls: int) -> Call:
    """Read a ``call`` frame; a malformed one is a :class:`ProtocolError`, a disallowed one a refused :class:`Call`."""
    name, args = frame.get("tool"), frame.get("args")
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS:
        raise ProtocolError("a call without a tool name")
    if not isinstance(args, dict):
        raise ProtocolError("a call whose arguments are not an object")
    name = clean(name)
    if _depth(args) > MAX_ARG_DEPTH:  # checked first: cleaning walks the arguments recursively
        return Call(name, {}, f"{name}: the arguments nest more than {MAX_ARG_DEPTH} levels deep.")
    args = _clean_args(args)
    if name not in enabled:
        shown = ", ".join(enabled) or "none"
        return Call(name, args, f"'{name}' is not a tool enabled in this run (enabled: {shown}).")
    if index > max_calls:
        return Call(name, args, f"{name}: too many tool calls in one step (the limit is {max_calls}); "
                                "print what you have and go on in the next step.")
    return Call(name, args)


def check_done(frame: dict[str, Any], step: int, max_text: int) -> tuple[str, str, str | None]:
    """Read a ``done`` frame of step ``step`` → (status, error text, final answer or None)."""
    status, error, final = frame.get("status"), frame.get("error", ""), frame.get("final")
    if frame.get("step") != step:
        raise ProtocolError("a result for another step")
    if status not in STATUSES or not isinstance(error, str) or not (final is None or isinstance(final, str)):
        raise ProtocolError("a result with fields of the wrong type")
    if len(error) > max_text or (final is not None and len(final) > max_text):
        raise ProtocolError("a result longer than the child ever writes")
    return status, clean(error), None if final is None else clean(final)


def _clean_args(value: Any) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(str(k)): _clean_args(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_args(v) for v in value]
    return value


def _depth(value: Any) -> int:
    """How deep lists and objects nest in ``value`` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest
