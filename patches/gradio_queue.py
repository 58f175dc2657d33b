"""Gradio's queue wakes up less often when it has nothing to do.

``gradio.queueing.Queue`` (6.31) polls for new events every 1 ms (``sleep_when_free``) and for progress
updates every 10 ms (``progress_update_sleep_when_free``), forever, whether or not anyone is there. Here new
events are picked up within :data:`EVENT_POLL_S` and progress every :data:`PROGRESS_POLL_S` (this app sends
no ``gr.Progress`` updates).
"""

from __future__ import annotations

from typing import Any

from patches import Patch

PATCH = Patch("gradio_queue", "gradio", "6.31.0")
EVENT_POLL_S = 0.01
PROGRESS_POLL_S = 0.25


def problem(blocks: Any) -> str | None:
    queue = getattr(blocks, "_queue", None)
    for attribute in ("sleep_when_free", "progress_update_sleep_when_free"):
        if not isinstance(getattr(queue, attribute, None), int | float):
            return f"Blocks._queue.{attribute} is not a number of seconds any more"
    return None


def install(blocks: Any) -> bool:
    """Call after ``blocks.queue(...)``; True when applied."""
    if not PATCH.usable(problem(blocks)):
        return False
    blocks._queue.sleep_when_free = EVENT_POLL_S
    blocks._queue.progress_update_sleep_when_free = PROGRESS_POLL_S
    return True
