"""A panel's messages of our own: not run, waiting for the model (before a run's first text, or during a run:
:class:`WaitNote`), one notice of ours."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import gradio as gr

from agents.events import SANDBOX, Waited, Waiting
from agents.modes.registry import mode_title
from ui.core.safe_text import plain, safe_markdown

_converter: gr.Chatbot | None = None


def to_wire(messages: list[gr.ChatMessage]) -> list[dict]:
    """Messages in the browser's form: the Chatbot's own ``postprocess``, serialised (every panel's Chatbot
    converts text messages alike)."""
    global _converter
    if _converter is None:
        _converter = gr.Chatbot(render=False)
    return _converter.postprocess(messages).model_dump()


ONE_AT_A_TIME_NOTE = ("⏳ The model server serves one request at a time (it closed a reply when another arrived): "
                      "the app now sends it one request at a time — `LLM_MAX_CONCURRENT` sets another limit.")


def server_note(traces: Iterable[Any]) -> str:
    """The status line's one note when this run found its server serving one request at a time, else ""."""
    learned = any(w.learned for t in traces for w in t.of(Waiting))
    return f" {ONE_AT_A_TIME_NOTE}" if learned else ""


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


SANDBOX_WAIT = "⏳ Waiting for room in the Python sandbox"


class WaitNote:
    """A running panel's wait for the model server (or for CodeAct's sandbox): one pending message (a spinner)
    saying what it waits for. When the wait ends it goes, but for the wait that taught the app to send one request
    at a time, which stays, closed."""

    def __init__(self) -> None:
        self.message: gr.ChatMessage | None = None
        self.kept = False

    def show(self, event: Waiting, call: int, append: Callable[..., gr.ChatMessage]) -> None:
        text = f"⏳ {safe_markdown(event.message[:1].upper() + event.message[1:])}…"
        title = "⏳ Waiting to run again" if event.rerun else SANDBOX_WAIT if event.cause == SANDBOX \
            else f"⏳ Waiting for the model server · LLM call {call}"
        if self.message is None:
            self.message, self.kept = append(text, title=title, status="pending"), event.learned
        else:  # the wait goes on, for another reason (a back-off, then the server's turn)
            self.message.content, self.message.metadata["title"] = text, title
            self.kept = self.kept or event.learned

    def end(self, messages: list[gr.ChatMessage], event: Waited | None = None) -> None:
        """The wait is over (``event``), or the panel moved on without saying so (an older recording, the end)."""
        if self.message is None:
            return
        if self.kept and event is not None:
            self.message.metadata = {"title": f"⏳ Waited {event.seconds:.1f} s for the model server's turn",
                                     "status": "done"}
        elif self.message in messages:
            messages.remove(self.message)
        self.message = None
