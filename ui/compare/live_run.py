"""One visitor's live Compare run, as a stream of :class:`~ui.core.frame.Frame`\\ s.

:func:`live_run` waits for a slot (``ui/core/admission.py``), makes the run (:func:`make_run`, the one
place a run is created) and hands it to the stream adapter (``ui/core/stream.py``) with a
:class:`LiveView`, which turns the modes' events into panels and, at the end, the status line, the
comparison table and the export files. The request was checked before (``ui/compare/handlers.py``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from agents.events import Event, Paused, Resumed
from agents.hosting import make_run  # the one place a live run is made: a worker process, or in-process
from agents.llm.base import ModelBuilder
from agents.llm.settings import LLMSettings
from agents.modes.registry import forked_mode
from agents.request import RunRequest
from agents.trace import Trace
from tools.registry import ToolRegistry
from ui.compare.stepping import PAUSED_STATUS, STEPPING_STATUS, PauseState
from ui.core import followup, render
from ui.core.admission import Admission, Full
from ui.core.frame import Frame, PanelsView, everywhere, refusal, run_status, waiting
from ui.core.lesson import Steppable
from ui.core.modes import BESIDE
from ui.core.notices import server_note
from ui.core.stream import THROTTLE_S, Outcome, StopSignal, stream
from ui.core.verdicts import comparison_table
from ui.core.visitors import Visitor
from ui.recordings.export import export_dict, settings_block, write_exports
from ui.recordings.reader import Recording

OnStepping = Callable[[Steppable, Callable[[], Recording]], None]  # a stepping run and its traces so far

NOT_CONFIGURED_SHORT = ("No model is configured, so nothing was run: set HF_TOKEN, sign in with Hugging Face "
                        "(on the Space) or set LLM_BASE_URL — see the status line above.")
STOPPED = "■ Stopped. Every mode's model stream was closed."
STOPPED_WAITING = "■ Stopped while waiting for a free slot: nothing was run."


def answered_where(settings: LLMSettings, traces: dict[str, Trace]) -> str:
    """The backend as the status line names it after a run: the model that answered, as the server named it
    in its replies (several: each), else the configured or discovered one."""
    answered = list(dict.fromkeys(t.answered_by for t in traces.values() if t.answered_by))
    return render.plain(settings.describe(" / ".join(answered) or None))


class LiveView:
    """A live run's panels for the stream adapter: ``(mode, event)`` items in, Compare frames out."""

    def __init__(self, request: RunRequest, settings: LLMSettings, registry: ToolRegistry, *, export: bool = True,
                 beside: str | None = None) -> None:
        self.question, self.selection, self.expected = request.question, request.selection, request.expected
        self.panels = PanelsView(request.question, request.selection, request.modes, request.expected, beside=beside)
        self.request, self.registry = request, registry
        if request.followup is not None:
            self.panels.threads = {m: followup.thread(request.followup, m, request.question) for m in request.modes}
            self.panels.previous = request.followup.previous  # the map's bands of the earlier turns
        self.settings = settings
        self.where = render.plain(settings.describe())
        self.export_settings = settings_block(settings, request, registry.names) if export else None
        self.status = f"● Running **{render.plain(request.selection)}** on {self.where}…"
        self.pauses = PauseState() if request.stepping else None

    def add(self, item: tuple[str, Event]) -> bool:
        mode, event = item
        if self.pauses is not None:
            self.pauses.add(mode, event)
            if isinstance(event, (Paused, Resumed)):
                self.panels.add(mode, event)
                return True  # the status line and the buttons' meaning change: show it at once
        return self.panels.add(mode, event)

    def running(self) -> Frame:
        if self.pauses is None:
            return self.panels.frame(self.status + server_note(self.panels.traces.values()))
        if self.pauses.paused(self.panels.modes, self.panels.finished):
            return self.panels.frame(PAUSED_STATUS.format(step=self.pauses.step))
        return self.panels.frame(STEPPING_STATUS.format(selection=render.plain(self.selection), where=self.where,
                                                        step=self.pauses.step + 1))

    def expired(self, ttl_s: float) -> str | None:
        """Why a stepping run must end now: paused for ``ttl_s`` without Next step or Continue (else None)."""
        if self.pauses is None:
            return None
        return self.pauses.expired(self.panels.modes, self.panels.finished, ttl_s)

    async def end(self, outcome: Outcome) -> Frame:
        """Spinners closed (a stopped mode says so), then the status line, the table and the exports."""
        view = self.panels
        view.finish(stopped=outcome.stopped, reason=outcome.reason)
        if outcome.stopped and outcome.reason:
            status = f"⏹ {render.safe_markdown(outcome.reason)}"
        elif outcome.stopped:
            status = STOPPED
        else:
            status = run_status(view.traces, time.perf_counter() - view.started,
                                answered_where(self.settings, view.traces), outcome.failure)
            status += server_note(view.traces.values())
        files = None
        if self.export_settings is not None:  # off the event loop: other visitors' frames keep flowing
            data = export_dict(self.question, self.selection, view.traces, self.export_settings,
                               stopped=outcome.stopped, expected=self.expected, claims=view.claims())
            files = list(await asyncio.to_thread(self._write, data))
        previous = self.request.followup.previous if self.request.followup is not None else None
        table = followup.earlier_table(previous, view.modes) + comparison_table(view.traces, self.expected,
                                                                                claims=view.claim_counts())
        return view.frame(status, final=True, table=table, files=files)

    def _write(self, data: dict) -> tuple[str, str]:
        """The export files, with the follow-up blocks: the turns this one continued, and the one it hands on; a
        fork continued in the panel beside is named, so that a replay and a fork show it there again."""
        data.update(followup.export_fields(self.request, self.panels.traces, self.registry))
        if self.panels.beside is not None and forked_mode(self.panels.beside) is not None:
            data["fork"] = {"panel": BESIDE, "trace": self.panels.beside}
        return write_exports(data, None, self.panels.traces)

    def snapshot(self) -> Recording:
        """The traces so far, copied (the run may still add to them): what a fork of the paused run starts from."""
        traces = {m: Trace(m, t.question, list(t.events), elapsed_s=t.elapsed_s) for m, t in self.panels.traces.items()}
        previous = self.request.followup.previous if self.request.followup is not None else None
        return Recording(self.question, self.selection, traces, dict(self.export_settings or {}), self.expected,
                         previous=previous)


@dataclass(frozen=True)
class Serving:
    """How the page serves one live run: ``admission`` (wait for a slot, showing the place in line; the run counts
    against ``visitor``'s live runs until it ends), ``stop``, ``beside`` (a panel of the run also shown in the panel
    beside: a mode named by ``/compare``'s older ``fourth`` input, or a fork a follow-up continues), and for a
    stepping run ``on_stepping`` (the page's lesson, where Next step and Continue find it:
    ``ui/compare/stepping.py``) and ``pause_ttl_s`` (left paused that long, it ends and its panels say why)."""

    model_factory: ModelBuilder | None = None
    throttle: float = THROTTLE_S
    export: bool = True
    admission: Admission | None = None
    stop: StopSignal | None = None
    pause_ttl_s: float | None = None
    beside: str | None = None
    visitor: Visitor | None = None
    on_stepping: OnStepping | None = None


async def live_run(request: RunRequest, settings: LLMSettings, registry: ToolRegistry,
                   serving: Serving | None = None) -> AsyncIterator[Frame]:
    """Run ``request`` (already checked) and yield frames until its modes finish or its stop is set (past the
    visitor's bound of live runs it is refused in one line); ``serving``: :class:`Serving`."""
    serving = serving or Serving()
    admission, visitor, pause_ttl_s = serving.admission, serving.visitor, serving.pause_ttl_s
    if settings.problem() is not None:
        yield refusal(str(settings.problem()), short=None if settings.configured else NOT_CONFIGURED_SHORT)
        return
    stop = serving.stop or StopSignal()
    try:
        ticket = admission.ticket(visitor) if admission is not None else None
    except Full as exc:
        yield refusal(str(exc), short=exc.short)
        return
    try:
        if ticket is not None and admission is not None:
            stop.on_stop(ticket.cancel)
            async for place in ticket.wait():
                yield waiting(place, admission.running)
            if stop.stopped:
                panel = render.notice("■ **Stopped** while waiting for a free slot: nothing was run.")
                yield Frame(everywhere(panel), everywhere(""), STOPPED_WAITING)
                return
        tools = request.run_registry(registry)  # the enabled tools, then the visitor's written on the page
        run = make_run(request, settings, tools, serving.model_factory)
        view = LiveView(request, settings, tools, export=serving.export, beside=serving.beside)
        if request.stepping and serving.on_stepping is not None:
            serving.on_stepping(run, view.snapshot)
        watch = (lambda: view.expired(pause_ttl_s)) if request.stepping and pause_ttl_s is not None else None
        async for frame in stream(run, view, stop=stop, throttle=serving.throttle, watch=watch):
            yield frame
    finally:
        if ticket is not None:
            ticket.release()
