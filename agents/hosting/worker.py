"""Where live runs run: a :class:`RunWorker` starts runs from their specs and sends their events in batches.

Runs are hosted (:mod:`agents.hosting`) in a worker process (``python -m agents.hosting CMD_FD EVENT_FD``, so the
modes' HTTP streams use another core than the app's event loop) or, with the same code, in the app's process.
Commands come by run id; each run is a :class:`~agents.comparison.ComparisonRun` whose sink is the :class:`Outbox`.

A worker process holds secrets but none in its environment: it is non-dumpable from its first statement, and
takes the token variables from the app's first message (``SECRETS``).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from agents import gc_tuning
from agents.comparison import ComparisonRun
from agents.events import LLMError, TokenDelta
from agents.fork import fork_run
from agents.llm import abort
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.request import RunRequest
from agents.trace import Trace
from tools import children, default_registry, sandbox_wasm
from tools.hardening import make_non_dumpable
from tools.page_tools import PageTool, with_page_tools
from tools.registry import ToolRef, ToolRegistry, tool_from_ref

log = logging.getLogger(__name__)

FLUSH_S = 0.05  # a batch's age at most: the app shows frames every 0.1 s or more
CLOSED = "closed"  # payload of "this run is closed" (mode ""): its threads have ended
SECRETS = "secrets"  # the app's first message to a worker process: (SECRETS, {name: value})
Item = tuple[int, str, Any]  # (run id, mode, event | None for "the mode ended" | a (mode "") notice)


@dataclass
class RunSpec:
    """A run where a worker can start it: the request, and the backend it runs on. ``registry`` and
    ``model_factory`` are objects, for a run hosted in the app's own process; a worker process gets ``tools``
    (import references) and ``page_tools`` (data) instead."""

    request: RunRequest
    settings: LLMSettings
    tools: tuple[ToolRef, ...] | None = None
    registry: ToolRegistry | None = None
    max_output_chars: int | None = None
    fork: dict[str, Any] | None = None  # {"trace": Trace.to_dict(), "step": int, "text": str}
    model_factory: Callable[[LLMSettings], Any] | None = None
    page_tools: tuple[PageTool, ...] = ()  # tools written on the page, as data: made again here, after ``tools``

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.request.modes))


def coalesce(items: list[Item]) -> list[Item]:
    """Consecutive token deltas of one run's mode and channel as one: the same text, far fewer events.
    Each mode's own order is kept (modes are independent panels)."""
    out: list[Item] = []
    last: dict[tuple[int, str], int] = {}  # (run, mode) → index in out of its latest item
    for run_id, mode, event in items:
        key = (run_id, mode)
        at = last.get(key)
        if at is not None and isinstance(event, TokenDelta):
            previous = out[at][2]
            if isinstance(previous, TokenDelta) and previous.channel == event.channel:
                out[at] = (run_id, mode, TokenDelta(previous.text + event.text, event.channel))
                continue
        last[key] = len(out)
        out.append((run_id, mode, event))
    return out


class Outbox:
    """Items of every run of one worker, handed to ``send`` in batches.

    It sends what its runs produced every :data:`FLUSH_S` while anything arrives: one message for all runs,
    consecutive token deltas of a mode merged into one. So a token costs a list append where it is made, and the
    hop to the app costs per batch, not per token.
    """

    def __init__(self, send: Callable[[list[Item]], None], interval: float = FLUSH_S) -> None:
        self._send, self.interval = send, interval
        self._items: list[Item] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        threading.Thread(target=self._loop, name="outbox", daemon=True).start()

    def put(self, run_id: int, mode: str, event: Any) -> None:
        with self._lock:
            self._items.append((run_id, mode, event))
        if not self._wake.is_set():
            self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(self.interval)
            with self._lock:
                items, self._items = self._items, []
                self._wake.clear()
            if items:
                self._send(coalesce(items))


class RunWorker:
    """Starts runs from :class:`RunSpec`\\ s and acts on commands; every event goes to ``send`` through an Outbox."""

    def __init__(self, send: Callable[[list[Item]], None]) -> None:
        self.runs: dict[int, ComparisonRun] = {}
        self._ended: dict[int, int] = {}  # modes ended so far, per run
        self._registries: dict[tuple, ToolRegistry] = {}  # one per tool set: runs share its cache
        self._lock = threading.Lock()
        self.outbox = Outbox(self._deliver(send))

    def handle(self, message: tuple) -> None:
        """One command: ``("start", id, spec)``, ``("close", id)``, ``("step" | "resume" | "pause", id)``."""
        kind, run_id = message[0], message[1]
        if kind == "start":
            self._start(run_id, message[2])
            return
        with self._lock:
            run = self.runs.get(run_id)
        if kind == "close":
            threading.Thread(target=self._close, args=(run_id, run), name="close", daemon=True).start()
        elif run is not None and kind in ("step", "resume", "pause"):  # a step once per pause, here as in the app
            getattr(run, kind)()

    def close_all(self) -> None:
        with self._lock:
            runs = list(self.runs.values())
        for run in runs:
            run.cancel.set()
            run.close()

    def _start(self, run_id: int, spec: RunSpec) -> None:
        try:
            run = self._make(run_id, spec)
            with self._lock:
                self.runs[run_id] = run
            run.start()
        except Exception as exc:
            log.exception("run %d failed to start", run_id)
            for mode in spec.modes:
                self.outbox.put(run_id, mode, LLMError(f"internal error: the run could not start: {exc}"))
                self.outbox.put(run_id, mode, None)

    def _make(self, run_id: int, spec: RunSpec) -> ComparisonRun:
        registry = spec.registry or with_page_tools(self._registry(spec.tools or (), spec.max_output_chars),
                                                    spec.page_tools)
        builder = spec.model_factory
        if builder is None:
            builder = HFInferenceModel
        factory = lambda: builder(spec.settings)  # noqa: E731 - one fresh client per mode
        sink = lambda mode, event: self.outbox.put(run_id, mode, event)  # noqa: E731
        if spec.fork is not None:
            return fork_run(Trace.from_dict(spec.fork["trace"]), spec.fork["step"], spec.fork["text"],
                            registry=registry, config=spec.request.config(), model_factory=factory,
                            stepping=spec.request.stepping, sink=sink,
                            history={m: list(t) for m, t in spec.request.history.items()})
        return ComparisonRun.of(spec.request, factory, registry, sink=sink)

    def _registry(self, refs: tuple[ToolRef, ...], max_chars: int | None) -> ToolRegistry:
        key = (refs, max_chars)
        if key not in self._registries:
            registry = ToolRegistry([tool_from_ref(ref) for ref in refs])
            self._registries[key] = registry if max_chars is None else ToolRegistry(registry.tools, max_chars)
        return self._registries[key]

    def _close(self, run_id: int, run: ComparisonRun | None) -> None:
        try:
            if run is not None:
                run.close()
        except Exception:
            log.exception("closing run %d failed", run_id)
        self._forget(run_id)
        self.outbox.put(run_id, "", CLOSED)

    def _deliver(self, send: Callable[[list[Item]], None]) -> Callable[[list[Item]], None]:
        """``send``, after noting which runs' modes have all ended (such a run is forgotten)."""

        def deliver(batch: list[Item]) -> None:
            send(batch)
            for run_id, mode, event in batch:
                if event is None and mode:
                    with self._lock:
                        run = self.runs.get(run_id)
                        self._ended[run_id] = self._ended.get(run_id, 0) + 1
                        finished = run is not None and self._ended[run_id] >= len(run.modes)
                    if finished:
                        self._forget(run_id)

        return deliver

    def _forget(self, run_id: int) -> None:
        with self._lock:
            self.runs.pop(run_id, None)
            self._ended.pop(run_id, None)


def take_secrets(message: Any) -> None:
    """Put the variables of the app's first message, ``(SECRETS, {name: value})``, in this process's
    ``os.environ``, where huggingface_hub looks for a token as it did in the app. ``/proc/<pid>/environ`` shows
    the block the process started with, so they never appear there; the sandbox's processes get no environment."""
    kind, values = message if isinstance(message, tuple) and len(message) == 2 else (None, None)
    if kind != SECRETS or not isinstance(values, dict):
        raise ValueError(f"a worker's first message must be its secrets, not {type(message).__name__}")
    os.environ.update({str(k): str(v) for k, v in values.items()})


def main(argv: list[str]) -> None:
    """The worker process (``python -m agents.hosting CMD_FD EVENT_FD``): take the secrets the app sends first,
    then serve runs until the app closes the command pipe."""
    make_non_dumpable()  # before anything is read (the app's BOOT did it even before the imports)
    children.tidy_on_sigterm(sandbox_wasm.shutdown)  # asked to stop: its sandboxes and their folders go with it
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="run-worker: %(levelname)s %(name)s: %(message)s")
    commands = Connection(int(argv[0]), writable=False)
    events = Connection(int(argv[1]), readable=False)
    try:
        take_secrets(commands.recv())
    except (EOFError, OSError):
        os._exit(0)  # the app is gone
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print() must not reach the app

    def send(batch: list[Item]) -> None:
        try:
            events.send(batch)
        except (OSError, ValueError):
            os._exit(0)  # the app is gone
        except Exception:  # e.g. an event that cannot be pickled: end, so the app reports its runs cut off
            log.exception("could not send events to the app")
            os._exit(1)

    abort.batch_reads()  # live runs only: their frames hide the up to 50 ms a call's end waits for
    worker = RunWorker(send)
    default_registry()  # the tools' modules imported before the heap is set aside
    gc_tuning.settle()
    while True:
        try:
            message = commands.recv()
        except (EOFError, OSError):
            break  # the app is gone
        worker.handle(message)
    worker.close_all()
    sandbox_wasm.shutdown()  # os._exit runs no atexit hook: the spare sandbox and its folder go here
    os._exit(0)  # daemon threads (streams being cancelled) must not keep the worker alive

