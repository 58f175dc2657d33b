"""What tests read from a tab's stream of frames: all of them, and a panel message's text."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any


async def collect(agen: AsyncIterator[Any], *, after_first: Callable[[], Any] | None = None) -> list:
    """Every frame; ``after_first`` is called once the first frame is in (to stop the run from there)."""
    frames = []
    async for frame in agen:
        frames.append(frame)
        if after_first is not None and len(frames) == 1:
            after_first()
    return frames


def collect_now(agen: AsyncIterator[Any]) -> list:
    """:func:`collect`, run to its end from synchronous code."""
    return asyncio.run(collect(agen))


def content(message: Any) -> str:
    """A panel message's text (a live panel's messages come in the browser's form already)."""
    if isinstance(message, dict):
        return "".join(part.get("text", "") for part in message["content"])
    return str(message.content)


def compare_outputs() -> Any:
    """The Compare tab's output components alone (no page): a panel and a metrics line per panel mode, status,
    table, files, the panel beside with its metrics, and the step-aligned map (``ui/core/frame.Outputs``)."""
    import gradio as gr

    from ui.core.frame import Outputs
    from ui.core.modes import PANEL_MODES

    with gr.Blocks():
        return Outputs(tuple(gr.Chatbot() for _ in PANEL_MODES), tuple(gr.Markdown() for _ in PANEL_MODES),
                       gr.Markdown(), gr.Markdown(), gr.File(), gr.Chatbot(), gr.Markdown(), gr.HTML())
