"""A panel's messages when it shows no run: not run, waiting for the model, one notice of ours."""

from __future__ import annotations

import gradio as gr

from agents.modes.registry import mode_title
from ui.core.safe_text import plain


def not_run(mode: str, selection: str) -> list[gr.ChatMessage]:
    return [gr.ChatMessage(role="assistant", content=f"– _{mode_title(mode)} was not run "
                                                          f"(mode selection: {plain(selection)})._")]


def waiting() -> list[gr.ChatMessage]:
    """A running mode's panel before its first token: a spinner, so a slow or hung server is not mistaken
    for a mode that never ran (and Stop, which closes spinners, can say the mode was stopped)."""
    return [gr.ChatMessage(role="assistant", content="", metadata={"title": "⋯ Waiting for the model…",
                                                                   "status": "pending"})]


def notice(text: str) -> list[gr.ChatMessage]:
    """A panel holding just one message of ours (a refusal, a configuration problem)."""
    return [gr.ChatMessage(role="assistant", content=text)]
