"""What a saved run must hold to be replayed: the types, sizes and nesting of everything replay reads, checked before
any of it is shown (a bad value fails here, not mid-replay), and the one error a recording raises.
"""

from __future__ import annotations

import math
from typing import Any

from agents.events import EVENT_TYPES
from agents.evidence import EvidenceError, read_block

MAX_EVENTS = 500_000  # a 20 MB file holds at most ~550,000 of the smallest events
MAX_STEPS = 10_000  # events other than tokens: each one is a message in a panel
MAX_DEPTH = 32  # nesting inside a tool input or the settings block
_STR = frozenset({"text", "tool", "thought", "output", "message", "reason", "by"})
_BOOL = frozenset({"is_error", "cached", "forced", "estimated", "code", "nested", "correct"})
_NUM = frozenset({"elapsed_s", "prompt_tokens", "completion_tokens", "n", "of"})
_CHANNELS = ("thought", "answer", "reasoning")


class RecordingError(ValueError):
    """The file cannot be replayed; ``str(exc)`` is shown to the user."""


def check(data: dict[str, Any]) -> None:
    """Types, sizes and nesting of everything replay reads (a bad value must fail here, not mid-replay)."""
    for key in ("question", "selection"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise RecordingError(f"The recording's {key!r} must be text.")
    settings = data.get("settings")
    if settings is not None and not (isinstance(settings, dict) and _shallow(settings)):
        raise RecordingError("The recording's settings must be a small block of named values.")
    traces = data["traces"]
    items = (list(traces.items()) if isinstance(traces, dict) else list(enumerate(traces)) if isinstance(traces, list)
             else None)
    if items is None:
        raise RecordingError("The recording's traces must be a list or an object.")
    total = steps = 0
    for key, trace in items:
        if not isinstance(trace, dict) or not isinstance(trace.get("events", []), list):
            raise RecordingError(f"Trace {key} is not a trace exported from this app.")
        for name in ("mode", "question"):
            if trace.get(name) is not None and not isinstance(trace[name], str):
                raise RecordingError(f"Trace {key}: {name!r} must be text.")
        if trace.get("elapsed_s") is not None and not _number(trace["elapsed_s"]):
            raise RecordingError(f"Trace {key}: 'elapsed_s' must be a number of seconds.")
        events = trace.get("events", [])
        total += len(events)
        if total > MAX_EVENTS:
            raise RecordingError(f"That recording has more than {MAX_EVENTS:,} events; replay plays at most that many.")
        for number, event in enumerate(events, 1):
            _check_event(event, f"The traces in that file could not be read: trace {key}, event {number}")
            steps += event["kind"] != "token"
    if steps > MAX_STEPS:
        raise RecordingError(f"That recording has {steps:,} steps; replay shows at most {MAX_STEPS:,}.")
    _check_evidence(data.get("evidence"), {str(k) for k, _ in items})


def _check_evidence(block: Any, panels: set[str]) -> None:
    """The ``evidence`` block: each rerun's panel id → a test of a panel of this recording (agents/evidence.py)."""
    if block is None:
        return
    if not isinstance(block, dict) or not _shallow(block, 4):
        raise RecordingError("The recording's evidence tests must be an object of panels.")
    for panel, test in block.items():
        try:
            source, _, _ = read_block(test)
        except EvidenceError as exc:
            raise RecordingError(f"The recording's evidence test of {str(panel)[:40]!r} is not one: {exc}.") from None
        if panel not in panels or source not in panels:
            raise RecordingError(f"The recording's evidence test of {str(panel)[:40]!r} names a panel it lacks.")


def _check_event(event: Any, where: str) -> None:
    if not isinstance(event, dict) or event.get("kind") not in EVENT_TYPES:
        kind = event.get("kind") if isinstance(event, dict) else None
        raise RecordingError(f"{where}: unknown event kind {str(kind)[:40]!r}.")
    if not _number(event.get("t", 0.0)):
        raise RecordingError(f"{where}: its time 't' must be a number of seconds.")
    for name, value in event.items():
        ok = (isinstance(value, str) if name in _STR else isinstance(value, bool) if name in _BOOL
              else _number(value) if name in _NUM else value in _CHANNELS if name == "channel"
              else isinstance(value, str) or (isinstance(value, dict) and _shallow(value)) if name == "input"
              else value is None or isinstance(value, str) if name == "answer"
              else True)
        if not ok:
            raise RecordingError(f"{where}: {name!r} has the wrong type or is nested too deeply.")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _shallow(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests at most ``limit`` levels (checked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True
