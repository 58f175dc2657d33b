"""The poll's tallies kept with the run: a ``poll`` block added to the run's JSON export, and a line in its Markdown.

The export is this app's file for the run (``ui/recordings/export.py`` wrote it): a share stores it, and replay
reads it, ignoring keys it does not know, so the tallies travel with the run without a change to either. Only
counts are written (per round and choice, and each mode's mark): never a voter token, never the room's code. The
file is replaced whole (written beside it, then renamed), so a share reading it at that moment sees the old or
the new file, never half of one.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ui.poll.room import NONE
from ui.recordings.export import to_json

MAX_EXPORT_BYTES = 20_000_000  # as a replayable recording
TAIL_BYTES = 32_768  # the ``poll`` block is the export's last key, and small (5 rounds of 13 choices at most)
MAX_TEXT = 500
POLL_KEY = re.compile(r'"poll"\s*:\s*\{')


def record_of(room: dict[str, Any]) -> dict[str, Any]:
    """The room's counts as the export keeps them: the question, the choices with their titles, each round's
    counts and total, and the modes' marks when revealed."""
    titles = {m["id"]: m["title"] for m in room["modes"]}
    return {"question": room["question"], "choices": [{"id": c, "title": titles.get(c, "None of them")}
                                                      for c in room["choices"]],
            "rounds": [{"tally": dict(r["tally"]), "total": r["total"],
                        "right": {m: v.get("correct") for m, v in (r.get("reveal") or {}).items()}}
                       for r in room["rounds"]]}


def summary(record: dict[str, Any]) -> str:
    """"The class voted 7/0/5/0 (Think-only/Act-only/ReAct/none); after discussion 0/1/11/0." — one line."""
    ids = [c["id"] for c in record["choices"]]
    names = "/".join("none" if c["id"] == NONE else c["title"] for c in record["choices"])
    counts = ["/".join(str(r["tally"].get(i, 0)) for i in ids) for r in record["rounds"]]
    if not counts:
        return ""
    line = f"The class voted {counts[0]} ({names})"
    later = [f"round {n}: {c}" for n, c in enumerate(counts[1:], 2)]
    titles = {c["id"]: c["title"] for c in record["choices"]}
    marks = next((r["right"] for r in record["rounds"] if isinstance(r.get("right"), dict) and r["right"]), {})
    right = [titles.get(m, m) for m, ok in marks.items() if ok is True]
    return (line + (f"; after discussion, {', '.join(later)}" if later else "")
            + (f"; right: {', '.join(right) or 'none of the modes'}" if marks else "") + ".")


def keep_with_export(json_path: str | None, room: dict[str, Any]) -> bool:
    """Add (or replace) the ``poll`` block of the run's JSON export, and its line in the Markdown beside it; False
    when there is no such file or it does not read as an export."""
    if not json_path:
        return False
    path = Path(json_path)
    try:
        if path.stat().st_size > MAX_EXPORT_BYTES:
            return False
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or "traces" not in data:
        return False
    record = record_of(room)
    data["poll"] = record
    _replace(path, to_json(data))
    markdown = path.with_suffix(".md")
    try:
        text = markdown.read_text(encoding="utf-8").split("\n\n## Class poll\n")[0].rstrip("\n")
        _replace(markdown, f"{text}\n\n## Class poll\n\n{summary(record)}\n")
    except OSError:
        pass
    return True


def _replace(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.poll")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def record_in(json_path: str | None) -> dict[str, Any] | None:
    """The ``poll`` block of an export (a shared run's, a replayed file's), or None. Only the file's tail is read:
    :func:`keep_with_export` adds the block last, so a run's end costs one small read, not a parse of the run. The
    file may be anyone's: the block is checked before a line is made of it."""
    if not json_path:
        return None
    try:
        with open(json_path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read().decode("utf-8", errors="replace").rstrip()
    except OSError:
        return None
    found = [m.end() - 1 for m in POLL_KEY.finditer(tail)]
    if not found or not tail.endswith("}"):
        return None
    try:
        record = json.loads(tail[found[-1]:-1])
    except ValueError:
        return None
    return record if _well_formed(record) else None


def _well_formed(record: Any) -> bool:
    """A block as :func:`record_of` makes it: text ids and titles, whole counts, at most 5 rounds of 13 choices."""
    if not isinstance(record, dict) or not isinstance(record.get("choices"), list) \
            or not isinstance(record.get("rounds"), list) or not 0 < len(record["rounds"]) <= 5:
        return False
    choices = record["choices"]
    if not 0 < len(choices) <= 13 or not all(
            isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("title"), str)
            and len(c["id"]) + len(c["title"]) <= MAX_TEXT for c in choices):
        return False
    return all(isinstance(r, dict) and isinstance(r.get("tally"), dict) and all(
        isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 1_000_000 for n in r["tally"].values())
        for r in record["rounds"])
