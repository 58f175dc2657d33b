"""Worker processes for live runs (``APP_RUN_WORKERS`` of them): :class:`ProcessHost` and one :class:`_Worker` per
process — its command pipe, and one reader thread routing its batches (:data:`BOOT`, ``python -m agents.hosting``).

A worker is started by :func:`tools.children.start` with the engine's allow-listed variables
(:data:`tools.children.ENGINE`: never a secret), and makes itself non-dumpable before it imports the engine
(:data:`BOOT`). The Hugging Face token reaches it as the first
message on its command pipe (:func:`hub_tokens`); a run's own token travels in its spec's settings.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agents.hosting.host import Host, HostedRun
from agents.hosting.worker import SECRETS
from tools import children

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
WORKER_DIED = ("the app's run worker process stopped unexpectedly, so this mode was cut off — "
               "please run the question again")
# huggingface_hub reads these from the environment whenever a client was given no token of its own (its lookup of
# a model's inference providers, for one): a worker gets them from the app over its pipe, not in its environment.
HUB_TOKEN_NAMES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
# The worker's program: non-dumpable first, so nothing of it is readable while the engine's imports take ~0.4 s.
BOOT = ("import sys\n"
        "from tools.hardening import make_non_dumpable\n"
        "make_non_dumpable()\n"
        "from agents.hosting.worker import main\n"
        "main(sys.argv[1:])\n")


def worker_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """A worker's environment: the app's variables :data:`tools.children.ENGINE` admits (never a secret), with
    the app's code importable."""
    return children.environment(children.ENGINE, environ, _code_path(environ))


def _code_path(environ: Mapping[str, str]) -> dict[str, str]:
    """``PYTHONPATH`` with the app's folder first, so the worker imports the app's code."""
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), environ.get("PYTHONPATH", "")) if p)}


def hub_tokens(environ: Mapping[str, str]) -> dict[str, str]:
    """What the app sends a new worker first: its Hugging Face token variables (:data:`HUB_TOKEN_NAMES`)."""
    return {name: environ[name] for name in HUB_TOKEN_NAMES if environ.get(name)}


class _Worker:
    """One worker process, seen from the app: the command pipe, and the reader thread routing its batches."""

    def __init__(self, host: ProcessHost, index: int) -> None:
        self.host, self.index = host, index
        cmd_r, cmd_w = os.pipe()
        evt_r, evt_w = os.pipe()
        try:
            self.proc = children.start([sys.executable, "-c", BOOT, str(cmd_r), str(evt_w)], children.ENGINE,
                                       extra_env=_code_path(os.environ), pass_fds=(cmd_r, evt_w),
                                       stdin=subprocess.DEVNULL, cwd=ROOT)
        finally:
            os.close(cmd_r)
            os.close(evt_w)
        self.commands = Connection(cmd_w, readable=False)
        with contextlib.suppress(OSError):  # a worker that died at once: its reader sees the end and reports it
            self.commands.send((SECRETS, hub_tokens(os.environ)))  # first; read once the worker is non-dumpable
        self.events = Connection(evt_r, writable=False)
        self.lock = threading.Lock()  # guards alive and writes to the command pipe
        self.alive = True
        self.reader = threading.Thread(target=self._read, name=f"run-worker-{index}-reader", daemon=True)
        self.reader.start()

    def send(self, message: tuple) -> bool:
        """Send a command; False if the worker is gone or the message cannot travel."""
        with self.lock:
            if not self.alive:
                return False
            try:
                self.commands.send(message)
            except (OSError, pickle.PicklingError, AttributeError, TypeError):
                log.exception("run worker %d: could not send %s", self.index, message[0])
                return False
        return True

    def _read(self) -> None:
        try:
            while True:
                self.host.route(self.events.recv())
        except (EOFError, OSError):
            pass
        except Exception:
            log.exception("run worker %d: unreadable message", self.index)
        self._died()

    def _died(self) -> None:
        with self.lock:
            self.alive = False
        with contextlib.suppress(OSError):
            self.commands.close()
        with contextlib.suppress(OSError):
            self.events.close()
        if self.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(1.0)
        runs = self.host.orphans(self)
        if runs or not self.host.stopping:
            log.error("run worker %d ended (exit code %s); %d run(s) cut off", self.index, self.proc.poll(), len(runs))
        for run in runs:
            run.fail(WORKER_DIED)
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


class ProcessHost(Host):
    """The pool of worker processes (``APP_RUN_WORKERS`` of them), started on demand."""

    def __init__(self, workers: int) -> None:
        super().__init__()
        self.size = max(1, workers)
        self._workers: list[_Worker | None] = [None] * self.size
        self._pool_lock = threading.Lock()
        self.stopping = False

    def start(self) -> ProcessHost:
        """Start every worker now (the app calls this at launch, off the event loop)."""
        for i in range(self.size):
            self._worker(i)
        return self

    def pids(self) -> list[int]:
        with self._pool_lock:
            return [w.proc.pid for w in self._workers if w is not None and w.alive]

    @property
    def quick_submit(self) -> bool:
        """Every worker is running: a submit is a write to its command pipe (a dead one would be started first)."""
        with self._pool_lock:
            return all(w is not None and w.alive for w in self._workers)

    def submit(self, run: HostedRun) -> None:
        index = self._least_busy()
        for _ in range(2):  # a worker found dead is replaced once
            worker = self._worker(index)
            self._register(run, worker)
            if worker.send(("start", run.run_id, run.spec)):
                if run.closed:  # closed while it was being submitted: close() found nothing to cancel
                    worker.send(("close", run.run_id))
                return
            with self._lock:
                self._runs.pop(run.run_id, None)
        run.fail(WORKER_DIED)

    def orphans(self, dead: _Worker) -> list[HostedRun]:
        """Forget, and return, the runs a dead worker held."""
        with self._lock:
            ids = [run_id for run_id, (_, worker) in self._runs.items() if worker is dead]
            return [self._runs.pop(run_id)[0] for run_id in ids]

    def replace(self, dead: _Worker) -> None:
        """Called by a dead worker's reader: forget it, and start its successor unless we are stopping."""
        with self._pool_lock:
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
        with self._pool_lock:
            workers, self._workers = [w for w in self._workers if w is not None], [None] * self.size
        for worker in workers:
            worker.stop()

    def _send(self, worker: Any, message: tuple) -> bool:
        return worker.send(message)

    def _worker(self, index: int) -> _Worker:
        with self._pool_lock:
            worker = self._workers[index]
            if worker is None or not worker.alive:
                self.stopping = False
                worker = self._workers[index] = _Worker(self, index)
            return worker

    def _least_busy(self) -> int:
        with self._lock:
            held = collections.Counter(id(worker) for _, worker in self._runs.values())
        with self._pool_lock:
            loads = [held[id(w)] if w is not None else 0 for w in self._workers]
        return loads.index(min(loads))
