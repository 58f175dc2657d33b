"""Load an exported run (``ui/recordings/export.py``) back for replay — no model, no network.

Replay merges the traces' events by offset and plays them back at the original pace or faster, so a classroom whose wifi fails still sees the run.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.events import Event, event_from_dict
from agents.modes.registry import mode_title
from agents.trace import Trace
from ui.core.modes import MODES, PANEL_MODES
from ui.recordings import reader
from ui.recordings.reader import MAX_REPLAY_BYTES, ReplayError

DEFAULT_SPEED = "1× (original pace)"
SPEEDS = {DEFAULT_SPEED: 1.0, "2×": 2.0, "4×": 4.0, "instant": 0.0}
FRAME_S = 0.05  # token deltas within one frame of playback are merged into one event
REPLAY_DIR = Path(tempfile.gettempdir()) / "think-act-react-replay"


@dataclass
class Recording:
    """A run to replay: its traces (or, from :func:`open_recording`, empty traces plus the schedule file)."""

    question: str
    selection: str
    traces: dict[str, Trace]
    settings: dict[str, Any] = field(default_factory=dict)
    expected: str | None = None  # the expected answer, if the run had one (older exports: none)
    schedule_path: Path | None = None  # one ``[t, mode, event]`` per line, read lazily while playing
    fork: dict[str, str] | None = None  # a teacher's fork: {"trace": "react@2", "panel": "react" | "fourth"}

    @property
    def slots(self) -> dict[str, str]:
        """Base panels that show a fork in place of their own run (``{"react": "react@2"}``)."""
        fork = self.fork or {}
        return {fork["panel"]: fork["trace"]} if fork.get("panel") in MODES else {}

    def events(self) -> Iterator[tuple[float, str, Event]]:
        """Every event in playing order: from the schedule file one line at a time, or from the traces."""
        if self.schedule_path is None:
            yield from schedule(self.traces)
            return
        with self.schedule_path.open(encoding="utf-8") as f:
            f.readline()  # the header
            for line in f:
                t, mode, data = json.loads(line)
                yield t, mode, event_from_dict(data)

    def discard(self) -> None:
        """Delete the schedule file (replay is over, or was never started)."""
        if self.schedule_path is not None:
            with contextlib.suppress(OSError):
                self.schedule_path.unlink()


def _from_header(head: dict[str, Any], traces: dict[str, Trace]) -> Recording:
    question = str(head.get("question") or "")
    selection = str(head.get("selection") or (mode_title(next(iter(traces))) if len(traces) == 1 else "All"))
    expected = head.get("expected") if isinstance(head.get("expected"), str) else None
    fork = head.get("fork") if isinstance(head.get("fork"), dict) else None
    return Recording(question, selection, traces, dict(head.get("settings") or {}), expected, fork=fork)


def load_recording(source: str | Path | bytes) -> Recording:
    """Read an export (or a bare ``Trace.to_dict()`` / a list of them) for replay, in this process.

    For tests and small files; the app uses :func:`open_recording`, which parses in a worker.
    """
    if isinstance(source, bytes):
        text = source.decode("utf-8", errors="replace")
    elif isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith(("{", "["))):
        text = reader.read_text(source)
    else:
        text = source
    data = reader.parse(text)
    raw = reader.traces_of(data)
    try:
        traces = {mode: Trace.from_dict({**t, "mode": mode}) for mode, t in raw.items()}
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ReplayError(f"The traces in that file could not be read: {exc}") from None
    return _from_header(reader.header(data), traces)


async def open_recording(path: str, speed: str | float) -> Recording:
    """A recording checked and condensed for ``speed`` by a worker process (see ``ui/recordings/reader.py``).

    Token deltas are merged per frame of playback (all of them at "instant"), so replay costs a
    bounded amount per frame whatever the file holds; the caller must :meth:`Recording.discard` it.
    """
    factor = speed_factor(speed)
    window = math.inf if factor <= 0 else FRAME_S * factor
    REPLAY_DIR.mkdir(parents=True, exist_ok=True)
    out = REPLAY_DIR / f"{uuid.uuid4().hex}.jsonl"
    try:
        head = await reader.read_in_worker(path, window, out)
    except BaseException:
        with contextlib.suppress(OSError):
            out.unlink()
        raise
    traces = {mode: Trace(mode, elapsed_s=float(elapsed)) for mode, elapsed in head["modes"].items()}
    rec = _from_header(head, traces)
    rec.schedule_path = out
    return rec


def speed_factor(speed: str | float) -> float:
    """A speed label (or a number) → playback factor; 0 plays instantly, anything unknown is 1×."""
    if isinstance(speed, str):
        return SPEEDS.get(speed, 1.0)
    try:
        value = float(speed)
    except (TypeError, ValueError):
        return 1.0
    return value if math.isfinite(value) and value >= 0 else 1.0


def hybrid_in(recording: Recording) -> str | None:
    """The mode a recording shows in the fourth panel, if any: a hybrid, or a fork made "in a new panel"."""
    shown_in_place = set(recording.slots.values())
    return next((m for m in recording.traces if m not in MODES and m not in shown_in_place), None)


_HYBRID_KEY = re.compile(rb'"(react_cot_sc|cot_sc_react)"\s*:\s*\{|"mode"\s*:\s*"(react_cot_sc|cot_sc_react)"'
                         rb'|"fork"\s*:\s*\{\s*"panel"\s*:\s*"fourth"\s*,\s*"trace"\s*:\s*"([a-z_]+@[0-9]+)"')


def hybrid_in_file(path: str) -> str | None:
    """The hybrid (or a fork shown in a new panel) a recording file seems to hold, from a byte scan (no parse:
    the fourth panel opens at once)."""
    try:
        if Path(path).stat().st_size > MAX_REPLAY_BYTES:
            return None
        match = _HYBRID_KEY.search(Path(path).read_bytes())
    except OSError:
        return None
    return None if match is None else (match.group(1) or match.group(2) or match.group(3)).decode()


def schedule(traces: dict[str, Trace]) -> list[tuple[float, str, Event]]:
    """All events of all traces ordered by their time offset (ties keep each trace's order)."""
    merged = [(t, i, mode, e) for mode, trace in traces.items() for i, (t, e) in enumerate(trace.events)]
    merged.sort(key=lambda x: (x[0], PANEL_MODES.index(x[2]) if x[2] in PANEL_MODES else 9, x[1]))
    return [(t, mode, e) for t, _, mode, e in merged]
