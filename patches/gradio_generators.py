"""Gradio creates a streaming handler's async generator on the event loop, not on its thread pool.

``gradio.blocks.Blocks.call_function`` (6.31) awaits a coroutine function, and hands every other function to
``anyio.to_thread.run_sync``, async-generator functions included. Calling one only creates the generator
object (its body first runs at the first ``__anext__``, which Gradio awaits on the loop anyway), so the hop
does no work: it takes a thread-pool token and two thread switches per run, queued behind the pool's limiter
when a class clicks at once. Here ``gradio.blocks`` sees an ``anyio`` whose ``to_thread.run_sync`` calls an
async-generator function directly; every other call (and every other name) is anyio's own.

Upstream write-up: docs/upstream.md#gradio_generators.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

from patches import Patch

PATCH = Patch("gradio_generators", "gradio", "6.31.0")
CALL = "anyio.to_thread.run_sync("  # how Blocks.call_function starts a function that is not a coroutine function


class _ToThread(types.ModuleType):
    """``anyio.to_thread`` as ``gradio.blocks`` sees it: an async-generator function is called in place."""

    def __init__(self, to_thread: types.ModuleType) -> None:
        super().__init__("anyio.to_thread")
        self._to_thread = to_thread

    def __getattr__(self, name: str) -> Any:
        return getattr(self._to_thread, name)

    async def run_sync(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if inspect.isasyncgenfunction(fn):  # sees through functools.partial; creating the generator runs no code
            return fn(*args)
        return await self._to_thread.run_sync(fn, *args, **kwargs)


class _BlocksAnyio(types.ModuleType):
    """``anyio`` as ``gradio.blocks`` sees it: the same, with :class:`_ToThread` for ``to_thread``."""

    def __init__(self, anyio: types.ModuleType) -> None:
        super().__init__("anyio")
        self._anyio = anyio
        self.to_thread = _ToThread(anyio.to_thread)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._anyio, name)


def problem() -> str | None:
    import gradio.blocks as blocks
    import gradio.utils as utils

    if not isinstance(getattr(blocks, "anyio", None), types.ModuleType):
        return "gradio.blocks does not call anyio by that name any more"
    try:
        source = inspect.getsource(blocks.Blocks.call_function)
    except (OSError, TypeError):
        return "Blocks.call_function's source cannot be read"
    if CALL not in source or "isasyncgenfunction(fn)" not in source:
        return "Blocks.call_function does not start a handler through anyio.to_thread.run_sync any more"

    async def probe() -> Any:  # what Gradio wraps a streaming handler in must still be an async-generator function
        yield None

    if not inspect.isasyncgenfunction(utils.function_wrapper(probe, before_fn=lambda: None)):
        return "gradio.utils.function_wrapper no longer keeps an async generator one"
    return None


def install() -> bool:
    """True when applied (once per process; a second call finds it in place)."""
    import gradio.blocks as blocks

    if isinstance(getattr(blocks, "anyio", None), _BlocksAnyio):
        return True
    if not PATCH.usable(problem()):
        return False
    blocks.anyio = _BlocksAnyio(blocks.anyio)
    return True
