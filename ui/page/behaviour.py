"""What the page does in the browser by itself (``page.js``): the run brought on screen after Run and on a shared
link, each panel kept at the start of its newest step, the table as cards on a phone, presentation mode's height.

Every event here is the browser's alone (``fn=None``): no server call, no queue, no API endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gradio as gr

JS_PATH = Path(__file__).with_name("page.js")
SHOW_RUN_JS = "() => { window.thinkActReact?.showRun(); }"
# a shared link (``?run=<id>``, ui/share/handlers.py) opens at the run; a plain visit stays at the top
SHOW_LINKED_RUN_JS = "() => { if (new URLSearchParams(location.search).has('run')) window.thinkActReact?.showRun(); }"
# presentation mode is a class on the body (theme.css); its panels then fill the screen's height
PRESENTATION_JS = ("(on) => { document.body.classList.toggle('presentation', !!on); "
                   "window.thinkActReact?.fitPresentation(); }")


def page_js() -> str:
    """The script ``launch(js=...)`` runs once the page has loaded: a function Gradio calls."""
    return JS_PATH.read_text(encoding="utf-8")


def show_run_on(triggers: Sequence[Any]) -> None:
    """As these events start (Run, Step, Enter in the question, Replay, Fork), the run comes on screen. Wire it
    before the run's own event on the same trigger: Gradio's page starts the next only once a run has ended."""
    gr.on(list(triggers), fn=None, js=SHOW_RUN_JS, show_progress="hidden", queue=False)


def show_linked_run_after(event: Any) -> None:
    """After the page load fills a shared run (``event``: its ``demo.load``), the run comes on screen."""
    event.then(fn=None, js=SHOW_LINKED_RUN_JS, show_progress="hidden", queue=False)
