"""The Share button and the ``/?run=<id>`` page load: handlers, no layout (``app.py`` wires them).

Sharing stores the run's JSON export (``ui/share.py``); opening a link replays it instantly through
the same path as the Replay button (``ui/replay.open_recording`` + ``ui/playback.replay``), so a shared
run shows exactly what its export would.
"""


import asyncio
import logging
import shutil
import uuid
from pathlib import Path
from typing import Any

import gradio as gr

from agents.modes.registry import mode_title
from ui import render
from ui.export import EXPORT_DIR, json_of
from ui.frame import Frame, Outputs, refusal
from ui.playback import replay
from ui.recording import ReplayError
from ui.replay import Recording, hybrid_in, open_recording
from ui.share import ShareError, ShareStore, page_url_of, share_url

log = logging.getLogger(__name__)

INSTANT = "instant"


def visitor_of(request: gr.Request | None) -> str:
    """Who is sharing, for the hourly limit: the client's address (the session when there is none)."""
    client = getattr(request, "client", None)
    host = getattr(client, "host", None)
    return str(host) if host else f"session:{getattr(request, 'session_hash', None) or ''}"


class ShareHandlers:
    """Share (exports or replayed file → a link) and open (``?run=`` → panels, metrics, table)."""

    def __init__(self, outputs: Outputs, store: ShareStore | None = None) -> None:
        self.outputs = outputs
        self._store = store

    @property
    def store(self) -> ShareStore:
        if self._store is None:  # read the settings on first use, never at import
            self._store = ShareStore.from_settings()
        return self._store

    async def share(self, exports: Any, replay_file: Any, request: gr.Request | None = None) -> str:
        """A link that reopens the run on screen: the live run's export, else the replayed file."""
        source = json_of(exports)
        if source is None and isinstance(replay_file, str):
            try:  # an uploaded file is stored only if it replays: a share link is no file host
                (await open_recording(replay_file, INSTANT)).discard()
            except ReplayError as exc:
                return f"⚠ {render.plain(str(exc))}"
            source = replay_file
        if source is None:
            return "⚠ Nothing to share yet: run a question (or replay a saved run) first."
        try:
            run_id = await asyncio.to_thread(self.store.put, source, visitor_of(request))
        except ShareError as exc:
            return f"⚠ {render.plain(str(exc))}"
        url = share_url(page_url_of(getattr(request, "headers", None)), run_id)
        days = self.store.max_age_s / 86400
        return (f"**Share this run:** [{url}]({url})  \nAnyone with the link sees these panels and this table "
                f"for {days:g} day{'s' if days != 1 else ''} (a restart of the app without persistent storage "
                "ends it sooner; the JSON export always works).")

    async def open(self, request: gr.Request | None = None) -> list:
        """On page load: ``?run=<id>`` fills question, panels, metrics, table and export at once; else nothing."""
        params = getattr(request, "query_params", None) or {}
        run_id = params.get("run") if hasattr(params, "get") else None
        n = len(self.outputs.all()) + 3  # + question, expected, fourth column
        if not run_id:
            return [gr.skip()] * n
        try:
            path = await asyncio.to_thread(self.store.path, run_id)
            recording = await open_recording(str(path), INSTANT)
        except (ShareError, ReplayError) as exc:
            return [*refusal(str(exc)).values(), gr.skip(), gr.skip(), gr.skip()]
        return await run_on_screen(recording, path, "✔ Shared run")


async def run_on_screen(recording: Recording, path: Path, label: str, download_name: str = "shared-run.json") -> list:
    """A recording played instantly into the Compare tab: its outputs (export = a copy of ``path``),
    then the question, the expected answer and the fourth column (shown when the run has a hybrid)."""
    hybrid = hybrid_in(recording)
    last: Frame | None = None
    async for frame in replay(recording, INSTANT):
        last = frame
    assert last is not None  # a replay yields at least its first and its last frame
    last.files = [await asyncio.to_thread(_copy_for_download, path, download_name)]
    last.status = f"{label}: **{render.plain(recording.question)[:120]}**"
    values = last.values()
    if hybrid:
        values[-2] = gr.Chatbot(value=last.fourth, label=mode_title(hybrid))
    fourth = gr.Column(visible=True) if hybrid else gr.skip()
    return [*values, recording.question, recording.expected or "", fourth]


def _copy_for_download(path: Path, name: str) -> str:
    """A copy of the stored export where Gradio serves files from (the store may be outside its allowed dirs)."""
    folder = EXPORT_DIR / uuid.uuid4().hex[:12]
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    shutil.copyfile(path, target)
    return str(target)
