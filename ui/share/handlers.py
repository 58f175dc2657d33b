"""The Share button and the ``/?run=<id>`` page load: handlers, no layout (``app.py`` wires them).

Sharing reads the file as a recording (``ui/recordings/reader.open_recording``), plays it instantly
(``ui/recordings/playback.final_frame``) and stores the export with that view (``ui/share/store.py``).
Opening a link reads the view, with at most :data:`OPENS_AT_ONCE` opens at a time for the whole app, shared fairly
among visitors (``ui/core/fair.py``: a crowd's backlog never holds up another visitor's open), at most
:data:`OPENS_QUEUED_PER_VISITOR` waiting per visitor and :data:`OPENS_PER_MINUTE` per visitor: never a parse or a
replay per view.
"""


import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import gradio as gr

from agents import strict_json
from agents.modes.registry import mode_title
from ui.core import render
from ui.core.fair import FairGate, GateFull
from ui.core.frame import Outputs, output_index, prepared, refusal
from ui.core.lesson import Lessons, Shown, Turn
from ui.core.modes import BESIDE
from ui.core.page_url import public_page_url
from ui.core.visitors import Window, visitor_of
from ui.recordings.export import EXPORT_DIR
from ui.recordings.playback import final_frame, modes_on_screen, on_screen_unchanged
from ui.recordings.reader import RecordingError, open_recording
from ui.share.store import ShareError, ShareStore, share_url

log = logging.getLogger(__name__)

OPENS_AT_ONCE = 2  # shared runs being opened at the same time (each reads and sends up to a few MB)
OPENS_QUEUED_PER_VISITOR = 30  # one visitor's opens waiting or under way: a class behind one address fits
OPENS_PER_MINUTE = 60  # per visitor: a class behind one address opens a link together, a loop does not
SHARED_DOWNLOADS = EXPORT_DIR / "shared"  # one copy of each opened run's export, in Gradio's cache
VIEW_FORMAT = 3  # 2: the mode picker's outputs and modes; 3: the step-aligned map; an older view is made again, once
VIEW_FACTOR = 2  # a view may be this much larger than the largest run a link holds (escaping, message markup)
NOTHING_TO_SHARE = "Nothing to share yet: run a question (or replay a saved run) first."


class ShareHandlers:
    """Share (the run on screen → a link) and open (``?run=`` → panels, metrics, table), through the page's lesson."""

    def __init__(self, outputs: Outputs, store: ShareStore | None = None, lessons: Lessons | None = None) -> None:
        self.outputs = outputs
        self._store = store
        self.lessons = lessons if lessons is not None else Lessons()
        self._opening = FairGate(OPENS_AT_ONCE, OPENS_QUEUED_PER_VISITOR)  # used on the event loop only
        self._opens = Window(60, OPENS_PER_MINUTE)

    @property
    def store(self) -> ShareStore:
        if self._store is None:  # read the settings on first use, never at import
            self._store = ShareStore.from_settings()
        return self._store

    async def share(self, request: gr.Request | None = None) -> str:
        """A link that reopens the run on screen (the lesson's: a live run's or a fork's export, a replayed file, a
        shared run, a benchmark item), stored only if it replays (a share link is no file host)."""
        shown = self.lessons.of(request).on_screen("share")
        source = shown.export if isinstance(shown, Shown) else None
        if source is None:
            return f"⚠ {shown if isinstance(shown, str) else NOTHING_TO_SHARE}"
        try:  # size, an existing link, this visitor's hourly quotas: before any parsing
            admitted = await asyncio.to_thread(self.store.admit, source, visitor_of(request))
            run_id = admitted.known
            if run_id is None:
                view = await self.view_of(source)
                run_id = await asyncio.to_thread(self.store.store, source, admitted, view)
        except (ShareError, RecordingError) as exc:
            return f"⚠ {render.plain(str(exc))}"
        url = share_url(public_page_url(getattr(request, "headers", None)), run_id)
        days = self.store.max_age_s / 86400
        return (f"**Share this run:** [{url}]({url})  \nAnyone with the link sees these panels and this table "
                f"for {days:g} day{'s' if days != 1 else ''} (a restart of the app without persistent storage "
                "ends it sooner; the saved file of the run always works).")

    async def view_of(self, source: str | Path) -> bytes:
        """The recording at ``source`` checked (a :class:`RecordingError` if it is not one) and rendered into what
        the page receives, as JSON; refused past :data:`VIEW_FACTOR` times the store's run cap."""
        recording = await open_recording(str(source))
        frame, beside = await final_frame(recording, "✔ Shared run")
        earlier = recording.previous.turns if recording.previous is not None else ()
        model = recording.settings.get("model")
        view = {"format": VIEW_FORMAT, "values": frame.to_outputs(self.outputs), "question": recording.question,
                "expected": recording.expected or "", "modes": modes_on_screen(recording),
                "beside": mode_title(beside) if beside else None, "fork": beside,
                "turns": [{"question": t.get("question"), "expected": t.get("expected"), "edits": t.get("edits")}
                          for t in earlier],
                "model": model if isinstance(model, str) else None}
        data = await asyncio.to_thread(lambda: strict_json.dumps(view, ensure_ascii=False,
                                                                separators=(",", ":")).encode())
        if len(data) > VIEW_FACTOR * self.store.max_run_bytes:
            raise ShareError("This run shows too much to share by link; save its file instead (under the table).")
        return data

    async def open(self, request: gr.Request | None = None) -> list:
        """On page load: ``?run=<id>`` fills question, panels, metrics, table and export at once; else nothing.
        Values go out as the browser receives them (the event does not postprocess)."""
        params = getattr(request, "query_params", None) or {}
        run_id = params.get("run") if hasattr(params, "get") else None
        if not run_id:
            return [gr.skip()] * len(self.outputs.all()) + on_screen_unchanged()
        visitor = visitor_of(request)
        if not self._opens.spend(visitor):
            return self._refused("You opened many shared runs in the last minute; wait a moment, then reload.")
        try:
            async with self._opening.hold(visitor):
                view, download = await self._read(run_id)
        except GateFull:
            return self._refused("Many shared runs are opening for you already; wait a moment, then reload.")
        except (ShareError, RecordingError) as exc:
            return self._refused(str(exc))
        except OSError:
            log.exception("could not open a shared run")
            return self._refused("That shared run could not be read; ask whoever shared it for the saved file.")
        self.lessons.of(request).show(shown_of(view, download))
        return self._on_screen(view, download)

    async def _read(self, run_id: str) -> tuple[dict[str, Any], Path]:
        """A link's stored view (made now, once, for a link stored before views existed or before the mode picker)
        and its download copy."""
        view = await asyncio.to_thread(self.store.view, run_id)
        if view is None or view.get("format") != VIEW_FORMAT:
            data = await self.view_of(await asyncio.to_thread(self.store.legacy_path, run_id))
            await asyncio.to_thread(self.store.save_view, run_id, data)
            view = json.loads(data)
        download = await asyncio.to_thread(self.store.download_copy, run_id, SHARED_DOWNLOADS)
        return view, download

    def _on_screen(self, view: dict[str, Any], download: Path) -> list:
        values = list(view["values"])
        values[self.outputs.all().index(self.outputs.exports)] = prepared([self.outputs.exports], [[str(download)]])[0]
        beside = view.get("beside")
        if beside:
            chat = output_index(BESIDE)
            values[chat] = gr.Chatbot(value=values[chat], label=str(beside))
        modes = view.get("modes")
        return [*values, str(view.get("question") or ""), str(view.get("expected") or ""),
                list(modes) if isinstance(modes, list) else gr.skip(), gr.Column(visible=bool(beside))]

    def _refused(self, message: str) -> list:
        return [*refusal(message).to_outputs(self.outputs), *on_screen_unchanged()]


def shown_of(view: dict[str, Any], download: Path) -> Shown:
    """What a shared run leaves on screen: its download copy, its turns with their expected answers (a view
    stored before they were kept: the turn on screen alone), the fork beside and the model it ran on."""
    earlier = [t for t in view.get("turns") or [] if isinstance(t, dict)]
    expected = view.get("expected")
    fork, model = view.get("fork"), view.get("model")
    return Shown("share", str(download),
                 (*(Turn.of_block(t) for t in earlier),
                  Turn(str(view.get("question") or ""), expected if isinstance(expected, str) and expected else None)),
                 beside=fork if isinstance(fork, str) else None, model=model if isinstance(model, str) else None)
