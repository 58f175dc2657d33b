"""A fork streaming into the Compare tab: the stream adapter's view (``ui/core/stream.py``) for one forked mode.

The original run stays on screen untouched: frames carry ``gr.skip()`` for every output the fork does
not own, and only the fork's panel (the panel beside the modes, or the forked mode's own panel "in place"), its
metrics and the status line change while it runs; the table (a row per trace, the fork's among them)
and the export (originals + fork + a ``fork`` block saying where it is shown) come with the last frame.
A fork that is an evidence test (``evidence``: the tested panel and the change) states the change while it runs,
and at the end judges the fork's answer (``agents/evidence.py``): the verdict ends the status line and the
export keeps it under ``evidence``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from agents.events import Event
from agents.evidence import Change, evidence_block
from agents.evidence import judge as judge_evidence
from agents.modes import RunConfig
from agents.modes.registry import mode_title
from tools.registry import ToolRegistry
from ui.core import followup, render
from ui.core.frame import Frame, Outputs, PanelsView, output_index, run_status
from ui.core.modes import BESIDE, PANEL_MODES
from ui.core.stream import Outcome
from ui.core.verdicts import comparison_table
from ui.fork.screen import Screen, after_fork
from ui.recordings.export import export_dict, write_exports

# indices in ForkView's outputs: Outputs.all() (ui/core/frame.py), then the column of the panel beside
STATUS = output_index(BESIDE) - 3
TABLE, FILES = STATUS + 1, STATUS + 2
BESIDE_CHAT, BESIDE_METRICS = output_index(BESIDE), output_index(BESIDE, metrics=True)


def skip_all(outputs: Outputs, status: str) -> list:
    """Only the status line changes (a refused fork: one clear line, nothing else disturbed)."""
    values: list[Any] = [gr.skip()] * (len(outputs.all()) + 1)
    values[STATUS] = outputs.status.postprocess(status)
    return values


@dataclass(frozen=True)
class ForkMade:
    """What a fork runs with, the original run's: its export's settings block, tools and run settings."""

    settings: dict[str, Any]
    registry: ToolRegistry
    config: RunConfig


class ForkView:
    """The fork's panel, metrics, status, and at the end the table and the export; everything else skipped.
    ``done`` is told the fork's export as its last frame goes out (what the page's lesson shows next)."""

    def __init__(self, screen: Screen, key: str, slot: str, outputs: Outputs, made: ForkMade, where: str,
                 done: Callable[[str | None], None] | None = None,
                 evidence: tuple[str, Change] | None = None) -> None:
        kept, slots = after_fork(screen, key, slot)
        self.screen, self.key, self.slot, self.outputs, self.made = screen, key, slot, outputs, made
        self.where, self.done, self.evidence = where, done, evidence
        self.verdict: str | None = None  # the evidence test's verdict line, once judged
        self.view = PanelsView(screen.question, screen.selection, (*kept, key), screen.expected, slots,
                               beside=key if slot == BESIDE else None)
        for panel, trace in kept.items():  # the originals, as a replay would show them
            for t, event in trace.events:
                self.view.add(panel, event, t)
            self.view.traces[panel].elapsed_s = trace.elapsed_s
            self.view.panels[panel].finish()
        if screen.previous is not None:  # a fork in a follow-up: every panel keeps its earlier turns above it
            self.view.threads = followup.threads_of(screen.previous, (*kept, key), screen.question)
            self.view.previous = screen.previous
        self.owned = self._owned(screen, slot, len(outputs.all()))
        self.status = f"● Forking: **{render.plain(mode_title(key))}** continues live on {where}…"
        if evidence is not None:
            self.status = f"🔬 {render.plain(evidence[1].line())} {self.status}"
        self.first = True

    @staticmethod
    def _owned(screen: Screen, slot: str, column: int) -> set[int]:
        """Outputs the fork writes: its panel and metrics, and a panel that showed the earlier fork (``column``:
        the index of the panel beside's column, after the Compare outputs)."""
        owned = {STATUS, column - 1}  # the status line, and the step-aligned map (the last of the Compare outputs)
        old = (screen.fork or {}).get("panel")
        for panel in {slot, old} - {None}:
            if panel in PANEL_MODES:
                owned |= {output_index(panel), output_index(panel, metrics=True)}
            elif panel == BESIDE:
                owned |= {BESIDE_CHAT, BESIDE_METRICS, column}
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
        tested, tail = None, ""
        if self.evidence is not None and not outcome.stopped and outcome.failure is None:
            source, change = self.evidence
            verdict = judge_evidence(change, traces[self.key])
            self.verdict = verdict.line
            tail = f" 🔬 Evidence test: {render.plain(change.text)} — {render.plain(verdict.line)}"
            tested = {self.key: evidence_block(source, change, verdict)}
        data = export_dict(self.screen.question, self.screen.selection, traces, self.made.settings,
                           stopped=outcome.stopped, expected=self.screen.expected, claims=self.view.claims(),
                           evidence=tested)
        data["fork"] = {"panel": self.slot, "trace": self.key}
        if self.screen.previous is not None:  # the turns it followed: a replay of the fork shows them too
            data["previous"] = self.screen.previous.block()
        data.update(followup.fork_fields(self.screen.previous, self.screen.question, traces, self.key, self.slot,
                                         (self.made.registry, self.made.config), self.screen.expected))
        files = list(await asyncio.to_thread(write_exports, data, None, traces))
        if self.done is not None:
            self.done(files[0])
        table = followup.earlier_table(self.screen.previous, tuple(traces)) + comparison_table(
            traces, self.screen.expected, claims=self.view.claim_counts())
        frame = self.view.frame(f"{status} (fork: {render.plain(mode_title(self.key))}){tail}", final=True, table=table,
                                files=files)
        self.first = True  # the last frame sets the panel beside's title again
        return self._values(frame, self.owned | {TABLE, FILES})

    def _values(self, frame: Frame, owned: set[int]) -> list:
        components = [*self.outputs.all(), None]
        values = [*frame.values(), None]
        column = len(components) - 1
        out: list[Any] = []
        for i, (component, value) in enumerate(zip(components, values, strict=True)):
            if i not in owned:
                out.append(gr.skip())
            elif i == column:
                out.append({"__type__": "update", "visible": self.slot == BESIDE})
            else:
                ready = component.postprocess(value)
                ready = ready.model_dump() if hasattr(ready, "model_dump") else ready
                if i == BESIDE_CHAT and self.first and self.slot == BESIDE:
                    ready = {"__type__": "update", "label": mode_title(self.key), "value": ready}
                out.append(ready)
        self.first = False
        return out
