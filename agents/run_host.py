"""Live Compare runs in worker processes, so the app's own process only renders frames and serves HTTP.

Why: on a 2-core Space the app process was CPU/GIL-bound — each streamed chunk costs ~0.8 ms of
Python (half of it huggingface_hub's typed parsing of the SSE chunk) and 50 visitors are ~150 mode
threads, so Gradio's event loop waited for the GIL behind them. One Python process uses one core;
the modes' threads now run in a worker (``python -m agents.run_worker``), the second core.

:class:`ProcessRun` has the interface of :class:`agents.comparison.ComparisonRun` (``start()``,
``poll(timeout)``, ``done``, ``close()`` from any thread). Inside the worker each run *is* a
``ComparisonRun`` (same retries, same cancel), whose events go into one outbox; one sender thread
ships them in batches (consecutive tokens of a mode merged) over a pipe. In the app, one reader
thread per worker feeds per-run buffers that the UI's poll drains — no thread per run. Only runs
the worker can rebuild from data go there: settings (picklable; the token travels over a pipe to
our own child) and tools named from the default registry; runs with injected Python objects stay
in-process (see :func:`make_run`). A worker that dies ends its runs with one clear error line per
unfinished mode and is started again.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import dataclasses
import itertools
import logging
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agents.comparison import JOIN_TIMEOUT_S, ComparisonRun
from agents.events import Event, LLMError
from agents.llm.settings import LLMSettings
from agents.modes import RunConfig
from agents.modes.registry import get_mode, mode_ids
from agents.settings import env_int
from tools.registry import ToolRegistry

log = logging.getLogger(__name__)

ENV = "APP_RUN_WORKERS"
DEFAULT_WORKERS = 2  # on 2 vCPUs, 50 visitors' streams outrun one worker's parsing (README, Measured)
MAX_WORKERS = 8
ROOT = Path(__file__).resolve().parents[1]
WORKER_DIED = ("the app's run worker process stopped unexpectedly, so this mode was cut off — "
               "please run the question again")
ACK_TIMEOUT_S = JOIN_TIMEOUT_S + 1.0  # the worker joins the run's threads for up to JOIN_TIMEOUT_S
CLOSED = "closed"  # payload of the worker's "this run is closed" acknowledgement (mode "")


_defaults: dict[str, Any] | None = None  # the default registry's tools by name (they are module-level objects)


def workers_from_env(environ: dict[str, str] | None = None) -> int:
    """``APP_RUN_WORKERS``: worker processes for live runs (0: run them in the app's process); a bad
    value is a one-line :class:`~agents.settings.SettingError` (``app.main`` checks it at start-up)."""
    return env_int(ENV, DEFAULT_WORKERS, 0, MAX_WORKERS, environ)


def default_tool_names(registry: ToolRegistry) -> tuple[str, ...] | None:
    """The registry's tool names if every tool is the default registry's own (so a worker can rebuild
    it by name); None when it holds anything else (a test's fake tool)."""
    global _defaults
    if _defaults is None:
        from tools import default_registry

        _defaults = {t.name: t for t in default_registry().tools}
    if any(_defaults.get(t.name) is not t for t in registry.tools):
        return None
    return tuple(registry.names)


def make_run(question: str, modes: Iterable[str], settings: LLMSettings, registry: ToolRegistry, config: RunConfig,
             model_factory: Callable[[LLMSettings], Any] | None = None, *,
             stepping: bool = False) -> ComparisonRun | ProcessRun:
    """The live run for the UI: in a worker process when workers are on and the run is made of defaults
    (no injected model factory, tools from the default registry); otherwise in this process. A
    ``stepping`` run is always made here: its step/resume controls act on its threads directly. So is
    a run under ``LLM_MAX_CONCURRENT``: the gate is per process, and the Benchmark tab, forks, stepping
    runs and the MCP tool call the model from this one, so only here does one gate see every call."""
    in_worker = model_factory is None and not stepping and not settings.max_concurrent
    names = default_tool_names(registry) if in_worker else None
    if names is not None and workers_from_env() > 0:
        return ProcessRun(question, modes, settings=settings, tools=names, config=config)
    return ComparisonRun(question, modes, model_factory=_models(settings, model_factory), registry=registry,
                         config=config, stepping=stepping)


def make_fork(trace: Any, step_index: int, text: str, settings: LLMSettings, registry: ToolRegistry,
              config: RunConfig, model_factory: Callable[[LLMSettings], Any] | None = None) -> ComparisonRun:
    """A teacher's fork (``agents/fork.py``) as an unstarted one-mode run, with the model made as for
    :func:`make_run`; always in this process (the trace is a Python object). ValueError before anything runs."""
    from agents.fork import fork_run

    return fork_run(trace, step_index, text, registry=registry, config=config,
                    model_factory=_models(settings, model_factory))


def _models(settings: LLMSettings, builder: Callable[[LLMSettings], Any] | None) -> Callable[[], Any]:
    """The run's model factory: ``builder`` (a test's) or the real client, made with ``settings``."""
    if builder is None:
        from agents.llm.hf import HFInferenceModel

        builder = HFInferenceModel
    return lambda: builder(settings)


class ProcessRun:
    """A :class:`ComparisonRun` living in a worker process, with the same interface."""

    def __init__(self, question: str, modes: Iterable[str] | None = None, *, settings: LLMSettings,
                 tools: Iterable[str] | None = None, config: RunConfig | None = None,
                 host: RunHost | None = None) -> None:
        self.modes = list(dict.fromkeys(mode_ids("base") if modes is None else modes))
        for mode in self.modes:
            get_mode(mode)  # a clear ValueError naming the known modes
        config = config or RunConfig()
        fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name != "cancel"}
        self.spec = {"question": question, "modes": self.modes, "settings": settings,
                     "tools": None if tools is None else list(tools), "config": fields}
        self.host = host or default_host()
        self.run_id = 0
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()  # batches from the host's reader thread
        self._buffer: collections.deque = collections.deque()
        self._remaining = len(self.modes)
        self._ended: set[str] = set()  # modes whose end the reader has delivered (reader thread only)
        self._acked = threading.Event()
        self._state_lock = threading.Lock()
        self._started = self._closed = False

    def start(self) -> ProcessRun:
        with self._state_lock:
            closed, self._started = self._closed, not self._closed
        if closed:  # stopped before it started: nothing to run, every mode has ended
            self._deliver([(mode, None) for mode in self.modes])
            return self
        self.host.submit(self)
        return self

    @property
    def done(self) -> bool:
        return self._remaining == 0

    def poll(self, timeout: float | None = None) -> tuple[str, Event] | None:
        """The next ``(mode, event)``, or None if none came within ``timeout`` or all modes are done."""
        while not self.done:
            if not self._buffer:
                try:
                    batch = self._inbox.get_nowait() if timeout == 0 else self._inbox.get(timeout=timeout)
                except queue.Empty:
                    return None
                self._buffer.extend(batch)
                continue
            mode, event = self._buffer.popleft()
            if event is None:
                self._remaining -= 1
                continue
            return mode, event
        return None

    def close(self) -> None:
        """Cancel every mode in the worker (closing their clients ends their streams) and wait, briefly,
        until the worker says the run's threads are gone."""
        with self._state_lock:
            started, self._closed = self._started, True
        if started and not self._acked.is_set() and self.host.cancel(self):
            self._acked.wait(ACK_TIMEOUT_S)

    @property
    def closed_in_worker(self) -> bool:
        """The worker said this run is closed (its threads joined, their streams ended) — or it died."""
        return self._acked.is_set()

    # --- called by the host's reader thread ---
    def _deliver(self, items: list[tuple[str, Any]]) -> None:
        for mode, payload in items:
            if payload is None:
                self._ended.add(mode)
        self._inbox.put(items)

    def _fail(self, message: str) -> None:
        """The worker is gone: one error line and an end for every mode that has not ended."""
        items: list[tuple[str, Any]] = []
        for mode in self.modes:
            if mode not in self._ended:
                items += [(mode, LLMError(message, "worker")), (mode, None)]
        self._deliver(items)
        self._acked.set()


class _Worker:
    """One worker process, seen from the app: the command pipe, and the reader thread feeding runs."""

    def __init__(self, host: RunHost, index: int) -> None:
        self.host, self.index = host, index
        cmd_r, cmd_w = os.pipe()
        evt_r, evt_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "agents.run_worker", str(cmd_r), str(evt_w)],
                                         pass_fds=(cmd_r, evt_w), stdin=subprocess.DEVNULL, env=env, cwd=ROOT)
        finally:
            os.close(cmd_r)
            os.close(evt_w)
        self.commands = Connection(cmd_w, readable=False)
        self.events = Connection(evt_r, writable=False)
        self.runs: dict[int, ProcessRun] = {}
        self.lock = threading.Lock()  # guards runs, alive and writes to the command pipe
        self.alive = True
        self.reader = threading.Thread(target=self._read, name=f"run-worker-{index}-reader", daemon=True)
        self.reader.start()

    def send(self, message: tuple, run: ProcessRun | None = None) -> bool:
        """Send a command (registering ``run`` first); False if the worker is gone."""
        with self.lock:
            if not self.alive:
                return False
            if run is not None:
                self.runs[run.run_id] = run
            try:
                self.commands.send(message)
            except OSError:
                return False
        return True

    def _read(self) -> None:
        try:
            while True:
                batch = self.events.recv()
                by_run: dict[int, list] = {}
                for run_id, mode, payload in batch:
                    by_run.setdefault(run_id, []).append((mode, payload))
                for run_id, items in by_run.items():
                    self._route(run_id, items)
        except (EOFError, OSError):
            pass
        except Exception:
            log.exception("run worker %d: unreadable message", self.index)
        self._died()

    def _route(self, run_id: int, items: list[tuple[str, Any]]) -> None:
        with self.lock:
            run = self.runs.get(run_id)
        if run is None:
            return
        acked = any(mode == "" for mode, _ in items)
        items = [item for item in items if item[0] != ""]
        if items:
            run._deliver(items)
        if acked or len(run._ended) == len(run.modes):  # every mode's thread has ended, or the worker closed it
            with self.lock:
                self.runs.pop(run_id, None)
            run._acked.set()  # a close() waiting for the acknowledgement need not: it would find no run any more

    def _died(self) -> None:
        with self.lock:
            self.alive = False
            runs, self.runs = list(self.runs.values()), {}
        with contextlib.suppress(OSError):
            self.commands.close()
        with contextlib.suppress(OSError):
            self.events.close()
        if self.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(1.0)
        if runs or not self.host.stopping:
            log.error("run worker %d ended (exit code %s); %d run(s) cut off", self.index, self.proc.poll(), len(runs))
        for run in runs:
            run._fail(WORKER_DIED)
        self.host.replace(self)

    def stop(self) -> None:
        with self.lock:
            self.alive = False
        with contextlib.suppress(OSError):
            self.commands.close()  # the worker's command loop sees EOF and exits
        try:
            self.proc.wait(2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.reader is not threading.current_thread():
            self.reader.join(2.0)


class RunHost:
    """The pool of worker processes for live runs (``APP_RUN_WORKERS`` of them), started on demand."""

    def __init__(self, workers: int | None = None) -> None:
        self.size = max(1, workers if workers is not None else workers_from_env())
        self._workers: list[_Worker | None] = [None] * self.size
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.stopping = False

    def start(self) -> RunHost:
        """Start every worker now (the app calls this at launch, off the event loop)."""
        for i in range(self.size):
            self._worker(i)
        return self

    def pids(self) -> list[int]:
        with self._lock:
            return [w.proc.pid for w in self._workers if w is not None and w.alive]

    def active_runs(self) -> int:
        """Runs the workers hold now (started, not yet ended or closed)."""
        with self._lock:
            workers = [w for w in self._workers if w is not None]
        return sum(len(w.runs) for w in workers)

    def submit(self, run: ProcessRun) -> None:
        index = self._least_busy()
        run.run_id = next(self._ids)
        for _ in range(2):  # a worker found dead is replaced once
            worker = self._worker(index)
            if worker.send(("start", run.run_id, run.spec), run):
                if run._closed:  # closed while it was being submitted: close() found nothing to cancel
                    worker.send(("close", run.run_id))
                return
        run._fail(WORKER_DIED)

    def cancel(self, run: ProcessRun) -> bool:
        """Ask the run's worker to close it; False when no worker has it (finished, or the worker died)."""
        with self._lock:
            workers = [w for w in self._workers if w is not None]
        for worker in workers:
            with worker.lock:
                has = run.run_id in worker.runs
            if has:
                return worker.send(("close", run.run_id))
        return False

    def replace(self, dead: _Worker) -> None:
        """Called by a dead worker's reader: forget it, and start its successor unless we are stopping."""
        with self._lock:
            if self._workers[dead.index] is dead:
                self._workers[dead.index] = None
        if not self.stopping:
            try:
                self._worker(dead.index)
            except OSError:
                log.exception("could not restart run worker %d", dead.index)

    def stop(self) -> None:
        """End every worker (their runs' streams close with them)."""
        self.stopping = True
        with self._lock:
            workers, self._workers = [w for w in self._workers if w is not None], [None] * self.size
        for worker in workers:
            worker.stop()

    def _worker(self, index: int) -> _Worker:
        with self._lock:
            worker = self._workers[index]
            if worker is None or not worker.alive:
                self.stopping = False
                worker = self._workers[index] = _Worker(self, index)
            return worker

    def _least_busy(self) -> int:
        with self._lock:
            loads = [len(w.runs) if w is not None else 0 for w in self._workers]
        return loads.index(min(loads))


_default: RunHost | None = None
_default_lock = threading.Lock()


def default_host() -> RunHost:
    """The process's one pool, made on first use and stopped at exit."""
    global _default
    with _default_lock:
        if _default is None:
            _default = RunHost()
            atexit.register(_default.stop)
        return _default


def start_default_host() -> None:
    """Start the workers ahead of the first run (when workers are on); for the app's launch."""
    if workers_from_env() > 0:
        default_host().start()
