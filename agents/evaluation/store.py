"""Where a benchmark run keeps its results: ``results.jsonl`` plus one trace file per pair.

Each finished (item, mode) pair is one JSON line, appended under a lock and flushed at once,
so an interruption loses nothing that finished; its full trace goes to
``traces/<id>__<mode>.json`` first (a later try of the pair: ``<id>__<mode>__try<n>.json``), and the
line points at it. A record's ``try`` is 1 to k (the benchmark's tries per item); one without is try 1.
Reading back skips a torn last line (the process died mid-write) and truncates it, so the next append
starts on a clean line.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any

from agents import strict_json
from agents.trace import Trace

log = logging.getLogger(__name__)

RESULTS_FILE = "results.jsonl"
TRACES_DIR = "traces"
Key = tuple[str, str, int]  # (item id, mode, try)


def key_of(record: dict[str, Any]) -> Key:
    """A record's (item id, mode, try); a record written without a try is the pair's first."""
    return str(record["id"]), str(record["mode"]), int(record.get("try") or 1)


def trace_filename(item_id: str, mode: str, attempt: int = 1) -> str:
    """A safe, unique file name for a pair's try; ids with odd characters get a short hash to stay unique."""
    safe = re.sub(r"[^\w.-]", "_", item_id)[:80]
    if safe != item_id:
        safe += "-" + hashlib.sha1(item_id.encode()).hexdigest()[:8]
    return f"{safe}__{mode}.json" if attempt == 1 else f"{safe}__{mode}__try{attempt}.json"


class ResultStore:
    """Append-only results of one output folder; ``None`` folder keeps nothing on disk."""

    def __init__(self, out_dir: str | Path | None) -> None:
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self._lock = threading.Lock()
        if self.out_dir is not None:
            (self.out_dir / TRACES_DIR).mkdir(parents=True, exist_ok=True)

    @property
    def results_path(self) -> Path | None:
        return self.out_dir / RESULTS_FILE if self.out_dir else None

    def load(self) -> dict[Key, dict[str, Any]]:
        """Every saved record by (id, mode, try); a later line for the same try replaces an earlier one."""
        path = self.results_path
        if path is None or not path.exists():
            return {}
        self._repair(path)
        records: dict[Key, dict[str, Any]] = {}
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    records[key_of(record)] = record
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    log.warning("%s line %d is not a result; ignored", path, number)
        return records

    @staticmethod
    def _repair(path: Path) -> None:
        """Cut a torn last line (no newline: the writer died mid-line) so appends stay one per line."""
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            with path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def append(self, record: dict[str, Any], trace: Trace | None = None) -> dict[str, Any]:
        """Save the trace (atomically), then the record line pointing at it; returns the record as saved."""
        if self.out_dir is None:
            return record
        if trace is not None:
            name = trace_filename(*key_of(record))
            target = self.out_dir / TRACES_DIR / name
            tmp = target.with_suffix(".tmp")
            tmp.write_text(strict_json.dumps(trace.to_dict(), ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, target)
            record = {**record, "trace": f"{TRACES_DIR}/{name}"}
        line = strict_json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock, open(self.results_path, "a", encoding="utf-8") as f:  # type: ignore[arg-type]
            f.write(line)
            f.flush()
        return record

    def load_trace(self, record: dict[str, Any]) -> Trace | None:
        """The saved trace of a record (for the app's drill-down), or None."""
        if self.out_dir is None or not record.get("trace"):
            return None
        path = self.out_dir / record["trace"]
        return Trace.from_dict(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else None

    def write_meta(self, meta: dict[str, Any]) -> None:
        """Record what this folder was run with (dataset, modes, model, settings) for a later reader."""
        if self.out_dir is not None:
            text = strict_json.dumps(meta, indent=1, ensure_ascii=False)
            (self.out_dir / "meta.json").write_text(text, encoding="utf-8")
