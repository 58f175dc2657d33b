"""Replay: a saved run played back into the Compare panels at its original pace, or faster.

No model and no network: the events come from a recording (``ui/recordings/reader.py``), paced by their time
offsets; frames are throttled like a live run's (``ui/core/stream.py``) and the tab's Stop ends a replay
the same way it ends a run.
"""

from __future__ import annotations

import asyncio
import math
import re
import shutil
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import gradio as gr

from agents.evidence import verdict_line
from agents.modes.registry import forked_mode, mode_title
from ui.core import followup, render
from ui.core.frame import Frame, PanelsView, output_index
from ui.core.modes import BESIDE, PANEL_MODES
from ui.core.stream import THROTTLE_S, TICK_S, StopSignal, counted, frame_interval
from ui.core.verdicts import comparison_table
from ui.recordings.export import EXPORT_DIR
from ui.recordings.reader import MAX_GAP_S, MAX_REPLAY_BYTES, Recording

DEFAULT_SPEED = "1× (original pace)"
SPEEDS = {DEFAULT_SPEED: 1.0, "2×": 2.0, "4×": 4.0, "instant": 0.0}
FRAME_S = 0.05  # token deltas within one frame of playback are merged into one event
INSTANT = "instant"  # the speed that plays a recording at once: its last frame is all that is shown


async def play(recording: Recording, speed: str | float, *, throttle: float = THROTTLE_S,
                 max_gap: float = MAX_GAP_S, stop: StopSignal | None = None) -> AsyncIterator[Frame]:
    """Play a saved run back into the panels with its original pacing divided by ``speed`` (0: instant).

    Bounded whatever the file holds: a pause in the recording lasts at most ``max_gap`` seconds
    (before dividing by ``speed``); while waiting a frame goes out at least every second, so a
    visitor who left (Gradio checks between frames) ends the replay and frees its slot; frames are
    at most one per :func:`frame_interval` and never take more than a quarter of the time; long
    stretches of events hand the event loop back every few milliseconds. ``stop`` (the tab's Stop)
    ends it with a stopped frame.
    """
    modes = tuple(m for m in PANEL_MODES if m in recording.traces) + tuple(  # then a teacher's fork, if any
        m for m in recording.traces if m not in PANEL_MODES)
    view = PanelsView(recording.question, recording.selection, modes, recording.expected, recording.slots,
                      beside_of(recording))
    for m, trace in view.traces.items():  # priced as recorded, not at this process's price
        trace.prices = recording.traces[m].prices if m in recording.traces else None
    if recording.previous is not None:  # a follow-up: each panel's earlier turns above it, a table row per turn
        view.threads = followup.threads_of(recording.previous, modes, recording.question)
        view.previous = recording.previous
    earlier = followup.earlier_table(recording.previous, modes)
    backend = render.plain(str(recording.settings.get("backend") or recording.settings.get("model") or "a saved run"))
    status = f"▶ Replaying **{render.plain(recording.selection)}** recorded on {backend}…"
    stop = stop or StopSignal()
    with counted():
        try:
            yield view.frame(status, question=recording.question)
            async for frame in _play(recording, view, status, speed_factor(speed), _Pacer(throttle), max_gap, stop):
                yield frame
        finally:
            recording.discard()
    if stop.stopped:
        view.finish(stopped=True)
        yield view.frame("■ Replay stopped.", final=True,
                         table=earlier + comparison_table(view.traces, recording.expected, claims=view.claim_counts()))
        return
    for m, trace in view.traces.items():
        trace.elapsed_s = recording.traces[m].elapsed_s
    view.finish()
    done = f"✔ Replay finished ({render.plain(recording.question)[:80]}).{evidence_tail(recording)}"
    yield view.frame(done, final=True,
                     table=earlier + comparison_table(view.traces, recording.expected, claims=view.claim_counts()))


async def _play(recording: Recording, view: PanelsView, status: str, factor: float, pacer: _Pacer,
                max_gap: float, stop: StopSignal) -> AsyncIterator[Frame]:
    """The recording's events into ``view``, paced by their offsets; frames when due; returns when stopped."""
    start, clock, previous = time.perf_counter(), 0.0, 0.0
    for t, mode, event in recording.events():
        if factor > 0:
            clock += min(max(0.0, t - previous), max_gap)  # the recording's pace, every pause capped
            previous = max(previous, t)
            due = start + clock / factor
            while (now := time.perf_counter()) < due and not stop.stopped:
                if pacer.frame_due(now):
                    pacer.building()
                    yield view.frame(status)
                    pacer.shown()
                await asyncio.sleep(max(0.0, pacer.wake(due) - time.perf_counter()))
        if stop.stopped:
            return
        urgent = view.add(mode, event, t)
        pacer.dirty = True
        if factor > 0 and (urgent or pacer.frame_due(time.perf_counter())):
            pacer.building()
            yield view.frame(status)
            pacer.shown()
        await pacer.breathe()


class _Pacer:
    """When a replay may show its next frame, and when it must hand the event loop back."""

    SLICE_S = 0.005  # work at most this long between two hand-backs to the event loop
    DUTY = 4  # a frame that took x seconds (to build and send) waits at least DUTY·x before the next
    WAKE_S = 0.25  # while waiting for an event, wake this often (to keep the liveness tick)

    def __init__(self, throttle: float) -> None:
        self.throttle = throttle
        self.dirty = False
        self.next_at = self._shown_at = self._building_at = self._slice = time.perf_counter()

    def frame_due(self, now: float) -> bool:
        """A frame with news once the interval passed; one without news every TICK_S (a liveness check)."""
        return now >= self.next_at and (self.dirty or now - self._shown_at >= TICK_S)

    def wake(self, due: float) -> float:
        """When to wake up while waiting for the next event due at ``due``."""
        return min(due, self.next_at if self.dirty else time.perf_counter() + self.WAKE_S)

    def building(self) -> None:
        self._building_at = time.perf_counter()

    def shown(self) -> None:
        """The generator resumed after a frame: that frame's cost (build, send, waiting) spaces the next."""
        now = time.perf_counter()
        self.dirty, self._shown_at = False, now
        self.next_at = now + max(frame_interval(self.throttle), self.DUTY * (now - self._building_at))

    async def breathe(self) -> None:
        """Yield to the event loop when this replay has worked for a whole slice."""
        if time.perf_counter() - self._slice >= self.SLICE_S:
            await asyncio.sleep(0)
            self._slice = time.perf_counter()


def evidence_tail(recording: Recording) -> str:
    """The recording's evidence tests, each its verdict line after the status ("🔬 Evidence test: 396 → 515 — the
    answer followed …"); "" when it holds none."""
    lines = [verdict_line(block) for block in (recording.evidence or {}).values()]
    return "".join(f" 🔬 {render.plain(line)}" for line in lines if line)


async def final_frame(recording: Recording, label: str) -> tuple[Frame, str | None]:
    """A recording played instantly: its last frame (status ``label``: the question) and the fork it shows in the
    panel beside, if any."""
    beside = beside_of(recording)
    last: Frame | None = None
    async for frame in play(recording, INSTANT):
        last = frame
    assert last is not None  # a replay yields at least its first and its last frame
    last.status = f"{label}: **{render.plain(recording.question)[:120]}**{evidence_tail(recording)}"
    return last, beside


ON_SCREEN = 4  # what run_on_screen gives after the outputs: question, expected answer, picker, the panel beside


def on_screen_unchanged() -> list:
    """:func:`run_on_screen`'s values after the outputs, each left as it is (a refusal, a page without a run)."""
    return [gr.skip() for _ in range(ON_SCREEN)]


async def run_on_screen(recording: Recording, path: Path, label: str,
                        download_name: str = "shared-run.json") -> tuple[list, str]:
    """A recording played instantly into the Compare tab: its outputs (export = a copy of ``path``), then what the
    page's ``on_screen`` lists: the question, the expected answer, the picker (the recording's modes) and the
    panel beside (shown, titled, when the run has a fork there; else closed); and the copy's path."""
    last, beside = await final_frame(recording, label)
    copy = await asyncio.to_thread(_copy_for_download, path, download_name)
    last.files = [copy]
    values = last.values()
    if beside:
        values[output_index(BESIDE)] = gr.Chatbot(value=last.beside, label=mode_title(beside))
    return [*values, recording.question, recording.expected or "", modes_on_screen(recording),
            gr.Column(visible=beside is not None)], copy


def _copy_for_download(path: Path, name: str) -> str:
    """A copy of a file where Gradio serves files from (the benchmark's folders may be outside its allowed dirs)."""
    folder = EXPORT_DIR / uuid.uuid4().hex[:12]
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    shutil.copyfile(path, target)
    return str(target)


def speed_factor(speed: str | float) -> float:
    """A speed label (or a number) → playback factor; 0 plays instantly, anything unknown is 1×."""
    if isinstance(speed, str):
        return SPEEDS.get(speed, 1.0)
    try:
        value = float(speed)
    except (TypeError, ValueError):
        return 1.0
    return value if math.isfinite(value) and value >= 0 else 1.0


def window_of(speed: str | float) -> float:
    """How many seconds of a recording one frame of playback at ``speed`` covers (:func:`open_recording`'s
    ``window``): every token delta at once when instant."""
    factor = speed_factor(speed)
    return math.inf if factor <= 0 else FRAME_S * factor


def beside_of(recording: Recording) -> str | None:
    """The trace a recording shows in the panel beside the modes: a fork continued in a new panel, if any."""
    shown_in_place = set(recording.slots.values())
    return next((m for m in recording.traces if forked_mode(m) is not None and m not in shown_in_place), None)


def modes_on_screen(recording: Recording) -> list[str]:
    """The picker's value for a recording: each panel mode it holds (or shows a fork in), in the page's order."""
    return [m for m in PANEL_MODES if m in recording.traces or m in recording.slots]


_BESIDE_KEY = re.compile(rb'"fork"\s*:\s*\{\s*"panel"\s*:\s*"(?:beside|fourth)"\s*,\s*"trace"\s*:\s*"([a-z_]+@[0-9]+)"')


def beside_in_file(path: str) -> str | None:
    """The fork a recording file shows in a new panel, from a byte scan (no parse: the panel opens at once);
    ``"fourth"`` is how exports before the mode picker named that panel."""
    try:
        if Path(path).stat().st_size > MAX_REPLAY_BYTES:
            return None
        match = _BESIDE_KEY.search(Path(path).read_bytes())
    except OSError:
        return None
    return None if match is None else match.group(1).decode()
