"""Gradio's queue sleeps while it has nothing to do, and a new event wakes it at once.

``gradio.queueing.Queue`` polls for new events every 1 ms and for progress every 10 ms, forever. Here its loop
sleeps up to :data:`EVENT_POLL_S` between looks, but the sleep ends as soon as an event is pushed or a job ends,
so a click still starts at once; progress is polled every :data:`PROGRESS_POLL_S`. ``sleep_when_free`` becomes a
:class:`WakeableDelay` (a float to any other reader) that ``gradio.queueing``'s ``asyncio.sleep`` waits on. A
missed wake-up costs at most one poll, never an event.

Upstream write-up: docs/upstream.md#gradio_queue.
"""

from __future__ import annotations

import asyncio
import functools
import types
from typing import Any

from patches import Patch

PATCH = Patch("gradio_queue", "gradio", "6.31.0")
EVENT_POLL_S = 1.0  # a look now and then; a push or a freed slot wakes the queue at once
PROGRESS_POLL_S = 1.0
WRAPPED = ("push", "process_events")


class WakeableDelay(float):
    """Seconds to sleep, cut short by :meth:`wake` (called in the loop the queue runs in)."""

    _event: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    def wake(self) -> None:
        if self._event is not None:
            self._event.set()

    async def sleep(self) -> None:
        loop = asyncio.get_running_loop()
        if self._event is None or self._loop is not loop:  # the queue's loop (a relaunched app has a new one)
            self._event, self._loop = asyncio.Event(), loop
        try:
            await asyncio.wait_for(self._event.wait(), float(self))
        except TimeoutError:
            pass
        self._event.clear()  # the loop looks at its queue right after: nothing pushed meanwhile is missed


class _QueueAsyncio(types.ModuleType):
    """``asyncio`` as ``gradio.queueing`` sees it: the same, but a sleep of a :class:`WakeableDelay` can be woken."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    @staticmethod
    async def sleep(delay: float, result: Any = None) -> Any:
        if isinstance(delay, WakeableDelay):
            await delay.sleep()
            return result
        return await asyncio.sleep(delay, result)


def problem(blocks: Any) -> str | None:
    import gradio.queueing as queueing

    queue = getattr(blocks, "_queue", None)
    for attribute in ("sleep_when_free", "progress_update_sleep_when_free"):
        if not isinstance(getattr(queue, attribute, None), int | float):
            return f"Blocks._queue.{attribute} is not a number of seconds any more"
    for name in WRAPPED:
        if not asyncio.iscoroutinefunction(getattr(queue, name, None)):
            return f"Blocks._queue.{name} is not a coroutine function any more"
    if not isinstance(getattr(queueing, "asyncio", None), types.ModuleType):
        return "gradio.queueing does not call asyncio by that name any more"
    return None


def _waking(method: Any, delay: WakeableDelay) -> Any:
    @functools.wraps(method)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await method(*args, **kwargs)
        finally:
            delay.wake()

    return wrapper


def install(blocks: Any) -> bool:
    """Call after ``blocks.queue(...)``; True when applied."""
    if not PATCH.usable(problem(blocks)):
        return False
    import gradio.queueing as queueing

    queue = blocks._queue
    delay = WakeableDelay(EVENT_POLL_S)
    if not isinstance(queueing.asyncio, _QueueAsyncio):
        queueing.asyncio = _QueueAsyncio("asyncio")  # one module-wide shim; inert for any other value
    queue.sleep_when_free = delay
    queue.progress_update_sleep_when_free = PROGRESS_POLL_S
    for name in WRAPPED:
        setattr(queue, name, _waking(getattr(queue, name), delay))
    return True
