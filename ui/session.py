"""One visitor's run (or replay) as a stream of :class:`Frame`\\ s — what the page shows next.

``live_run`` consumes :func:`agents.comparison.run_comparison` in a pump thread and hands its
events to this async generator, which updates the panels and yields at most every
``throttle`` seconds (the first token of each LLM call and every structured step go out at
once). The generator never blocks for long, so Gradio's cancel (the Stop button, a closed tab)
lands promptly; its ``finally`` closes the run's model clients, which ends their streams, and
the pump thread then closes ``run_comparison`` (cancelling the mode threads).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from agents.comparison import run_comparison, validate_question
from agents.events import Event, FinalAnswer, LLMError, TokenDelta
from agents.llm.base import ChatModel
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.modes import RunConfig
from agents.trace import Trace
from tools.registry import ToolRegistry
from ui import render
from ui.render import MODE_CHOICES, MODES, Panel
from ui.replay import SPEEDS, Recording, export_dict, run_settings, schedule, write_exports

log = logging.getLogger(__name__)

THROTTLE_S = 0.05
TICK_S = 1.0  # refresh the live seconds counter this often while nothing happens
ModelFactory = Callable[[LLMSettings], ChatModel]
_END = object()


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


class _View:
    """Panels + traces of the modes in play; renders a Frame."""

    def __init__(self, question: str, selection: str, modes: tuple[str, ...]) -> None:
        self.selection, self.modes = selection, modes
        self.traces = {m: Trace(m, question) for m in modes}
        self.panels = {m: Panel(m) for m in modes}
        self.started = time.perf_counter()

    def add(self, mode: str, event: Event, t: float | None = None) -> bool:
        """Record an event; True when it should be shown at once (a step, or a call's first token)."""
        panel = self.panels[mode]
        fresh_call = isinstance(event, TokenDelta) and not panel.streaming
        self.traces[mode].add(event, t)
        panel.add(event)
        return fresh_call or not isinstance(event, TokenDelta)

    def finished(self, mode: str) -> bool:
        return self.panels[mode].done or bool(self.traces[mode].of(FinalAnswer) or self.traces[mode].of(LLMError))

    def frame(self, status: str, *, final: bool = False, table: str = "", files: list[str] | None = None,
              question: str | None = None) -> Frame:
        panels, metrics = [], []
        for m in MODES:
            if m in self.panels:
                panels.append(self.panels[m].value())
                metrics.append(render.metrics_markdown(self.traces[m], running=not final and not self.finished(m)))
            else:
                panels.append(render.not_run(m, self.selection))
                metrics.append(render.metrics_markdown(None))
        return Frame(tuple(panels), tuple(metrics), status, table, files, question)  # type: ignore[arg-type]


def refusal(message: str, question: str | None = None) -> Frame:
    """A frame that shows ``message`` in every panel and the status line, with no model call."""
    panel = render.notice(f"⚠ {render.safe_markdown(message)}")
    return Frame((panel, panel, panel), ("", "", ""), f"⚠ {render.safe_markdown(message)}", "", None, question)


def make_config(protocol: str, max_steps: Any, temperature: Any) -> RunConfig:
    """Settings from the UI or the API, clamped to what the engine accepts."""
    try:
        steps = min(10, max(1, int(max_steps)))
    except (TypeError, ValueError):
        steps = 5
    try:
        temp = min(2.0, max(0.0, float(temperature)))
    except (TypeError, ValueError):
        temp = 0.2
    return RunConfig(protocol=protocol if protocol in ("text", "tools") else "text", max_steps=steps, temperature=temp)


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
) -> AsyncIterator[Frame]:
    """Run the selected modes in parallel and yield frames until they all finish."""
    problem = validate_question(question)
    if problem is None and selection not in MODE_CHOICES:
        problem = f"Unknown mode {selection!r}: choose Think, Act, ReAct or All."
    if problem is None:
        problem = settings.problem()
    if problem is not None:
        yield refusal(problem)
        return
    assert question is not None
    modes = MODE_CHOICES[selection]
    view = _View(question, selection, modes)
    where = render.plain(settings.describe())
    make = model_factory or HFInferenceModel
    models: list[ChatModel] = []
    lock = threading.Lock()

    def factory() -> ChatModel:
        model = make(settings)
        with lock:
            models.append(model)
        return model

    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()
    stop = threading.Event()
    events = run_comparison(question, modes, model_factory=factory, registry=registry, config=config)

    def post(item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is listening any more
            loop.call_soon_threadsafe(inbox.put_nowait, item)

    def pump() -> None:
        try:
            for item in events:
                post(item)
                if stop.is_set():
                    break
        except Exception as exc:
            log.exception("run failed")
            post(exc)
        finally:
            events.close()
            post(_END)

    thread = threading.Thread(target=pump, name="run-pump", daemon=True)
    failure: Exception | None = None
    try:
        thread.start()
        yield view.frame(f"● Running **{selection}** on {where}…")
        last, dirty = time.perf_counter(), False
        while True:
            wait = max(0.0, last + throttle - time.perf_counter()) if dirty else TICK_S
            try:
                item = await asyncio.wait_for(inbox.get(), wait)
            except (asyncio.TimeoutError, TimeoutError):
                dirty, last = False, time.perf_counter()
                yield view.frame(f"● Running **{selection}** on {where}…")
                continue
            if item is _END:
                break
            if isinstance(item, Exception):
                failure = item
                continue
            mode, event = item  # type: ignore[misc]
            urgent = view.add(mode, event)
            dirty = True
            if urgent or time.perf_counter() - last >= throttle:
                dirty, last = False, time.perf_counter()
                yield view.frame(f"● Running **{selection}** on {where}…")
    finally:
        stop.set()
        with lock:
            for model in models:
                model.close()  # ends in-flight streams now; the pump then closes run_comparison
    for panel in view.panels.values():
        panel.finish()
    elapsed = time.perf_counter() - view.started
    status = f"✔ Done in {elapsed:.1f} s on {where}." if failure is None else (
        f"⚠ The run failed: {render.safe_markdown(str(failure))}")
    files = None
    if export:
        data = export_dict(question, selection, view.traces, config_settings(settings, config, registry))
        files = list(write_exports(data))
    yield view.frame(status, final=True, table=render.comparison_markdown(view.traces), files=files)


def config_settings(settings: LLMSettings, config: RunConfig, registry: ToolRegistry) -> dict[str, Any]:
    """The export's settings block: model, backend line (no token), protocol, budget, enabled tools."""
    return run_settings(settings, protocol=config.protocol, max_steps=config.max_steps,
                        temperature=config.temperature or 0.0, tools=registry.names)


async def replay(recording: Recording, speed: str | float, *, throttle: float = THROTTLE_S) -> AsyncIterator[Frame]:
    """Play a saved run back into the panels with its original pacing divided by ``speed`` (0: instant)."""
    factor = SPEEDS.get(speed, 1.0) if isinstance(speed, str) else float(speed)
    modes = tuple(m for m in MODES if m in recording.traces)
    view = _View(recording.question, recording.selection, modes)
    backend = render.plain(str(recording.settings.get("backend") or recording.settings.get("model") or "a saved run"))
    status = f"▶ Replaying **{recording.selection}** recorded on {backend}…"
    yield view.frame(status, question=recording.question)
    start = last = time.perf_counter()
    dirty = False
    for t, mode, event in schedule(recording.traces):
        if factor > 0:
            due = start + t / factor
            if due > time.perf_counter():
                if dirty:
                    dirty, last = False, time.perf_counter()
                    yield view.frame(status)
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
        urgent = view.add(mode, event, t)
        dirty = True
        if factor > 0 and (urgent or time.perf_counter() - last >= throttle):
            dirty, last = False, time.perf_counter()
            yield view.frame(status)
    for m, trace in view.traces.items():
        trace.elapsed_s = recording.traces[m].elapsed_s
        view.panels[m].finish()
    done = f"✔ Replay finished ({render.plain(recording.question)[:80]})."
    yield view.frame(done, final=True, table=render.comparison_markdown(view.traces))


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
