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
from pathlib import Path
from typing import Any

from ui.poll.rooms import NONE
from ui.recordings.export import to_json

MAX_EXPORT_BYTES = 20_000_000  # as a replayable recording


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
    return line + (f"; after discussion, {', '.join(later)}" if later else "") + "."


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
