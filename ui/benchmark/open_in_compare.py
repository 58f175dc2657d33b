"""Benchmark → Compare: open one benchmark item's traces side by side in the Compare panels.

A benchmark in the app saves each pair's full trace in its run folder (``agents/evaluation/store.py``);
:class:`RunFolders` remembers each visitor's latest folder (a few hundred paths, no traces in memory).
The picker lists the items (those where the modes disagree first, by default only those), and
"Open in Compare" plays the chosen item's traces instantly into the Compare tab through the same path
as a replayed export (``ui/recordings/playback.run_on_screen``), so a class can look at why ReAct missed item 17.
With k tries per item, the list and the panels are each mode's first try.
"""


import asyncio
import itertools
import logging
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from agents import strict_json
from agents.evaluation.store import ResultStore
from agents.followup import block_for
from agents.modes import RunConfig
from agents.modes.registry import mode_title
from tools.registry import ToolRegistry
from ui.core.frame import Outputs, refusal
from ui.core.lesson import Lessons, Shown, Turn
from ui.core.modes import PANEL_MODES
from ui.core.stream import session_of
from ui.core.table import answers_agree
from ui.recordings.export import EXPORT_DIR
from ui.recordings.playback import on_screen_unchanged, run_on_screen
from ui.recordings.reader import RecordingError, open_recording

log = logging.getLogger(__name__)

MAX_VISITORS = 256  # folders remembered (one per visitor's latest benchmark); each is a path, not traces
NOTHING = "Run a benchmark first: its items can then be opened here."
NONE_DISAGREE = "No items where the modes disagree — untick to list all."
NONE_SAVED = "No item of this benchmark finished, so there is none to open."
SWITCH_TO_COMPARE = "() => { document.querySelector('button[data-tab-id=\"compare\"]')?.click(); }"


@dataclass(frozen=True)
class BenchFolder:
    """Where one benchmark saved its pairs, its items' order and what it ran with (its settings block, tools and
    run settings), so that an item opened in Compare can be forked and followed up as the benchmark ran it."""

    out_dir: Path
    item_ids: tuple[str, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    made: tuple[ToolRegistry, RunConfig] | None = None

    @classmethod
    def ran(cls, out_dir: Path, item_ids: tuple[str, ...], model: str | None, tools: ToolRegistry,
            config: RunConfig) -> "BenchFolder":
        """The folder of a benchmark that ran ``model`` with ``tools`` and ``config``."""
        settings = {"model": model, "protocol": config.protocol, "max_steps": config.max_steps,
                    "temperature": config.temperature, "tools": list(tools.names)}
        return cls(out_dir, item_ids, settings, (tools, config))


class RunFolders:
    """Each visitor's latest benchmark folder (least recently used forgotten past ``limit``)."""

    def __init__(self, limit: int = MAX_VISITORS) -> None:
        self.limit = limit
        self._folders: OrderedDict[str, BenchFolder] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, session: str, folder: BenchFolder) -> None:
        with self._lock:
            self._folders[session] = folder
            self._folders.move_to_end(session)
            while len(self._folders) > self.limit:
                self._folders.popitem(last=False)

    def get(self, session: str) -> BenchFolder | None:
        with self._lock:
            return self._folders.get(session)


def _answer(record: dict[str, Any]) -> str:
    value = record.get("parsed") if record.get("parsed") not in (None, "") else record.get("prediction")
    return str(value or "").strip()


def _same(a: str, b: str) -> bool:
    """Two modes' answers agree as the comparison table judges it (``ui/core/table.answers_agree``); two
    missing answers agree too (both modes failed alike)."""
    return (not a and not b) or answers_agree(a, b)


def disagree(records: list[dict[str, Any]]) -> bool:
    """The modes disagree on an item: one is right and another wrong, or two of their answers differ."""
    if len({bool(r.get("em")) for r in records}) > 1:
        return True
    answers = [_answer(r) for r in records]
    return any(not _same(a, b) for a, b in itertools.combinations(answers, 2))


def item_label(number: int, records: list[dict[str, Any]]) -> str:
    """``17. Which city … — Think ✓ · Act ✗ · ReAct ✗``."""
    question = " ".join(str(records[0].get("question") or "").split())
    short = question if len(question) <= 70 else question[:69] + "…"
    marks = " · ".join(f"{mode_title(str(r['mode']))} {'✓' if r.get('em') else '✗'}" for r in records)
    return f"{number}. {short} — {marks}"


def item_choices(folder: BenchFolder, only_disagreeing: bool) -> list[tuple[str, str]]:
    """(label, item id) for each finished item, disagreeing ones first (or only those)."""
    by_item: dict[str, list[dict[str, Any]]] = {}
    for (item_id, _mode, attempt), record in ResultStore(folder.out_dir).load().items():
        if attempt == 1:
            by_item.setdefault(item_id, []).append(record)
    order = {item_id: i for i, item_id in enumerate(folder.item_ids)}
    rows = sorted(by_item.items(), key=lambda kv: order.get(kv[0], len(order)))
    split = [(disagree(recs), order.get(item_id, 0) + 1, item_id, recs) for item_id, recs in rows]
    chosen = [s for s in split if s[0]] + ([] if only_disagreeing else [s for s in split if not s[0]])
    return [(item_label(n, sorted(recs, key=_mode_rank)), item_id) for _, n, item_id, recs in chosen]


def _mode_rank(record: dict[str, Any]) -> int:
    mode = str(record.get("mode"))
    return PANEL_MODES.index(mode) if mode in PANEL_MODES else len(PANEL_MODES)


def item_export(folder: BenchFolder, item_id: str) -> Path | None:
    """The item's traces as an export file (question, expected answer, every mode's first try), or None."""
    store = ResultStore(folder.out_dir)
    records = sorted((r for (i, _, attempt), r in store.load().items() if i == item_id and attempt == 1),
                     key=_mode_rank)
    traces = {str(r["mode"]): t for r in records if (t := store.load_trace(r)) is not None}
    if not traces:
        return None
    first = records[0]
    selection = mode_title(next(iter(traces))) if len(traces) == 1 else "All"
    question, expected = str(first.get("question") or ""), str(first.get("gold") or "")
    data = {"format": "think-act-react/run@1", "question": question, "selection": selection, "expected": expected,
            "settings": {**folder.settings, "backend": f"benchmark item {item_id}"},
            "traces": {m: t.to_dict() for m, t in traces.items()}}
    if folder.made is not None:  # the turn a follow-up continues, as the benchmark ran it
        data["turn"], data["followup"] = 1, block_for(None, question, traces, *folder.made, expected=expected or None)
    target = EXPORT_DIR / uuid.uuid4().hex[:12] / "benchmark-item.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(strict_json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return target


class BenchOpen:
    """The picker's handlers: list items after a benchmark, open one in the Compare tab (the page's lesson then
    shows it)."""

    def __init__(self, folders: RunFolders, outputs: Outputs, lessons: Lessons | None = None) -> None:
        self.folders, self.outputs = folders, outputs
        self.lessons = lessons if lessons is not None else Lessons()

    async def choices(self, only_disagreeing: bool = True, request: gr.Request | None = None) -> Any:
        folder = self.folders.get(session_of(request))
        if folder is None:
            return gr.Dropdown(choices=[], value=None, info=NOTHING)
        listed = await asyncio.to_thread(item_choices, folder, bool(only_disagreeing))
        info = (f"{len(listed)} item{'s' if len(listed) != 1 else ''}"
                + (" where the modes disagree" if only_disagreeing else " (disagreeing first)"))
        if not listed:  # the benchmark ran: say why the list is empty, never to run one
            info = NONE_DISAGREE if only_disagreeing else NONE_SAVED
        return gr.Dropdown(choices=listed, value=listed[0][1] if listed else None, info=info)

    async def open(self, item_id: Any, request: gr.Request | None = None) -> list:
        """The item's traces in the Compare panels, metrics and table (instant replay); or one line."""
        folder = self.folders.get(session_of(request))
        if folder is None or not isinstance(item_id, str) or not item_id:
            why = NOTHING if folder is None else "Pick an item of the benchmark first."
            return [*refusal(why).values(), *on_screen_unchanged()]
        try:
            path = await asyncio.to_thread(item_export, folder, item_id)
            if path is None:
                raise RecordingError("That item has no saved traces (its run folder expired, or it never finished).")
            recording = await open_recording(str(path))
        except RecordingError as exc:
            return [*refusal(str(exc)).values(), *on_screen_unchanged()]
        except (OSError, ValueError) as exc:  # a folder removed or a file cut mid-way: one line, logged
            log.exception("could not open benchmark item %r", item_id)
            return [*refusal(f"That item could not be read ({type(exc).__name__}).").values(), *on_screen_unchanged()]
        values, copy = await run_on_screen(recording, path, f"✔ Benchmark item {item_id}", "benchmark-item.json")
        model = folder.settings.get("model")
        self.lessons.of(request).show(Shown("benchmark", copy, (Turn(recording.question, recording.expected),),
                                            model=model if isinstance(model, str) else None))
        return values


def picker_layout() -> dict[str, gr.Component]:
    """Under the benchmark's results: the filter, the item list and the button (inside the Benchmark tab)."""
    with gr.Row(equal_height=True, elem_id="bench-picker"):
        only = gr.Checkbox(value=True, label="Only where the modes disagree", scale=1, elem_id="bench-disagree")
        item = gr.Dropdown([], label="Open an item's traces side by side", info=NOTHING, scale=4,
                           elem_id="bench-item")
        button = gr.Button("Open in Compare", scale=0, min_width=150, elem_id="bench-open")
    ended = gr.State(0)  # how many benchmarks this page ran: the list refreshes when it changes
    return {"only": only, "item": item, "open": button, "ended": ended}


def wire(handlers: BenchOpen, picker: dict[str, gr.Component], bench_event: Any, compare_outputs: list) -> None:
    """The list refreshes when a benchmark ends and when the filter changes; the button opens Compare.

    Both refreshes are one event, ``always_last``: a click on the filter as a benchmark ends waits for the
    refresh in flight, then lists with the box as it is. As two events (Chromium showed it), their answers
    could land in either order, and the list could say "where the modes disagree" under an unticked box."""
    # queued: Gradio reports a State's change (which fires .change) only for events that went through its queue
    bench_event.then(lambda ran: ran + 1, picker["ended"], picker["ended"], api_visibility="private",
                     show_progress="hidden")
    gr.on([picker["only"].change, picker["ended"].change], handlers.choices, picker["only"], picker["item"],
          trigger_mode="always_last", api_visibility="private", show_progress="hidden")
    picker["open"].click(None, js=SWITCH_TO_COMPARE, queue=False)
    picker["open"].click(handlers.open, picker["item"], compare_outputs, api_visibility="private",
                         show_progress="hidden")
