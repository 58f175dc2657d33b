"""What the Fork controls work on: the run on screen (:class:`Screen`), its forkable panels and observations.

Pure functions and plain data (no Gradio events), so ``tests/ui`` checks them directly. A screen is read from
the export of the run on screen (the page's lesson names it: the live run's, a fork's, a shared link's, a
benchmark item's, or the replayed file) or, for a paused stepping run, from its traces so far. The export is the
one source because it is what replays: a fork's export holds the original traces, the fork's trace (``react@2``,
``agents.modes.registry.fork_id``) and a ``fork`` block naming the panel that shows it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradio.utils import get_upload_folder

from agents.events import Action, Observation, Thought, Usage
from agents.fork import forkable_modes
from agents.modes.registry import forked_mode, mode_title
from agents.trace import Trace
from ui.core.batch import Batch
from ui.core.modes import BESIDE
from ui.recordings.export import EXPORT_DIR, json_of
from ui.recordings.reader import Recording, RecordingError, read_recording

MAX_FORK_FILE_BYTES = 5_000_000  # read in the app's process (a thread): a run's export is ~100 KB
MAX_EDIT_CHARS = 20_000
NEW_PANEL, IN_PLACE = "new", "in place"
WHERE = [("In a new panel", NEW_PANEL), ("In place", IN_PLACE)]
NOTHING = "Nothing to fork yet: run a question (or replay a saved run), then pick a panel and an observation."


@dataclass
class Screen(Recording):
    """The run on screen, as a recording: its traces by panel id (the modes on screen, at most one fork)."""

    def forkable(self) -> list[tuple[str, str]]:
        """(title, panel id) of the panels a fork can continue: the forkable modes on screen and a fork of one."""
        modes = {s.id for s in forkable_modes()}
        hidden = (self.fork or {}).get("panel")  # a panel showing its fork in place: its own run is hidden
        return [(mode_title(k) + (" (original)" if k == hidden else ""), k) for k in self.traces
                if base_mode(k) in modes]

    def trace_to_fork(self, panel: str) -> Trace:
        """That panel's trace under its mode's own id (a fork of ``react@2`` continues ReAct)."""
        trace = self.traces[panel]
        return Trace(base_mode(panel), trace.question or self.question, list(trace.events))


def base_mode(panel: str) -> str:
    """The mode a panel id runs: ``react`` for ``react`` and for its fork ``react@2``."""
    forked = forked_mode(panel)
    return forked[0] if forked else panel


def screen_of(recording: Any) -> Screen:
    """A loaded recording (``ui.recordings.reader.read_recording``, or a paused run's traces so far) as a
    screen."""
    return Screen(recording.question, recording.selection, dict(recording.traces), dict(recording.settings),
                  recording.expected, fork=recording.fork, previous=recording.previous)


def path_of(value: Any) -> str | None:
    """The ``.json`` export file among a File component's value (:func:`ui.recordings.export.json_of`), and only
    inside the app's export folder or Gradio's upload cache."""
    path = json_of(value)
    return path if path is not None and _allowed(path) else None


def _allowed(path: str) -> bool:
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(Path(root).resolve()) for root in (EXPORT_DIR, get_upload_folder()))


def load_screen(path: str) -> Screen:
    """The screen an export file holds; :class:`RecordingError` (one line) when it cannot be read."""
    try:
        stat = os.stat(path)
    except OSError:
        gone = "That run's file is gone (saved runs are kept for an hour): run or replay it again."
        raise RecordingError(gone) from None
    if stat.st_size > MAX_FORK_FILE_BYTES:
        raise RecordingError(f"That file is too large to fork here (over {MAX_FORK_FILE_BYTES // 1_000_000} MB).")
    return _load(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)  # a few visitors forking at once; each entry is one export
def _load(path: str, _mtime: int, _size: int) -> Screen:
    """Parsed once per file version: refresh, picking and forking all read the same export."""
    return screen_of(read_recording(Path(path)))


def choice_value(index: int, original: str) -> str:
    """A dropdown value naming observation ``index`` *and* its text, so a choice left over from another run
    is recognised (:func:`parse_choice`) instead of forking the wrong observation."""
    return f"{index}:{hashlib.sha1(original.encode()).hexdigest()[:10]}"


def parse_choice(value: Any) -> tuple[int, str] | None:
    """``"2:ab12…"`` → (2, "ab12…"); None when it is not such a value."""
    if not isinstance(value, str) or ":" not in value:
        return None
    index, digest = value.split(":", 1)
    return (int(index), digest) if index.isdigit() and len(index) < 6 else None


def edits_reasoning(trace: Trace) -> bool:
    """A fork of this trace edits its reasoning (a single chain of thought: Think-only), not an observation."""
    return base_mode(trace.mode) in {s.id for s in forkable_modes() if "reasoning" in s.options}


def observations(trace: Trace) -> list[tuple[str, str]]:
    """(label, text) of each observation of a tool-using trace, in fork order; a single chain of thought
    (Think-only) has one: its reasoning."""
    events = [e for _, e in trace.events]
    if edits_reasoning(trace):
        thoughts = [e.text for e in events if isinstance(e, Thought)]
        replies = [e.reply for e in events if isinstance(e, Usage) and e.reply]
        text = thoughts[-1] if thoughts else (replies[-1] if replies else None)
        return [] if text is None else [(f"step 1 · reasoning → {_words(text)}", text)]
    out, action, batch, step, number = [], None, None, 0, ""
    for event in events:
        if isinstance(event, Usage):  # a reply: its calls, when several ran at once, are one step ("3.2", as shown)
            batch = None
            if len(event.tool_calls) > 1:
                step += 1
                batch = Batch.of(event, step, None)  # type: ignore[arg-type]  # numbers only: no panel line
        elif isinstance(event, Action) and not event.nested:
            action = event
            if batch is not None and batch.left:
                number = batch.number(event)
            else:
                batch, step = None, step + 1
                number = str(step)
        elif isinstance(event, Observation) and not event.nested:  # a CodeAct call's result: its program's, not a step
            call = f"{event.tool}({_words(_args(action.input) if action else '', 40)})"
            out.append((f"step {number or len(out) + 1} · {call} → {_words(event.output)}", event.output))
    return out


def step_choices(trace: Trace) -> list[tuple[str, str]]:
    """The step dropdown's (label, value) pairs for a trace."""
    return [(label, choice_value(i, text)) for i, (label, text) in enumerate(observations(trace))]


def original_text(trace: Trace, index: int) -> str | None:
    found = observations(trace)
    return found[index][1] if 0 <= index < len(found) else None


def _args(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)


def _words(text: str, limit: int = 60) -> str:
    one_line = " ".join(str(text).split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def edit_problem(text: Any) -> str | None:
    """One line when the edited text cannot be sent to the model."""
    if not isinstance(text, str) or not text.strip():
        return "Type the edited text first (the fork continues from it)."
    if len(text) > MAX_EDIT_CHARS:
        return f"The edited text is {len(text):,} characters long; the limit is {MAX_EDIT_CHARS:,}."
    return None


def after_fork(screen: Screen, key: str, slot: str) -> tuple[dict[str, Trace], dict[str, str]]:
    """The traces the screen keeps beside a new fork ``key`` shown in ``slot`` (a mode's own panel, or
    :data:`~ui.core.modes.BESIDE`), and the panels showing a fork in place. One fork at a time: the earlier fork
    goes (its edits live on in the new fork's trace when it was forked again); every mode's own run stays."""
    kept = {k: t for k, t in screen.traces.items() if forked_mode(k) is None}
    return kept, ({slot: key} if slot != BESIDE else {})
