"""Each event handler's signature, worked out once instead of on every event.

Gradio reads a handler's ``inspect.signature`` several times per event (its special arguments, component
props, keyword inputs), and FastAPI reads a dependency's on every request it is overridden for: ~50 µs each on
the 2-core machine, on the event loop, for an answer that never changes. A function's ``__signature__`` is
Python's own way to give ``inspect.signature`` the answer; it is set to what inspect computed, so nothing that
reads it sees a difference.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any


def pin(fn: Callable[..., Any] | None) -> None:
    """Store ``fn``'s signature on it (on the function of a bound method); a callable inspect cannot read, or
    one that takes no attributes, is left as it is."""
    target = getattr(fn, "__func__", fn)
    if target is None or "__signature__" in getattr(target, "__dict__", {}):
        return
    try:
        target.__signature__ = inspect.signature(target)
    except (TypeError, ValueError, AttributeError):
        pass


def pin_handlers(fns: Iterable[Any]) -> int:
    """Pin the function of every event of a Blocks (its ``fns`` values); the number pinned."""
    pinned = 0
    for block_fn in fns:
        fn = getattr(block_fn, "fn", None)
        pin(fn)
        pinned += "__signature__" in getattr(getattr(fn, "__func__", fn), "__dict__", {})
    return pinned
