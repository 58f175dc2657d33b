"""What the Compare tab shows at one moment (:class:`Frame`), and the order its outputs go out in.

:class:`Outputs` holds the tab's output components; :meth:`Frame.values` lists a frame's values in
the same order. That order is ``/compare``'s contract, written only here (docs/api.md): a panel and a metrics
line per base mode (the three by default), status, table, files, the panel beside the modes (a fork continued in
a new panel) and its metrics — the outputs ``/compare`` had before the mode picker — then a panel and a metrics
line per further panel mode, then the step-aligned map. :class:`PanelsView` is the panels and traces of the modes
in play, shared by live runs and replays.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gradio as gr

from agents.alignment import MapBuilder, StepMap
from agents.events import Event, FinalAnswer, TokenDelta
from agents.grounding import counts, counts_text
from agents.modes.registry import mode_title
from agents.trace import Trace
from ui.core import render, verdicts
from ui.core.modes import BASE, BESIDE, MORE, PANEL_MODES
from ui.core.render import Panel
from ui.core.step_map import map_html
from ui.core.table import metrics_markdown

if TYPE_CHECKING:
    from agents.followup import Previous

WAITING = render.to_wire(render.waiting())  # a running panel before its first text (the same every frame)
NOT_RUN_METRICS = metrics_markdown(None)
MAP_EVERY_S = 0.3  # a running map is made again at most this often: steps come in bursts (a reply, its calls)
NOT_SHOWN: list = []  # the panel of a further mode the run does not have (never changed: sent as it is)


@dataclass(frozen=True)
class Outputs:
    """The Compare tab's output components; :meth:`all` is the order of ``/compare``'s outputs."""

    chats: tuple[gr.Chatbot, ...]  # one per panel mode, in PANEL_MODES order
    metrics: tuple[gr.Markdown, ...]
    status: gr.Markdown
    table: gr.Markdown
    exports: gr.File
    beside_chat: gr.Chatbot  # the panel beside the modes (module docstring)
    beside_metrics: gr.Markdown
    step_map: gr.HTML  # the step-aligned map: the last output (``/replay`` gives it after its own)

    def all(self, *, files: bool = True, step_map: bool = True) -> list[gr.Component]:
        """Every output in order; without the export files for a replay (it has none to offer), and without the
        map for ``/replay``, which gives it last."""
        return [*_ordered(self.chats, self.metrics, [self.status, self.table, *([self.exports] if files else []),
                                                     self.beside_chat, self.beside_metrics]),
                *([self.step_map] if step_map else [])]

    def only_status(self, status: str, extra: int = 0) -> list[Any]:
        """Values that change the status line alone (an action the page cannot take: the run on screen stays),
        for :meth:`all` and ``extra`` outputs after them."""
        values: list[Any] = [gr.skip()] * (len(self.all()) + extra)
        values[self.all().index(self.status)] = self.status.postprocess(status)
        return values


def _ordered(panels: tuple, metrics: tuple, middle: list) -> list:
    """Base panels, base metrics, the ``middle`` (status … the panel beside), further panels, their metrics."""
    n = len(BASE)
    return [*panels[:n], *metrics[:n], *middle, *panels[n:], *metrics[n:]]


def output_index(mode: str, *, metrics: bool = False, files: bool = True) -> int:
    """Where a panel mode's panel (or metrics line) is among :meth:`Outputs.all`; ``BESIDE``: the panel beside."""
    n = len(BASE)
    if mode == BESIDE:
        return 2 * n + (3 if files else 2) + (1 if metrics else 0)
    i = PANEL_MODES.index(mode)
    if i < n:
        return i + (n if metrics else 0)
    return 2 * n + (5 if files else 4) + (i - n) + (len(MORE) if metrics else 0)


@dataclass
class Frame:
    """Everything the Compare tab shows (``None`` table/files: clear them)."""

    panels: tuple[list, ...]  # one per panel mode, in PANEL_MODES order
    metrics: tuple[str, ...]
    status: str
    table: str = ""
    files: list[str] | None = None
    question: str | None = None  # replay only: the recorded question
    beside: list = field(default_factory=list)  # the panel beside the modes
    beside_metrics: str = ""
    step_map: str = ""  # the step-aligned map (HTML, ui/core/step_map.py)
    final: bool = False  # a run's or replay's last frame: what it leaves on screen (not an output)

    def values(self, *, files: bool = True, step_map: bool = True) -> list[Any]:
        """The values in :meth:`Outputs.all` order."""
        return [*_ordered(self.panels, self.metrics, [self.status, self.table, *([self.files] if files else []),
                                                      self.beside, self.beside_metrics]),
                *([self.step_map] if step_map else [])]

    def to_outputs(self, outputs: Outputs, *, files: bool = True, step_map: bool = True) -> list[Any]:
        """The values as the browser receives them (for events registered with ``postprocess=False``)."""
        return prepared(outputs.all(files=files, step_map=step_map), self.values(files=files, step_map=step_map))


def prepared(components: list, values: Iterable[Any]) -> list:
    """Values as the browser receives them: each component's own ``postprocess``, serialised.

    Streamed events use ``postprocess=False``: the components' own postprocess runs here, inline,
    instead of on Gradio's thread pool (a thread hop per output per frame). A panel already in the
    browser's form (:meth:`render.Panel.wire`, a list of dicts) goes as it is.
    """
    out = []
    for component, value in zip(components, values, strict=True):
        if isinstance(component, gr.Chatbot) and isinstance(value, list) and (not value or isinstance(value[0], dict)):
            out.append(value)
            continue
        value = component.postprocess(value)
        out.append(value.model_dump() if hasattr(value, "model_dump") else value)
    return out


def everywhere(value: Any) -> tuple:
    """The same value for every panel (a notice, an empty metrics line)."""
    return (value,) * len(PANEL_MODES)


def refusal(message: str, question: str | None = None, *, short: str | None = None) -> Frame:
    """A frame that shows ``message`` in the status line (``short`` or the message in every panel), no model call."""
    panel = render.notice(f"⚠ {render.safe_markdown(short or message)}")
    return Frame(everywhere(panel), everywhere(""), f"⚠ {render.safe_markdown(message)}", "", None, question)


def waiting(place: int, running: int) -> Frame:
    """What a visitor sees while its run waits for a slot: its place in line, updated as the line moves."""
    panel = render.notice(f"⏳ Waiting for a free slot — you are number {place} in the queue.")
    status = (f"⏳ The app is busy: you are **number {place}** in the queue ({running} runs in progress). "
              "Your run starts by itself — keep this tab open.")
    return Frame(everywhere(panel), everywhere(""), status)


class PanelsView:
    """Panels + traces of the modes in play; renders a :class:`Frame`."""

    def __init__(self, question: str, selection: str, modes: tuple[str, ...], expected: str | None = None,
                 slots: dict[str, str] | None = None, beside: str | None = None) -> None:
        self.selection, self.modes, self.expected = selection, modes, expected
        self.slots = dict(slots or {})  # panel → the trace it shows instead (a fork made in place)
        self.beside = beside  # the trace shown beside the modes (a fork in a new panel), if any
        self.traces = {m: Trace(m, question) for m in modes}
        self.panels = {m: Panel(m) for m in modes}
        self.started = time.perf_counter()
        self._metrics: dict[str, tuple[tuple, str]] = {}
        self._steps = dict.fromkeys(modes, 0)  # non-token events so far, per mode
        self._ended = dict.fromkeys(modes, False)  # an answer or a final error so far, per mode
        self._idle: dict[str, list] = {}  # the panels of modes not in this run (:meth:`_not_run`)
        self.threads: dict[str, list] = {}  # a follow-up: each panel's earlier turns, above this one (browser form)
        self.previous: Previous | None = None  # a follow-up's earlier turns: the map's bands
        self._map: tuple[tuple, StepMap, str] | None = None
        self._builder = MapBuilder()
        self._map_at = 0.0  # when the map was last made

    def add(self, mode: str, event: Event, t: float | None = None) -> bool:
        """Record an event; True when it should be shown at once (the first text of a panel)."""
        panel = self.panels[mode]
        first = not panel.messages
        self.traces[mode].add(event, t)
        panel.add(event)
        if not isinstance(event, TokenDelta):
            self._steps[mode] += 1
            trace = self.traces[mode]  # only a step can end a mode: tokens never rescan the trace
            # trace.error, not any LLMError: a mode cut off by a one-at-a-time server runs again (agents/comparison.py)
            self._ended[mode] = bool(trace.of(FinalAnswer) or trace.error)
        return first and bool(panel.messages)

    def finish(self, *, stopped: bool = False, reason: str = "") -> None:
        """Close every panel's spinners (a stopped one says so, and why when it was not the visitor's Stop)."""
        for panel in self.panels.values():
            panel.finish(stopped=stopped and not self.finished(panel.mode), reason=reason)

    def metrics(self, mode: str, running: bool) -> str:
        """The metrics line, recomputed only after a step or when the shown seconds change."""
        trace = self.traces[mode]
        key = (self._steps[mode], round(trace.elapsed_s, 1), running)
        cached = self._metrics.get(mode)
        if cached is None or cached[0] != key:
            line = metrics_markdown(trace, running=running)
            claims = "" if running else counts_text(self._builder.claims(trace, self.previous))
            line = f"{line} · claims: {claims}" if claims else line  # the verdict stays last: "✓ F1 1.00"
            cached = (key, verdicts.metrics_with_verdict(line, trace, self.expected, running=running))
            self._metrics[mode] = cached
        return cached[1]

    def claims(self) -> dict[str, tuple]:
        """Each mode's marked claims once the run has ended (a follow-up's earlier turns counted), their sources on
        the map's rows: the export's."""
        return dict(self.step_map(final=True)[0].claims)

    def claim_counts(self) -> dict[str, dict[str, int]]:
        """Each mode's claims counted by mark, as the table shows them."""
        return {m: counts(self._builder.claims(self.traces[m], self.previous)) for m in self.modes}

    def step_map(self, *, final: bool) -> tuple[StepMap, str]:
        """The step-aligned map of the modes in play and its HTML, made again only when a move changed or a mode
        ended, and while the run goes at most every :data:`MAP_EVERY_S` (the builder reads each trace on from
        where it was; the stream's next frame, at most a second away, brings what waited)."""
        running = () if final else tuple(m for m in self.modes if not self.finished(m))
        traces = {m: self.traces[m] for m in self.modes}
        key = (self._builder.version(traces), running, id(self.previous))
        now = time.perf_counter()
        if self._map is None or self._map[0] != key and (final or now >= self._map_at + MAP_EVERY_S):
            ended = [m for m in self.modes if m not in running]
            made = self._builder.map(traces, previous=self.previous, ended=ended)
            self._map, self._map_at = (key, made, map_html(made, traces, running=running)), now
        return self._map[1], self._map[2]

    def _not_run(self, mode: str) -> list:
        """A panel this run has no mode for, in the browser's form: made once (every frame sends it)."""
        if mode not in self._idle:
            self._idle[mode] = render.to_wire(render.not_run(mode, self.selection))
        return self._idle[mode]

    def _shown(self, mode: str) -> list:
        """A panel's messages in the browser's form, below its earlier turns in a follow-up."""
        messages = self.panels[mode].wire() or WAITING
        return [*thread, *messages] if (thread := self.threads.get(mode)) else messages

    def finished(self, mode: str) -> bool:
        """Ended with an answer or an error (read every frame for every panel: kept by :meth:`add`)."""
        return self.panels[mode].done or self._ended.get(mode, False)

    def frame(self, status: str, *, final: bool = False, table: str = "", files: list[str] | None = None,
              question: str | None = None) -> Frame:
        panels, metrics = [], []
        for m in (self.slots.get(m, m) for m in PANEL_MODES):
            if m in self.panels:
                panels.append(self._shown(m))
                line = self.metrics(m, running=not final and not self.finished(m))
                shown_in_place = m in self.slots.values()  # a fork in its mode's own panel says so under it
                metrics.append(f"**✎ {render.plain(mode_title(m))}** · {line}" if shown_in_place else line)
            elif m in BASE:  # as before the picker: "not run", for callers that read the first outputs
                panels.append(self._not_run(m))
                metrics.append(NOT_RUN_METRICS)
            else:  # a further mode not chosen: its column is hidden, and an empty value is the cheapest to send
                panels.append(NOT_SHOWN)
                metrics.append("")
        frame = Frame(tuple(panels), tuple(metrics), status, table, files, question,  # type: ignore[arg-type]
                      step_map=self.step_map(final=final)[1], final=final)
        if self.beside in self.panels:
            frame.beside = self._shown(self.beside)
            frame.beside_metrics = self.metrics(self.beside, running=not final and not self.finished(self.beside))
        return frame


def run_status(traces: dict[str, Trace], elapsed: float, where: str, failure: Exception | None = None) -> str:
    """The status line after a run: "✔ Done" only when no mode failed; otherwise which failed and why."""
    if failure is not None:
        return f"⚠ The run failed: {render.safe_markdown(str(failure))}"
    failed = {m: t.error for m, t in traces.items() if t.error and t.answer is None}
    if not failed:
        return f"✔ Done in {elapsed:.1f} s on {where}."
    first_mode, first_error = next(iter(failed.items()))
    why = f"{mode_title(first_mode)}: {render.plain(str(first_error))[:300]}"
    if len(failed) == len(traces):
        what = "the mode failed" if len(traces) == 1 else f"all {len(traces)} modes failed"
        return f"⚠ The run failed on {where}: {what} ({why})."
    names = ", ".join(mode_title(m) for m in failed)
    return f"⚠ Done in {elapsed:.1f} s on {where}, but {len(failed)} of {len(traces)} modes failed: {names} ({why})."
