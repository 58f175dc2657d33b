"""A fork streaming into the Compare tab: the stream adapter's view (``ui/core/stream.py``) for one forked mode.

The original run stays on screen untouched: frames carry ``gr.skip()`` for every output the fork does
not own, and only the fork's panel (the fourth, or the forked mode's own panel "in place"), its
metrics and the status line change while it runs; the table (a row per trace, the fork's among them)
and the export (originals + fork + a ``fork`` block saying where it is shown) come with the last frame.
"""

from __future__ import annotations

import asyncio
from typing import Any

import gradio as gr

from agents.events import Event
from agents.modes.registry import mode_title
from ui.core import render
from ui.core.frame import Frame, Outputs, PanelsView, run_status
from ui.core.modes import MODES
from ui.core.stream import Outcome
from ui.core.verdicts import comparison_table
from ui.fork.screen import Screen, after_fork
from ui.recordings.export import export_dict, write_exports

# indices in ForkView's outputs (Outputs.all(), then the extra panel's column): a panel and a metrics line per base mode
_N = len(MODES)
STATUS, TABLE, FILES, EXTRA_CHAT, EXTRA_METRICS, EXTRA_COL = range(2 * _N, 2 * _N + 6)


def skip_all(outputs: Outputs, status: str) -> list:
    """Only the status line changes (a refused fork: one clear line, nothing else disturbed)."""
    values: list[Any] = [gr.skip()] * (len(outputs.all()) + 1)
    values[STATUS] = outputs.status.postprocess(status)
    return values


class ForkView:
    """The fork's panel, metrics, status, and at the end the table and the export; everything else skipped."""

    def __init__(self, screen: Screen, key: str, slot: str, outputs: Outputs, settings: dict[str, Any],
                 where: str) -> None:
        kept, slots = after_fork(screen, key, slot)
        self.screen, self.key, self.slot, self.outputs, self.settings = screen, key, slot, outputs, settings
        self.where = where
        self.view = PanelsView(screen.question, screen.selection, (*kept, key), screen.expected, slots)
        for panel, trace in kept.items():  # the originals, as a replay would show them
            for t, event in trace.events:
                self.view.add(panel, event, t)
            self.view.traces[panel].elapsed_s = trace.elapsed_s
            self.view.panels[panel].finish()
        self.owned = self._owned(screen, slot)
        self.status = f"● Forking: **{render.plain(mode_title(key))}** continues live on {where}…"
        self.first = True

    @staticmethod
    def _owned(screen: Screen, slot: str) -> set[int]:
        """Outputs the fork writes: its panel and metrics, and a panel that showed the earlier fork."""
        owned = {STATUS}
        old = (screen.fork or {}).get("panel")
        for panel in {slot, old} - {None}:
            if panel in MODES:
                owned |= {MODES.index(panel), _N + MODES.index(panel)}
            elif panel == "fourth" and (slot == "fourth" or screen.fork):
                owned |= {EXTRA_CHAT, EXTRA_METRICS, EXTRA_COL}
        return owned

    def add(self, item: tuple[str, Event]) -> bool:
        _, event = item
        return self.view.add(self.key, event)

    def running(self) -> list:
        return self._values(self.view.frame(self.status), self.owned | ({FILES} if self.first else set()))

    async def end(self, outcome: Outcome) -> list:
        self.view.panels[self.key].finish(stopped=outcome.stopped)
        traces = self.view.traces
        if outcome.stopped:
            status = "■ Stopped. The fork's model stream was closed."
        else:
            status = run_status({self.key: traces[self.key]}, traces[self.key].elapsed_s, self.where, outcome.failure)
        data = export_dict(self.screen.question, self.screen.selection, traces, self.settings,
                           stopped=outcome.stopped, expected=self.screen.expected)
        data["fork"] = {"panel": self.slot, "trace": self.key}
        files = list(await asyncio.to_thread(write_exports, data, None, traces))
        table = comparison_table(traces, self.screen.expected)
        frame = self.view.frame(f"{status} (fork: {render.plain(mode_title(self.key))})", final=True, table=table,
                                files=files)
        self.first = True  # the last frame sets the fourth panel's title again
        return self._values(frame, self.owned | {TABLE, FILES})

    def _values(self, frame: Frame, owned: set[int]) -> list:
        components = [*self.outputs.all(), None]
        values = [*frame.values(), None]
        out: list[Any] = []
        for i, (component, value) in enumerate(zip(components, values, strict=True)):
            if i not in owned:
                out.append(gr.skip())
            elif i == EXTRA_COL:
                out.append({"__type__": "update", "visible": self.slot == "fourth" or self._hybrid_stays()})
            else:
                ready = component.postprocess(value)
                ready = ready.model_dump() if hasattr(ready, "model_dump") else ready
                if i == EXTRA_CHAT and self.first:
                    label = mode_title(self.key) if self.slot == "fourth" else mode_title(self._hybrid_stays() or "")
                    ready = {"__type__": "update", "label": label, "value": ready}
                out.append(ready)
        self.first = False
        return out

    def _hybrid_stays(self) -> str | None:
        """The hybrid still shown in the fourth panel beside a fork made in place, if any."""
        if self.slot == "fourth":
            return None
        return next((m for m in self.view.modes if m not in MODES and m != self.key), None)
