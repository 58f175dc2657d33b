"""A run's record: one JSON file per run of ``python -m bench`` in bench/results/, read by the performance page.

A record holds what the run was (its command, plan and each benchmark's command, the settings that change the app), what
it measured (the commit, and whether tracked files differed from it), when and where (the date in UTC, the
machine's cores, its speed probe and load average at the start and the end) and every benchmark's raw figures,
exactly as ``python -m bench --json`` prints them. A file is named ``DATE-COMMIT-PLAN.json``
(the UTC day, the short commit, the plan; ``-2``, ``-3`` for the same commit measured again that day), so the folder
lists in the order the runs were made. A run of part of a plan (``--only``) is marked ``-partial``: it is never
"a full run" of the page.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIR = ROOT / "bench" / "results"
FORMAT = "think-act-react/bench-run@1"
# the app's settings a run's figures depend on, recorded when set (no other variable: some hold secrets)
SETTINGS = ("APP_PATCHES_OFF", "APP_RUN_WORKERS", "APP_CONCURRENCY", "APP_QUEUE_SIZE", "APP_SESSION_TTL")
# what the page's own output may differ in from a commit without the code having changed
NOT_CODE = (":(exclude)bench/results", ":(exclude)docs/performance.md", ":(exclude)README.md")


class BadResults(ValueError):
    """A results file that cannot be read: its message is one line naming the file."""


def commit() -> tuple[str, bool]:
    """The checkout's commit, and whether tracked files (beyond the results and the pages made from them) differ
    from it; ``("unknown", False)`` outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=30)
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *NOT_CODE],
                                 cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown", False
    if head.returncode != 0:
        return "unknown", False
    return head.stdout.strip(), bool(changed.stdout.strip())


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def record(command: str, plan: str, benchmarks: dict, only: list[str] | None, results: dict, *, date: str,
           seconds: float, machine: dict) -> dict:
    """One run's record. ``machine``: ``cores``, ``speed_ms`` and ``load_average`` (each ``{"start", "end"}``)."""
    head, dirty = commit()
    return {
        "format": FORMAT, "command": command, "plan": plan, "only": only,
        "benchmarks": {name: shlex.join(["python", f"bench/bench_{script}.py", "--json", *flags])
                       for name, (script, flags) in benchmarks.items()},
        "settings": {k: os.environ[k] for k in SETTINGS if k in os.environ},
        "commit": head, "dirty": dirty, "date": date, "seconds": round(seconds),
        "machine": {**machine, "python": platform.python_version(), "platform": platform.platform()},
        "results": results,
    }


def is_full(run: dict) -> bool:
    """A run of the whole full plan: what the page's newest table and its runs side by side show."""
    return run["plan"] == "full" and not run.get("only")


def default_path(run: dict, folder: Path | None = None) -> Path:
    """``folder/DATE-COMMIT-PLAN.json`` (``folder``: :data:`DIR`), the first such name not taken."""
    folder = folder or DIR
    kind = run["plan"] + ("-partial" if run.get("only") else "")
    stem = f"{run['date'][:10]}-{run['commit'][:7]}-{kind}"
    path, n = folder / f"{stem}.json", 1
    while path.exists():
        n += 1
        path = folder / f"{stem}-{n}.json"
    return path


def write(run: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read(path: Path) -> dict:
    """One results file, with ``name`` (its file name) added; :class:`BadResults` if it is not one."""
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadResults(f"{path.name}: not a results file of python -m bench ({exc})") from None
    if not isinstance(run, dict) or run.get("format") != FORMAT:
        raise BadResults(f"{path.name}: not a results file of python -m bench (no \"format\": {FORMAT!r})")
    missing = [k for k in ("command", "plan", "commit", "date", "seconds", "machine", "results") if k not in run]
    if missing:
        raise BadResults(f"{path.name}: a results file without {', '.join(missing)}")
    return {**run, "name": path.name}


def load(folder: Path | None = None) -> list[dict]:
    """Every results file of ``folder`` (:data:`DIR`), oldest first (by the date each records, then by name)."""
    runs = [read(p) for p in sorted((folder or DIR).glob("*.json"))]
    return sorted(runs, key=lambda run: (run["date"], run["name"]))


def summary(run: dict) -> str:
    """One line: the command, the commit, the date, the machine (cores, load, speed) and the run's length."""
    m = run["machine"]
    speed, load = m["speed_ms"], m["load_average"]
    tree = " with uncommitted changes" if run.get("dirty") else ""
    return (f"`{run['command']}` of commit {run['commit'][:7]}{tree}, {run['date'][:10]}, {run['seconds']:.0f} s, "
            f"on {m['cores']} cores, load average {load['start']:.1f} → {load['end']:.1f}; machine speed "
            f"(`bench/report.speed_ms`, lower is faster) {speed['start']:.1f} → {speed['end']:.1f} ms")
