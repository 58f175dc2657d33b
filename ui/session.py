"""One visitor's run (or replay) as a stream of :class:`Frame`\\ s — what the page shows next.

``live_run`` runs an :class:`agents.comparison.ComparisonRun`; a pump thread hands its events to
this async generator, which updates the panels and yields at most every
:func:`frame_interval` seconds: 50 ms normally, longer when many runs share the server, since
every frame costs Gradio a few milliseconds of CPU per output. The first text of each panel
goes out at once. The generator never blocks for long, so Gradio's cancel (the Stop button, a
closed tab) lands promptly; its ``finally`` closes the run (cancels the modes and closes their
model clients, which ends their streams).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from agents.comparison import validate_question
from agents.events import Event, FinalAnswer, TokenDelta
from agents.llm.base import ChatModel
from agents.llm.settings import LLMSettings
from agents.modes import RunConfig
from agents.run_host import make_run
from agents.trace import MODE_TITLES, Trace
from tools.registry import ToolRegistry
from ui import render
from ui.admission import Admission, Full
from ui.inputs import MAX_TOKENS_LIMIT
from ui.launcher import launcher as _launcher
from ui.recording import MAX_GAP_S
from ui.render import MODE_CHOICES, MODES, PANEL_MODES, Panel, hybrid_mode
from ui.replay import Recording, export_dict, run_settings, speed_factor, write_exports

log = logging.getLogger(__name__)

THROTTLE_S = 0.05
FRAME_BUDGET_PER_S = 80  # frames/s for all live runs together (each costs Gradio ~3 ms of CPU) before runs refresh less often
TICK_S = 1.0  # refresh the live seconds counter this often while nothing happens
POLL_S = 0.02  # how often a live run's new events are collected
ModelFactory = Callable[[LLMSettings], ChatModel]
_live = 0  # runs streaming right now, in this process
_live_lock = threading.Lock()


def frame_interval(throttle: float = THROTTLE_S) -> float:
    """Seconds between two frames of one run: ``throttle``, or more when many runs stream at once."""
    return max(throttle, _live / FRAME_BUDGET_PER_S)


class Inbox:
    """Events from the pump thread to the event loop, waking the loop at most once per drain.

    A fast stream produces hundreds of tokens a second per run; one ``call_soon_threadsafe``
    per token would keep the event loop (shared by every visitor) busy with wake-ups.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self._signalled = False
        self._ready = asyncio.Event()

    def put(self, item: object) -> None:
        """From any thread."""
        with self._lock:
            self._items.append(item)
            if self._signalled:
                return
            self._signalled = True
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is listening any more
            self._loop.call_soon_threadsafe(self._ready.set)

    async def drain(self, timeout: float) -> list:
        """Everything queued so far, waiting up to ``timeout`` seconds for something (may return [])."""
        with self._lock:
            empty = not self._items
        if empty:
            with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout)
        with self._lock:
            items = list(self._items)
            self._items.clear()
            self._signalled = False
            self._ready.clear()
        return items




def _track(delta: int) -> None:
    global _live
    with _live_lock:
        _live += delta


@dataclass
class Frame:
    """Everything the Compare tab shows, in output order (``None`` table/files: clear them)."""

    panels: tuple[list, list, list]
    metrics: tuple[str, str, str]
    status: str
    table: str = ""
    files: list[str] | None = None
    question: str | None = None  # replay only: the recorded question
    extra: dict[str, Any] = field(default_factory=dict)
    fourth: list = field(default_factory=list)  # the optional hybrid panel (after everything else)
    fourth_metrics: str = ""


class _View:
    """Panels + traces of the modes in play; renders a Frame."""

    def __init__(self, question: str, selection: str, modes: tuple[str, ...]) -> None:
        self.selection, self.modes = selection, modes
        self.traces = {m: Trace(m, question) for m in modes}
        self.panels = {m: Panel(m) for m in modes}
        self.started = time.perf_counter()
        self._metrics: dict[str, tuple[tuple, str]] = {}
        self._steps = dict.fromkeys(modes, 0)  # non-token events so far, per mode

    def add(self, mode: str, event: Event, t: float | None = None) -> bool:
        """Record an event; True when it should be shown at once (the first text of a panel)."""
        panel = self.panels[mode]
        first = not panel.messages
        self.traces[mode].add(event, t)
        panel.add(event)
        if not isinstance(event, TokenDelta):
            self._steps[mode] += 1
        return first and bool(panel.messages)

    def metrics(self, mode: str, running: bool) -> str:
        """The metrics line, recomputed only after a step or when the shown seconds change."""
        trace = self.traces[mode]
        key = (self._steps[mode], round(trace.elapsed_s, 1), running)
        cached = self._metrics.get(mode)
        if cached is None or cached[0] != key:
            cached = (key, render.metrics_markdown(trace, running=running))
            self._metrics[mode] = cached
        return cached[1]

    def finished(self, mode: str) -> bool:
        # trace.error, not any LLMError: a mode cut off by a one-at-a-time server runs again (agents/comparison.py)
        return self.panels[mode].done or bool(self.traces[mode].of(FinalAnswer) or self.traces[mode].error)

    def frame(self, status: str, *, final: bool = False, table: str = "", files: list[str] | None = None,
              question: str | None = None) -> Frame:
        panels, metrics = [], []
        for m in MODES:
            if m in self.panels:
                panels.append(self.panels[m].value() or render.waiting())
                metrics.append(self.metrics(m, running=not final and not self.finished(m)))
            else:
                panels.append(render.not_run(m, self.selection))
                metrics.append(render.metrics_markdown(None))
        frame = Frame(tuple(panels), tuple(metrics), status, table, files, question)  # type: ignore[arg-type]
        hybrid = next((m for m in self.modes if m not in MODES), None)
        if hybrid is not None:
            frame.fourth = self.panels[hybrid].value() or render.waiting()
            frame.fourth_metrics = self.metrics(hybrid, running=not final and not self.finished(hybrid))
        return frame


def prepared(components: list, values: Iterable[Any]) -> list:
    """Values as the browser receives them: each component's own ``postprocess``, serialised.

    For events registered with ``postprocess=False`` (see ``app.py``): cheaper than letting Gradio
    do it per output on its thread pool, with the same result for the page and API clients.
    """
    out = []
    for component, value in zip(components, values, strict=True):
        value = component.postprocess(value)
        out.append(value.model_dump() if hasattr(value, "model_dump") else value)
    return out


def refusal(message: str, question: str | None = None, *, short: str | None = None) -> Frame:
    """A frame that shows ``message`` in the status line (``short`` or the message in every panel), no model call."""
    panel = render.notice(f"⚠ {render.safe_markdown(short or message)}")
    return Frame((panel, panel, panel), ("", "", ""), f"⚠ {render.safe_markdown(message)}", "", None, question)


NOT_CONFIGURED_SHORT = ("No model is configured, so nothing was run: set HF_TOKEN, sign in with Hugging Face "
                        "(on the Space) or set LLM_BASE_URL — see the status line above.")




def make_config(protocol: str, max_steps: Any, temperature: Any, max_tokens: Any = None) -> RunConfig:
    """Settings from the UI or the API, clamped to what the engine accepts (no ``max_tokens``: LLM_MAX_TOKENS)."""
    try:
        steps = min(10, max(1, int(float(max_steps))))
    except (TypeError, ValueError, OverflowError):  # NaN, infinity, text: the default (callers refuse them first)
        steps = 5
    try:
        temp = min(2.0, max(0.0, float(temperature)))
    except (TypeError, ValueError, OverflowError):
        temp = 0.2
    if temp != temp:  # NaN
        temp = 0.2
    try:
        tokens: int | None = min(MAX_TOKENS_LIMIT, max(1, int(max_tokens))) if max_tokens is not None else None
    except (TypeError, ValueError, OverflowError):
        tokens = None
    return RunConfig(protocol=protocol if protocol in ("text", "tools") else "text", max_steps=steps, temperature=temp,
                     max_tokens=tokens)


def run_status(traces: dict[str, Trace], elapsed: float, where: str, failure: Exception | None = None) -> str:
    """The status line after a run: "✔ Done" only when no mode failed; otherwise which failed and why."""
    if failure is not None:
        return f"⚠ The run failed: {render.safe_markdown(str(failure))}"
    failed = {m: t.error for m, t in traces.items() if t.error and t.answer is None}
    if not failed:
        return f"✔ Done in {elapsed:.1f} s on {where}."
    first_mode, first_error = next(iter(failed.items()))
    why = f"{MODE_TITLES.get(first_mode, first_mode)}: {render.plain(str(first_error))[:300]}"
    if len(failed) == len(traces):
        what = "the mode failed" if len(traces) == 1 else f"all {len(traces)} modes failed"
        return f"⚠ The run failed on {where}: {what} ({why})."
    names = ", ".join(MODE_TITLES.get(m, m) for m in failed)
    return f"⚠ Done in {elapsed:.1f} s on {where}, but {len(failed)} of {len(traces)} modes failed: {names} ({why})."


async def live_run(
    question: str | None,
    selection: str,
    settings: LLMSettings,
    registry: ToolRegistry,
    config: RunConfig,
    *,
    model_factory: ModelFactory | None = None,
    throttle: float = THROTTLE_S,
    export: bool = True,
    fourth: str | None = None,
    admission: Admission | None = None,
) -> AsyncIterator[Frame]:
    """Run the selected modes (plus an optional hybrid in the fourth panel) in parallel and yield
    frames until they all finish. With ``admission``, first wait for a slot, showing the place in line."""
    problem = validate_question(question)
    if problem is None and (not isinstance(selection, str) or selection not in MODE_CHOICES):
        problem = f"Unknown mode {selection!r}: choose Think, Act, ReAct or All."
    try:
        hybrid = hybrid_mode(fourth)
    except ValueError as exc:
        problem = problem or str(exc)
    if problem is not None:
        yield refusal(problem)
        return
    if settings.problem() is not None:
        yield refusal(str(settings.problem()), short=NOT_CONFIGURED_SHORT)
        return
    assert question is not None
    try:
        ticket = admission.ticket() if admission is not None else None
    except Full as exc:
        yield refusal(str(exc), short="⏳ The app is full right now — please try again in a minute.")
        return
    try:
        if ticket is not None and admission is not None:
            async for place in ticket.wait():
                yield waiting(place, admission.running)
        modes = MODE_CHOICES[selection] + ((hybrid,) if hybrid else ())
        async for frame in _run(question, selection, modes, settings, registry, config, model_factory=model_factory,
                                throttle=throttle, export=export):
            yield frame
    finally:
        if ticket is not None:
            ticket.release()


def waiting(place: int, running: int) -> Frame:
    """What a visitor sees while its run waits for a slot: its place in line, updated as the line moves."""
    panel = render.notice(f"⏳ Waiting for a free slot — you are number {place} in the queue.")
    status = (f"⏳ The app is busy: you are **number {place}** in the queue ({running} runs in progress). "
              "Your run starts by itself — keep this tab open.")
    return Frame((panel, panel, panel), ("", "", ""), status)


async def _run(question: str, selection: str, modes: tuple[str, ...], settings: LLMSettings, registry: ToolRegistry,
               config: RunConfig, *, model_factory: ModelFactory | None, throttle: float,
               export: bool) -> AsyncIterator[Frame]:
    """The run itself: the loop collects the modes' events every :data:`POLL_S` and yields throttled frames.

    Polling, not a thread per run waking the loop: on 2 cores with 50 runs, those 50 extra threads and
    their hand-offs (each a GIL acquisition) delayed every visitor's frames; a poll costs microseconds,
    and the three panels' first tokens, arriving together, share one frame."""
    view = _View(question, selection, modes)
    where = render.plain(settings.describe())
    run = make_run(question, modes, settings, registry, config, model_factory)  # a worker process, or in-process
    start_failed: list[Exception] = []

    def start() -> None:
        try:
            run.start()
        except Exception as exc:
            log.exception("run failed to start")
            start_failed.append(exc)

    failure: Exception | None = None
    running = f"● Running **{selection}** on {where}…"
    _track(+1)
    try:
        _launcher.call(start)  # the mode threads are started off the event loop
        yield view.frame(running)
        last, dirty, ended = time.perf_counter(), False, False
        while not ended:
            await asyncio.sleep(POLL_S)
            interval = frame_interval(throttle)
            urgent = False
            try:
                while (item := run.poll(timeout=0)) is not None:
                    mode, event = item
                    urgent = view.add(mode, event) or urgent
                    dirty = True
                ended = run.done
            except Exception as exc:
                log.exception("run failed")
                failure, ended = exc, True
            if start_failed:
                failure, ended = start_failed[0], True
            now = time.perf_counter()
            if not ended and (urgent or now - last >= (interval if dirty else TICK_S)):
                dirty, last = False, now
                yield view.frame(running)
    finally:
        _track(-1)
        # Stop, a closed tab, or the end: cancel every mode and close the clients still open (which ends
        # their streams at once). close() joins the mode threads, so it runs off the event loop.
        _launcher.start(run.close, "run-close")
    for panel in view.panels.values():
        panel.finish()
    elapsed = time.perf_counter() - view.started
    status = run_status(view.traces, elapsed, where, failure)
    files = None
    if export:  # off the event loop: other visitors' frames keep flowing while the files are written
        data = export_dict(question, selection, view.traces, config_settings(settings, config, registry))
        files = list(await asyncio.to_thread(write_exports, data, None, view.traces))
    yield view.frame(status, final=True, table=render.comparison_markdown(view.traces), files=files)


def config_settings(settings: LLMSettings, config: RunConfig, registry: ToolRegistry) -> dict[str, Any]:
    """The export's settings block: model, backend line (no token), protocol, budget, enabled tools."""
    return run_settings(settings, protocol=config.protocol, max_steps=config.max_steps,
                        temperature=config.temperature or 0.0, tools=registry.names)


async def replay(recording: Recording, speed: str | float, *, throttle: float = THROTTLE_S,
                 max_gap: float = MAX_GAP_S) -> AsyncIterator[Frame]:
    """Play a saved run back into the panels with its original pacing divided by ``speed`` (0: instant).

    Bounded whatever the file holds: a pause in the recording lasts at most ``max_gap`` seconds
    (before dividing by ``speed``); while waiting a frame goes out at least every second, so a
    visitor who left (Gradio checks between frames) ends the replay and frees its slot; frames are
    at most one per :func:`frame_interval` and never take more than a quarter of the time; long
    stretches of events hand the event loop back every few milliseconds.
    """
    factor = speed_factor(speed)
    modes = tuple(m for m in PANEL_MODES if m in recording.traces)
    view = _View(recording.question, recording.selection, modes)
    backend = render.plain(str(recording.settings.get("backend") or recording.settings.get("model") or "a saved run"))
    status = f"▶ Replaying **{render.plain(recording.selection)}** recorded on {backend}…"
    _track(+1)
    try:
        yield view.frame(status, question=recording.question)
        pacer = _Pacer(throttle)
        start, clock, previous = time.perf_counter(), 0.0, 0.0
        for t, mode, event in recording.events():
            if factor > 0:
                clock += min(max(0.0, t - previous), max_gap)  # the recording's pace, every pause capped
                previous = max(previous, t)
                due = start + clock / factor
                while (now := time.perf_counter()) < due:
                    if pacer.frame_due(now):
                        pacer.building()
                        yield view.frame(status)
                        pacer.shown()
                    await asyncio.sleep(max(0.0, pacer.wake(due) - time.perf_counter()))
            urgent = view.add(mode, event, t)
            pacer.dirty = True
            if factor > 0 and (urgent or pacer.frame_due(time.perf_counter())):
                pacer.building()
                yield view.frame(status)
                pacer.shown()
            await pacer.breathe()
        for m, trace in view.traces.items():
            trace.elapsed_s = recording.traces[m].elapsed_s
            view.panels[m].finish()
        done = f"✔ Replay finished ({render.plain(recording.question)[:80]})."
        yield view.frame(done, final=True, table=render.comparison_markdown(view.traces))
    finally:
        _track(-1)
        recording.discard()


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


def mark_stopped(*panels: list) -> tuple:
    """After Stop: close spinners in each panel and say it was stopped (values as the browser sent them)."""
    out = []
    for messages in panels:
        messages = list(messages or [])
        pending = False
        for m in messages:
            meta = m.get("metadata") if isinstance(m, dict) else getattr(m, "metadata", None)
            if meta and meta.get("status") == "pending":
                del meta["status"]  # no spinner, and the partial text stays open to read
                pending = True
        if pending:
            messages.append(gr.ChatMessage(role="assistant", content="■ **Stopped** by the user."))
        out.append(messages)
    return (*out, "■ Stopped. Every mode's model stream was closed.")
