"""The one reader of a saved run (an export file): :class:`Recording` and its one error, :class:`RecordingError`.

A recording is untrusted input of up to 20 MB, so its types, sizes and nesting are checked before any of it is
shown. :func:`open_recording`, the app's way, parses, checks and condenses it in a worker process (``python -m
ui.recordings.reader``): a large parse holds that process's interpreter lock, not the app's.
:func:`read_recording` does the same in this process, for small files. Imports no Gradio, so the worker starts
quickly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.events import EVENT_TYPES, Event, event_from_dict
from agents.followup import Previous, recorded
from agents.llm.pricing import Price, PriceBook
from agents.modes.registry import forked_mode, mode_ids, mode_title
from agents.trace import Trace
from ui.core.modes import BESIDE, PANEL_MODES

MAX_REPLAY_BYTES = 20_000_000  # the upload limit (``app.launch_kwargs``) is the same
MAX_EVENTS = 500_000  # a 20 MB file holds at most ~550,000 of the smallest events
MAX_STEPS = 10_000  # events other than tokens: each one is a message in a panel
MAX_DEPTH = 32  # nesting inside a tool input or the settings block
MAX_GAP_S = 5.0  # at 1×, a pause in a recording lasts at most this long
WORKER_TIMEOUT_S = 60.0
WORKERS_AT_ONCE = 2  # parsers running at once (each may take a core for a second)
_STR = frozenset({"text", "tool", "thought", "output", "message", "reason", "by"})
_BOOL = frozenset({"is_error", "cached", "forced", "estimated", "code", "nested", "correct"})
_NUM = frozenset({"elapsed_s", "prompt_tokens", "completion_tokens", "n", "of"})
_CHANNELS = ("thought", "answer", "reasoning")
REPLAY_DIR = Path(tempfile.gettempdir()) / "think-act-react-replay"  # the worker's schedule files
_workers: asyncio.Semaphore | None = None
log = logging.getLogger(__name__)


class RecordingError(ValueError):
    """The file cannot be replayed; ``str(exc)`` is shown to the user."""


def read_text(source: str | Path) -> str:
    """The file's text, refusing what is missing or larger than :data:`MAX_REPLAY_BYTES`."""
    path = Path(source)
    if not path.is_file():
        raise RecordingError("Choose a JSON file exported from this app.")
    if path.stat().st_size > MAX_REPLAY_BYTES:
        raise RecordingError(f"That file is too large to replay (over {MAX_REPLAY_BYTES // 1_000_000} MB).")
    return path.read_text(encoding="utf-8", errors="replace")


def parse(text: str) -> dict[str, Any]:
    """JSON text → an export-shaped dict (``{"traces": ...}``), checked; every problem a :class:`RecordingError`."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordingError(f"That file is not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    except RecursionError:
        raise RecordingError("That file is nested too deeply to be a recording from this app.") from None
    if isinstance(data, list):
        data = {"traces": data}
    elif isinstance(data, dict) and "events" in data and "traces" not in data:
        data = {"traces": [data], "question": data.get("question", "")}
    if not isinstance(data, dict) or not data.get("traces"):
        raise RecordingError("No traces found: choose a JSON file exported from this app (⬇ Export).")
    check(data)
    return data


def check(data: dict[str, Any]) -> None:
    """Types, sizes and nesting of everything replay reads (a bad value must fail here, not mid-replay)."""
    for key in ("question", "selection"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise RecordingError(f"The recording's {key!r} must be text.")
    settings = data.get("settings")
    if settings is not None and not (isinstance(settings, dict) and _shallow(settings)):
        raise RecordingError("The recording's settings must be a small JSON object.")
    traces = data["traces"]
    items = (list(traces.items()) if isinstance(traces, dict) else list(enumerate(traces)) if isinstance(traces, list)
             else None)
    if items is None:
        raise RecordingError("The recording's traces must be a list or an object.")
    total = steps = 0
    for key, trace in items:
        if not isinstance(trace, dict) or not isinstance(trace.get("events", []), list):
            raise RecordingError(f"Trace {key} is not a trace exported from this app.")
        for name in ("mode", "question"):
            if trace.get(name) is not None and not isinstance(trace[name], str):
                raise RecordingError(f"Trace {key}: {name!r} must be text.")
        if trace.get("elapsed_s") is not None and not _number(trace["elapsed_s"]):
            raise RecordingError(f"Trace {key}: 'elapsed_s' must be a number of seconds.")
        events = trace.get("events", [])
        total += len(events)
        if total > MAX_EVENTS:
            raise RecordingError(f"That recording has more than {MAX_EVENTS:,} events; replay plays at most that many.")
        for number, event in enumerate(events, 1):
            _check_event(event, f"The traces in that file could not be read: trace {key}, event {number}")
            steps += event["kind"] != "token"
    if steps > MAX_STEPS:
        raise RecordingError(f"That recording has {steps:,} steps; replay shows at most {MAX_STEPS:,}.")


def _check_event(event: Any, where: str) -> None:
    if not isinstance(event, dict) or event.get("kind") not in EVENT_TYPES:
        kind = event.get("kind") if isinstance(event, dict) else None
        raise RecordingError(f"{where}: unknown event kind {str(kind)[:40]!r}.")
    if not _number(event.get("t", 0.0)):
        raise RecordingError(f"{where}: its time 't' must be a number of seconds.")
    for name, value in event.items():
        ok = (isinstance(value, str) if name in _STR else isinstance(value, bool) if name in _BOOL
              else _number(value) if name in _NUM else value in _CHANNELS if name == "channel"
              else isinstance(value, str) or (isinstance(value, dict) and _shallow(value)) if name == "input"
              else value is None or isinstance(value, str) if name == "answer"
              else True)
        if not ok:
            raise RecordingError(f"{where}: {name!r} has the wrong type or is nested too deeply.")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _shallow(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests at most ``limit`` levels (checked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True


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
        f.write(json.dumps(header(data), ensure_ascii=False) + "\n")
        for item in scheduled(data):
            f.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")


async def _header_from_worker(path: str, window: float, out: Path) -> dict[str, Any]:
    """Check and condense ``path`` in a child process, writing the schedule to ``out``; returns the header.

    A 20 MB parse holds an interpreter lock for most of a second: the child's, not this process's.
    """
    global _workers
    if _workers is None:
        _workers = asyncio.Semaphore(WORKERS_AT_ONCE)
    async with _workers:
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "ui.recordings.reader", str(path), repr(window), str(out),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
                cwd=str(Path(__file__).resolve().parents[2]))
        except OSError as exc:
            log.exception("cannot start the recording reader")
            why = f"The app could not start reading that file ({exc.strerror}); please try again."
            raise RecordingError(why) from None
        try:
            reply_text, _ = await asyncio.wait_for(proc.communicate(), WORKER_TIMEOUT_S)
        except (asyncio.TimeoutError, TimeoutError):
            raise RecordingError("Reading that file took too long; it cannot be replayed.") from None
        finally:
            if proc.returncode is None:  # cancelled (the visitor left) or timed out
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
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
    return Recording(question, selection, traces, dict(head.get("settings") or {}), expected, fork=fork,
                     previous=recorded(head.get("previous")))


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
    """``python -m ui.recordings.reader PATH WINDOW OUT``: the schedule into OUT; ``{"header"}`` or ``{"error"}``
    on stdout."""
    try:
        data = read_condensed(argv[0], float(argv[1]))
        write_schedule(data, Path(argv[2]))
        reply: dict[str, Any] = {"header": header(data)}
    except RecordingError as exc:
        reply = {"error": str(exc)}
    except (OSError, ValueError, MemoryError) as exc:
        reply = {"error": f"That file could not be read ({type(exc).__name__})."}
    sys.stdout.write(json.dumps(reply, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
