"""The one reader of a saved run (an export file): :class:`Recording` and its one error, :class:`RecordingError`.

A recording is untrusted input of up to 20 MB, so its types, sizes and nesting are checked before any of it is shown
(``ui/recordings/checks.py``).
:func:`open_recording` parses, checks and condenses it in a secret-free, non-dumpable worker (``python -m
ui.recordings.reader``, started by :func:`tools.children.start`), so a large parse holds that process's lock, not the
app's; :func:`read_recording` does it in this process, for small files. Imports no Gradio, so the worker starts fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import math
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents import strict_json
from agents.events import Event, event_from_dict
from agents.followup import Previous, recorded
from agents.llm.pricing import Price, PriceBook
from agents.modes.registry import forked_mode, mode_ids, mode_title
from agents.trace import Trace
from tools import children
from tools.hardening import make_non_dumpable
from ui.core.modes import BESIDE, PANEL_MODES
from ui.recordings.checks import RecordingError, check

MAX_REPLAY_BYTES = 20_000_000  # the upload limit (``app.launch_kwargs``) is the same
MAX_GAP_S = 5.0  # at 1×, a pause in a recording lasts at most this long
WORKER_TIMEOUT_S = 60.0
WORKERS_AT_ONCE = 2  # parsers running at once (each may take a core for a second)
REPLAY_DIR = Path(tempfile.gettempdir()) / "think-act-react-replay"  # the worker's schedule files
_workers: asyncio.Semaphore | None = None
log = logging.getLogger(__name__)


def read_text(source: str | Path) -> str:
    """The file's text, refusing what is missing or larger than :data:`MAX_REPLAY_BYTES`."""
    path = Path(source)
    if not path.is_file():
        raise RecordingError("Choose the file of a run saved from this app.")
    if path.stat().st_size > MAX_REPLAY_BYTES:
        raise RecordingError(f"That file is too large to replay (over {MAX_REPLAY_BYTES // 1_000_000} MB).")
    return path.read_text(encoding="utf-8", errors="replace")


def parse(text: str) -> dict[str, Any]:
    """JSON text → an export-shaped dict (``{"traces": ...}``), checked; every problem a :class:`RecordingError`."""
    try:
        data = strict_json.loads(text)
    except ValueError as exc:  # not JSON; or NaN, Infinity, 1e400, which only Python's own reader would take
        raise RecordingError(f"That file is not a saved run: it does not read ({strict_json.why(exc)}).") from None
    except RecursionError:
        raise RecordingError("That file is nested too deeply to be a recording from this app.") from None
    if isinstance(data, list):
        data = {"traces": data}
    elif isinstance(data, dict) and "events" in data and "traces" not in data:
        data = {"traces": [data], "question": data.get("question", "")}
    if not isinstance(data, dict) or not data.get("traces"):
        raise RecordingError("No traces found: choose the file of a run saved from this app.")
    check(data)
    return data


def condense(data: dict[str, Any], window: float) -> dict[str, Any]:
    """``data`` with each trace's runs of token deltas (one channel, within ``window`` s) merged.

    The merged event sits at the time of its last token, so no text appears earlier than it
    was written; ``window=inf`` merges every run (instant replay).
    """
    traces = data["traces"]
    items = traces.items() if isinstance(traces, dict) else enumerate(traces)
    out = {}
    for key, trace in items:
        merged: list[dict[str, Any]] = []
        start = 0.0
        for event in trace.get("events", []):
            last = merged[-1] if merged else None
            t = float(event.get("t", 0.0))
            if (event["kind"] == "token" and last is not None and last["kind"] == "token"
                    and last.get("channel", "thought") == event.get("channel", "thought") and t - start <= window):
                last["text"] += event.get("text", "")
                last["t"] = max(last["t"], t)
                continue
            if event["kind"] == "token":
                start = t
                event = {"kind": "token", "t": t, "text": event.get("text", ""),
                         "channel": event.get("channel", "thought")}
            merged.append(event)
        out[key] = {**trace, "events": merged, "summary": None}
    return {**data, "traces": out if isinstance(traces, dict) else list(out.values()), "comparison": None}


REPLAY_MODES = (*PANEL_MODES, *mode_ids("benchmark"))  # panel modes, then those with a table row only (CoT-SC)
OLD_BESIDE = "fourth"  # the panel beside, as exports before the mode picker named it (they replay as they were)


def traces_of(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The traces by mode, in panel order; modes this app does not show are refused."""
    raw = data["traces"]
    items = raw.items() if isinstance(raw, dict) else ((t.get("mode", ""), t) for t in raw)
    traces = {str(mode): trace for mode, trace in items}
    unknown = [m for m in traces if m not in REPLAY_MODES and forked_mode(m) is None]
    if unknown:
        raise RecordingError(f"Unknown mode(s) in the file: {', '.join(m[:40] for m in unknown)}.")
    forks = [m for m in traces if m not in REPLAY_MODES]  # a teacher's fork (ui/fork/accordion.py): after the panels
    return {m: traces[m] for m in (*REPLAY_MODES, *forks) if m in traces}


def fork_of(data: dict[str, Any]) -> dict[str, str] | None:
    """The export's ``fork`` block — which trace is a teacher's fork and which panel shows it (a mode's own, in
    place, or ``"beside"``, which exports before the mode picker spelled ``"fourth"``) — checked; None when there is
    none (older exports)."""
    block = data.get("fork")
    if block is None:
        return None
    panel, trace = (block.get("panel"), block.get("trace")) if isinstance(block, dict) else (None, None)
    if panel not in (*PANEL_MODES, BESIDE, OLD_BESIDE) or not isinstance(trace, str) or forked_mode(trace) is None:
        raise RecordingError("The recording's 'fork' must name a forked trace and the panel that shows it.")
    if trace not in traces_of(data):
        raise RecordingError(f"The recording's fork {trace[:40]!r} has no trace in the file.")
    return {"panel": panel, "trace": trace}


def header(data: dict[str, Any]) -> dict[str, Any]:
    """What replay shows besides the events: question, selection, settings, and each mode's elapsed time."""
    traces = traces_of(data)
    question = data.get("question") or next((t.get("question") for t in traces.values() if t.get("question")), "")
    expected = data.get("expected") if isinstance(data.get("expected"), str) else None  # absent in older exports
    return {"question": question, "selection": data.get("selection"), "settings": data.get("settings") or {},
            "expected": expected, "fork": fork_of(data),
            "previous": data.get("previous") if isinstance(data.get("previous"), dict) else None,
            "followup": data.get("followup") if isinstance(data.get("followup"), dict) else None,
            "evidence": data.get("evidence") if isinstance(data.get("evidence"), dict) else None,
            "modes": {m: float(t.get("elapsed_s") or max((float(e.get("t", 0)) for e in t.get("events", [])),
                                                         default=0.0))
                      for m, t in traces.items()},
            "prices": {m: t["price"] for m, t in traces.items() if isinstance(t.get("price"), dict)}}


def scheduled(data: dict[str, Any]) -> list[tuple[float, str, dict[str, Any]]]:
    """Every event of every trace by time offset (ties: panel order, then each trace's own order)."""
    merged = [(float(e.get("t", 0.0)), rank, i, mode, e)
              for rank, (mode, trace) in enumerate(traces_of(data).items())
              for i, e in enumerate(trace.get("events", []))]
    merged.sort(key=lambda x: x[:3])
    return [(t, mode, e) for t, _, _, mode, e in merged]


def read_condensed(source: str | Path, window: float = math.inf) -> dict[str, Any]:
    """Read, check and condense a recording in this process (the worker's job; tests and small files)."""
    return condense(parse(read_text(source)), window)


def write_schedule(data: dict[str, Any], out: Path) -> None:
    """The header, then one ``[t, mode, event]`` line per event in playing order: replay reads it lazily."""
    with out.open("w", encoding="utf-8") as f:
        f.write(strict_json.dumps(header(data), ensure_ascii=False) + "\n")
        for item in scheduled(data):
            f.write(strict_json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")


async def _header_from_worker(path: str, window: float, out: Path) -> dict[str, Any]:
    """Check and condense ``path`` in a child process (its lock, not ours, is held for most of a second on 20 MB),
    writing the schedule to ``out``; returns the header. Its reply is waited for in a thread (at most
    :data:`WORKERS_AT_ONCE`)."""
    global _workers
    if _workers is None:
        _workers = asyncio.Semaphore(WORKERS_AT_ONCE)
    async with _workers:
        try:
            proc = children.start([sys.executable, "-m", "ui.recordings.reader", str(path), repr(window), str(out)],
                                  children.PLAIN, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, cwd=str(Path(__file__).resolve().parents[2]))
        except OSError as exc:
            log.exception("cannot start the recording reader")
            why = f"The app could not start reading that file ({exc.strerror}); please try again."
            raise RecordingError(why) from None
        try:
            reply_text, _ = await asyncio.to_thread(proc.communicate, None, WORKER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            await asyncio.to_thread(proc.wait)
            raise RecordingError("Reading that file took too long; it cannot be replayed.") from None
        finally:
            if proc.poll() is None:  # cancelled (the visitor left): the thread's communicate ends and reaps it
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
    try:
        reply = json.loads(reply_text)
    except json.JSONDecodeError:
        raise RecordingError("That file could not be read (the reader stopped unexpectedly).") from None
    if "error" in reply:
        raise RecordingError(str(reply["error"]))
    return reply["header"]


@dataclass
class Recording:
    """A run to replay: its traces (or, from :func:`open_recording`, empty traces plus the schedule file)."""

    question: str
    selection: str
    traces: dict[str, Trace]
    settings: dict[str, Any] = field(default_factory=dict)
    expected: str | None = None  # the expected answer, if the run had one (older exports: none)
    schedule_path: Path | None = None  # one ``[t, mode, event]`` per line, read lazily while playing
    fork: dict[str, str] | None = None  # a teacher's fork: {"trace": "react@2", "panel": "react" | "beside"}
    previous: Previous | None = None  # a follow-up's earlier turns (agents/followup.py)
    followup: dict[str, Any] | None = None  # the sealed block a follow-up of this run continues (as recorded)
    evidence: dict[str, Any] | None = None  # evidence tests: rerun panel → {source, change, verdict} (checked)

    @property
    def slots(self) -> dict[str, str]:
        """Panels that show a fork in place of their own run (``{"react": "react@2"}``)."""
        fork = self.fork or {}
        return {fork["panel"]: fork["trace"]} if fork.get("panel") in PANEL_MODES else {}

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
    fork = dict(head["fork"]) if isinstance(head.get("fork"), dict) else None
    if fork is not None and fork.get("panel") == OLD_BESIDE:
        fork["panel"] = BESIDE
    previous = recorded(head.get("previous"))
    if previous is not None and expected is not None and not any("expected" in t for t in previous.turns):
        # written before each turn kept its own expected answer: the run's one answer was its first turn's
        previous = dataclasses.replace(previous, turns=({**previous.turns[0], "expected": expected},
                                                        *previous.turns[1:]))
        expected = None
    followup = head.get("followup") if isinstance(head.get("followup"), dict) else None
    return Recording(question, selection, traces, dict(head.get("settings") or {}), expected, fork=fork,
                     previous=previous, followup=followup,
                     evidence=dict(head["evidence"]) if isinstance(head.get("evidence"), dict) else None)


def read_recording(source: str | Path | bytes) -> Recording:
    """Read an export (or a bare ``Trace.to_dict()`` / a list of them) for replay, in this process.

    For tests and small files; the app uses :func:`open_recording`, which parses in a worker.
    """
    if isinstance(source, bytes):
        text = source.decode("utf-8", errors="replace")
    elif isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith(("{", "["))):
        text = read_text(source)
    else:
        text = source
    data = parse(text)
    return _from_header(header(data), traces_in(data))


def traces_in(data: dict[str, Any]) -> dict[str, Trace]:
    """A checked export's traces by panel id (:func:`parse` checked the shapes; this builds the traces)."""
    try:
        return {mode: Trace.from_dict({**t, "mode": mode}) for mode, t in traces_of(data).items()}
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise RecordingError(f"The traces in that file could not be read: {exc}") from None


async def open_recording(path: str, window: float = math.inf) -> Recording:
    """``path`` read, checked and condensed in a worker process: token deltas of one mode within ``window``
    seconds of the recording merged (``inf``: all of them), so playing it costs a bounded amount per frame
    whatever the file holds. The caller must :meth:`Recording.discard` it."""
    REPLAY_DIR.mkdir(parents=True, exist_ok=True)
    out = REPLAY_DIR / f"{uuid.uuid4().hex}.jsonl"
    try:
        head = await _header_from_worker(path, window, out)
    except BaseException:
        with contextlib.suppress(OSError):
            out.unlink()
        raise
    traces = {mode: Trace(mode, elapsed_s=float(elapsed), prices=saved_prices(head.get("prices", {}).get(mode)))
              for mode, elapsed in head["modes"].items()}
    rec = _from_header(head, traces)
    rec.schedule_path = out
    return rec


def saved_prices(price: Any) -> PriceBook | None:
    """A recorded run's own price (its export's ``price``), never the process's: none when it had none."""
    saved = Price.from_dict(price)
    return PriceBook(fixed=saved) if saved is not None else None


def schedule(traces: dict[str, Trace]) -> list[tuple[float, str, Event]]:
    """All events of all traces ordered by their time offset (ties keep each trace's order)."""
    merged = [(t, i, mode, e) for mode, trace in traces.items() for i, (t, e) in enumerate(trace.events)]
    merged.sort(key=lambda x: (x[0], PANEL_MODES.index(x[2]) if x[2] in PANEL_MODES else 9, x[1]))
    return [(t, mode, e) for t, _, mode, e in merged]


def _main(argv: list[str]) -> int:
    """``python -m ui.recordings.reader PATH WINDOW OUT``: the schedule into OUT; its header or error on stdout."""
    make_non_dumpable()  # a visitor's file is all it holds; no other process of the app's user reads it
    try:
        data = read_condensed(argv[0], float(argv[1]))
        write_schedule(data, Path(argv[2]))
        reply: dict[str, Any] = {"header": header(data)}
    except RecordingError as exc:
        reply = {"error": str(exc)}
    except (OSError, ValueError, MemoryError) as exc:
        reply = {"error": f"That file could not be read ({type(exc).__name__})."}
    sys.stdout.write(strict_json.dumps(reply, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
