"""Export a run (JSON + Markdown) and load one back for replay — no model, no network.

The JSON holds every event with its time offset (``Trace.to_dict``), the run settings and
the backend description; never a token. Replay merges the traces' events by offset and plays
them back at the original pace or faster, so a classroom whose wifi fails still sees the run.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agents.events import Event, event_from_dict
from agents.llm.settings import LLMSettings
from agents.modes.registry import mode_title
from agents.trace import Trace
from ui import recording
from ui.recording import MAX_REPLAY_BYTES, ReplayError
from ui.render import MODES, PANEL_MODES, agreement, comparison_markdown, comparison_rows

FORMAT = "think-act-react/run@1"
SPEEDS = {"1× (original pace)": 1.0, "2×": 2.0, "4×": 4.0, "instant": 0.0}
FRAME_S = 0.05  # token deltas within one frame of playback are merged into one event
EXPORT_DIR = Path(tempfile.gettempdir()) / "think-act-react-exports"
EXPORT_TTL_S = 3600.0
REPLAY_DIR = Path(tempfile.gettempdir()) / "think-act-react-replay"
_last_cleanup = 0.0


def backend_description(settings: LLMSettings) -> str:
    """``settings.describe()`` minus any credentials written into a URL (``//user:pass@host``)."""
    return settings.redact(re.sub(r"//[^/@\s]+@", "//", settings.describe()))


def run_settings(settings: LLMSettings, *, protocol: str, max_steps: int, temperature: float,
                 tools: Iterable[str]) -> dict[str, Any]:
    """What a reader of the export needs to reproduce the run (no token, ever)."""
    return {
        "model": settings.model,
        "backend": backend_description(settings),
        "provider": None if settings.base_url else settings.provider,
        "protocol": protocol,
        "max_steps": max_steps,
        "temperature": temperature,
        "tools": list(tools),
    }


def export_dict(question: str, selection: str, traces: dict[str, Trace], settings: dict[str, Any],
                started_at: float | None = None, stopped: bool = False) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "question": question,
        "selection": selection,
        "created_at": datetime.fromtimestamp(started_at or time.time(), timezone.utc).isoformat(timespec="seconds"),
        "stopped": stopped,
        "settings": settings,
        "elapsed_s": round(max((t.elapsed_s for t in traces.values()), default=0.0), 4),
        "comparison": {"rows": comparison_rows(traces), "agreement": agreement(traces)},
        "traces": {mode: trace.to_dict() for mode, trace in traces.items()},
    }


def export_markdown(data: dict[str, Any], traces: dict[str, Trace] | None = None) -> str:
    """A readable report: question, settings, comparison table, then each mode's transcript."""
    traces = traces if traces is not None else traces_from_export(data)
    s = data.get("settings", {})
    lines = [
        "# Think · Act · ReAct — run report",
        "",
        f"**Question:** {data.get('question', '')}",
        "",
        f"**Model:** {s.get('backend', s.get('model', '?'))} · protocol `{s.get('protocol', '?')}` · "
        f"max steps {s.get('max_steps', '?')} · temperature {s.get('temperature', '?')} · "
        f"tools: {', '.join(s.get('tools') or []) or 'none'}",
        f"**Date:** {data.get('created_at', '')}" + (" · stopped by the user" if data.get("stopped") else ""),
        "",
        "## Comparison",
        "",
        comparison_markdown(traces),
        "",
    ]
    for trace in traces.values():
        lines += [trace.to_markdown(), ""]
    return "\n".join(lines).rstrip() + "\n"


def write_exports(data: dict[str, Any], directory: Path | None = None,
                  traces: dict[str, Trace] | None = None) -> tuple[str, str]:
    """Write ``run-<time>.json`` (one event per line) and ``.md`` into a fresh folder; returns both paths."""
    base = directory or EXPORT_DIR
    _cleanup(base)
    folder = base / uuid.uuid4().hex[:12]
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    json_path, md_path = folder / f"run-{stamp}.json", folder / f"run-{stamp}.md"
    json_path.write_text(to_json(data), encoding="utf-8")
    md_path.write_text(export_markdown(data, traces), encoding="utf-8")
    return str(json_path), str(md_path)


def to_json(data: dict[str, Any]) -> str:
    """Compact JSON with one event per line: a quarter of the cost of ``indent=1``, still diffable."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace(',{"t":', ',\n{"t":')


def _cleanup(base: Path) -> None:
    """Drop export folders older than an hour (best effort: a Space's disk is small); every few minutes."""
    global _last_cleanup
    if not base.is_dir() or time.monotonic() - _last_cleanup < 300:
        return
    _last_cleanup = time.monotonic()
    cutoff = time.time() - EXPORT_TTL_S
    for child in base.iterdir():
        try:
            if child.is_dir() and child.stat().st_mtime < cutoff:
                shutil.rmtree(child, ignore_errors=True)
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Loading and replaying
# ---------------------------------------------------------------------------------------------


@dataclass
class Recording:
    """A run to replay: its traces (or, from :func:`open_recording`, empty traces plus the schedule file)."""

    question: str
    selection: str
    traces: dict[str, Trace]
    settings: dict[str, Any] = field(default_factory=dict)
    schedule_path: Path | None = None  # one ``[t, mode, event]`` per line, read lazily while playing

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


def traces_from_export(data: dict[str, Any]) -> dict[str, Trace]:
    raw = data.get("traces", {})
    items = raw.items() if isinstance(raw, dict) else ((t.get("mode", ""), t) for t in raw)
    return {str(mode): Trace.from_dict(t) for mode, t in items}


def _from_header(head: dict[str, Any], traces: dict[str, Trace]) -> Recording:
    question = str(head.get("question") or "")
    selection = str(head.get("selection") or (mode_title(next(iter(traces))) if len(traces) == 1 else "All"))
    return Recording(question, selection, traces, dict(head.get("settings") or {}))


def load_recording(source: str | Path | bytes) -> Recording:
    """Read an export (or a bare ``Trace.to_dict()`` / a list of them) for replay, in this process.

    For tests and small files; the app uses :func:`open_recording`, which parses in a worker.
    """
    if isinstance(source, bytes):
        text = source.decode("utf-8", errors="replace")
    elif isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith(("{", "["))):
        text = recording.read_text(source)
    else:
        text = source
    data = recording.parse(text)
    raw = recording.traces_of(data)
    try:
        traces = {mode: Trace.from_dict({**t, "mode": mode}) for mode, t in raw.items()}
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ReplayError(f"The traces in that file could not be read: {exc}") from None
    return _from_header(recording.header(data), traces)


async def open_recording(path: str, speed: str | float) -> Recording:
    """A recording checked and condensed for ``speed`` by a worker process (see ``ui/recording.py``).

    Token deltas are merged per frame of playback (all of them at "instant"), so replay costs a
    bounded amount per frame whatever the file holds; the caller must :meth:`Recording.discard` it.
    """
    factor = speed_factor(speed)
    window = math.inf if factor <= 0 else FRAME_S * factor
    REPLAY_DIR.mkdir(parents=True, exist_ok=True)
    out = REPLAY_DIR / f"{uuid.uuid4().hex}.jsonl"
    try:
        head = await recording.read_in_worker(path, window, out)
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
    """The hybrid mode a recording holds (shown in the fourth panel), if any."""
    return next((m for m in recording.traces if m not in MODES), None)


_HYBRID_KEY = re.compile(rb'"(react_cot_sc|cot_sc_react)"\s*:\s*\{|"mode"\s*:\s*"(react_cot_sc|cot_sc_react)"')


def hybrid_in_file(path: str) -> str | None:
    """The hybrid a recording file seems to hold, from a byte scan (no parse: the fourth panel opens at once)."""
    try:
        if Path(path).stat().st_size > MAX_REPLAY_BYTES:
            return None
        match = _HYBRID_KEY.search(Path(path).read_bytes())
    except OSError:
        return None
    return None if match is None else (match.group(1) or match.group(2)).decode()


def schedule(traces: dict[str, Trace]) -> list[tuple[float, str, Event]]:
    """All events of all traces ordered by their time offset (ties keep each trace's order)."""
    merged = [(t, i, mode, e) for mode, trace in traces.items() for i, (t, e) in enumerate(trace.events)]
    merged.sort(key=lambda x: (x[0], PANEL_MODES.index(x[2]) if x[2] in PANEL_MODES else 9, x[1]))
    return [(t, mode, e) for t, _, mode, e in merged]
