"""Export a run (JSON + Markdown) and load one back for replay — no model, no network.

The JSON holds every event with its time offset (``Trace.to_dict``), the run settings and
the backend description; never a token. Replay merges the traces' events by offset and plays
them back at the original pace or faster, so a classroom whose wifi fails still sees the run.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agents.events import Event
from agents.llm.settings import LLMSettings
from agents.trace import MODE_TITLES, Trace
from ui.render import MODES, PANEL_MODES, agreement, comparison_markdown, comparison_rows

FORMAT = "think-act-react/run@1"
SPEEDS = {"1× (original pace)": 1.0, "2×": 2.0, "4×": 4.0, "instant": 0.0}
MAX_REPLAY_BYTES = 20_000_000
EXPORT_DIR = Path(tempfile.gettempdir()) / "think-act-react-exports"
EXPORT_TTL_S = 3600.0
_last_cleanup = 0.0


class ReplayError(ValueError):
    """The file cannot be replayed; ``str(exc)`` is shown to the user."""


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
    question: str
    selection: str
    traces: dict[str, Trace]
    settings: dict[str, Any] = field(default_factory=dict)


def traces_from_export(data: dict[str, Any]) -> dict[str, Trace]:
    raw = data.get("traces", {})
    items = raw.items() if isinstance(raw, dict) else ((t.get("mode", ""), t) for t in raw)
    return {str(mode): Trace.from_dict(t) for mode, t in items}


def load_recording(source: str | Path | bytes) -> Recording:
    """Read an export (or a bare ``Trace.to_dict()`` / a list of them) for replay."""
    if isinstance(source, bytes):
        text = source.decode("utf-8", errors="replace")
    elif isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith(("{", "["))):
        path = Path(source)
        if not path.is_file():
            raise ReplayError("Choose a JSON file exported from this app.")
        if path.stat().st_size > MAX_REPLAY_BYTES:
            raise ReplayError("That file is too large to replay (over 20 MB).")
        text = path.read_text(encoding="utf-8", errors="replace")
    else:
        text = source
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplayError(f"That file is not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    if isinstance(data, list):
        data = {"traces": data}
    elif isinstance(data, dict) and "events" in data and "traces" not in data:
        data = {"traces": [data], "question": data.get("question", "")}
    if not isinstance(data, dict) or not data.get("traces"):
        raise ReplayError("No traces found: choose a JSON file exported from this app (⬇ Export).")
    try:
        traces = traces_from_export(data)
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ReplayError(f"The traces in that file could not be read: {exc}") from None
    traces = {m: traces[m] for m in (*PANEL_MODES, *traces) if m in traces}  # panel order
    unknown = [m for m in traces if m not in PANEL_MODES]
    if unknown:
        raise ReplayError(f"Unknown mode(s) in the file: {', '.join(unknown)}.")
    question = str(data.get("question") or next((t.question for t in traces.values()), ""))
    selection = str(data.get("selection") or (MODE_TITLES[next(iter(traces))] if len(traces) == 1 else "All"))
    return Recording(question, selection, traces, dict(data.get("settings") or {}))


def hybrid_in(recording: Recording) -> str | None:
    """The hybrid mode a recording holds (shown in the fourth panel), if any."""
    return next((m for m in recording.traces if m not in MODES), None)


def schedule(traces: dict[str, Trace]) -> list[tuple[float, str, Event]]:
    """All events of all traces ordered by their time offset (ties keep each trace's order)."""
    merged = [(t, i, mode, e) for mode, trace in traces.items() for i, (t, e) in enumerate(trace.events)]
    merged.sort(key=lambda x: (x[0], PANEL_MODES.index(x[2]) if x[2] in PANEL_MODES else 9, x[1]))
    return [(t, mode, e) for t, _, mode, e in merged]
