"""The app's side of a hosted run: :class:`HostedRun` (the handle the UI polls) and :class:`Host` (runs by id,
and the routing of a worker's batches to them). :class:`LocalHost` hosts runs in the app's own process with the
same :class:`~agents.hosting.worker.RunWorker` a worker process uses."""

from __future__ import annotations

import collections
import itertools
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from agents.comparison import JOIN_TIMEOUT_S
from agents.events import Event, LLMError, Waiting
from agents.hosting.worker import CLOSED, Item, RunSpec, RunWorker
from agents.llm import gate
from agents.stepping import StepControls, StepState

log = logging.getLogger(__name__)
ACK_TIMEOUT_S = JOIN_TIMEOUT_S + 1.0  # the worker joins the run's threads for up to JOIN_TIMEOUT_S


class HostedRun(StepControls):
    """The app's handle on a hosted run: the interface of :class:`~agents.comparison.ComparisonRun`."""

    def __init__(self, spec: RunSpec, host: Host) -> None:
        self.spec, self.host = spec, host
        self.modes = list(spec.modes)
        self.run_id = 0
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()  # batches from the host
        self._buffer: collections.deque = collections.deque()
        self._remaining = len(self.modes)
        self._steps = StepState(self.modes)  # who waits and who has ended, from what the host delivered
        self._acked = threading.Event()
        self._state_lock = threading.Lock()
        self._started = self._closed = False
        self._notify: Callable[[bool], None] | None = None
        self._heard: set[str] = set()  # modes that have delivered anything

    def on_news(self, notify: Callable[[bool], None]) -> None:
        """Call ``notify(urgent)`` from the host's thread after each delivery (urgent: a mode's first event or its
        end), so a stream can sleep until there is something to show (ui/core/stream.py)."""
        self._notify = notify

    def start(self) -> HostedRun:
        with self._state_lock:
            closed, self._started = self._closed, not self._closed
        if closed:  # stopped before it started: nothing to run, every mode has ended
            self.deliver([(mode, None) for mode in self.modes])
            return self
        self.host.submit(self)
        return self

    @property
    def quick_start(self) -> bool:
        """``start()`` only hands the spec to a running worker process (no thread to start, no process to launch),
        so the event loop may call it itself (ui/core/stream.py) instead of waking a thread to do it."""
        return self.host.quick_submit

    @property
    def done(self) -> bool:
        return self._remaining == 0

    @property
    def closed(self) -> bool:
        """``close()`` was called (perhaps while the run was being submitted: the host then closes it itself)."""
        return self._closed

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

    def _control(self, kind: str) -> None:
        """Step control (:class:`~agents.stepping.StepControls`): a command to the worker, which acts on the run."""
        self.host.command(self, kind)

    def close(self) -> None:
        """Cancel every mode (closing their clients ends their streams) and wait, briefly, until the worker
        says the run's threads are gone."""
        with self._state_lock:
            started, self._closed = self._started, True
        if started and not self._acked.is_set() and self.host.cancel(self):
            self._acked.wait(ACK_TIMEOUT_S)

    @property
    def closed_in_worker(self) -> bool:
        """The worker said this run is closed (its threads joined, their streams ended) — or it died."""
        return self._acked.is_set()

    def deliver(self, items: list[tuple[str, Any]]) -> None:
        """Items from the host's thread: events, ends of modes, and the worker's notices (mode "")."""
        events = []
        urgent = False
        for mode, payload in items:
            if not mode:
                if payload == CLOSED:
                    self._acked.set()
                continue
            self._steps.add(mode, payload)
            if isinstance(payload, Waiting) and payload.learned:  # the worker found a one-at-a-time server:
                gate.learn(self.spec.settings.server_key())  # its next runs stay here, behind one gate (make_run)
            events.append((mode, payload))
            urgent = urgent or payload is None or mode not in self._heard
            self._heard.add(mode)
        if events:
            self._inbox.put(events)
            if self._notify is not None:
                try:
                    self._notify(urgent)
                except Exception:  # the listener's fault must not stop the host's routing (other runs' events)
                    log.exception("a run's news listener failed")
        if len(self._steps.ended) == len(self.modes):
            self._acked.set()  # every mode's thread has ended: a close() need not wait for the worker

    def fail(self, message: str) -> None:
        """The worker is gone: one error line and an end for every mode that has not ended."""
        items: list[tuple[str, Any]] = []
        for mode in self.modes:
            if mode not in self._steps.ended:
                items += [(mode, LLMError(message, "worker")), (mode, None)]
        self.deliver(items)
        self._acked.set()


class Host:
    """Runs by id, and the routing of a worker's batches to them; the transport is the subclass's."""

    def __init__(self) -> None:
        self._runs: dict[int, tuple[HostedRun, Any]] = {}  # run id → (run, the worker holding it)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def submit(self, run: HostedRun) -> None:
        raise NotImplementedError

    @property
    def quick_submit(self) -> bool:
        """:meth:`submit` takes no longer than a write to a pipe (see :attr:`HostedRun.quick_start`)."""
        return False

    def command(self, run: HostedRun, kind: str) -> bool:
        with self._lock:
            held = self._runs.get(run.run_id)
        return held is not None and self._send(held[1], (kind, run.run_id))

    def cancel(self, run: HostedRun) -> bool:
        """Ask the run's worker to close it; False when no worker has it (finished, or the worker died)."""
        return self.command(run, "close")

    def active_runs(self) -> int:
        with self._lock:
            return len(self._runs)

    def route(self, batch: list[Item]) -> None:
        """A worker's batch, to each run's buffer (called on the worker's reader or outbox thread)."""
        by_run: dict[int, list[tuple[str, Any]]] = {}
        for run_id, mode, payload in batch:
            by_run.setdefault(run_id, []).append((mode, payload))
        for run_id, items in by_run.items():
            with self._lock:
                held = self._runs.get(run_id)
            if held is None:
                continue
            held[0].deliver(items)
            if held[0].closed_in_worker:
                with self._lock:
                    self._runs.pop(run_id, None)

    def _register(self, run: HostedRun, worker: Any) -> None:
        run.run_id = next(self._ids)
        with self._lock:
            self._runs[run.run_id] = (run, worker)

    def _send(self, worker: Any, message: tuple) -> bool:
        raise NotImplementedError


class LocalHost(Host):
    """Runs in the app's own process: one :class:`RunWorker`, whose outbox hands batches straight to :meth:`route`."""

    def __init__(self) -> None:
        super().__init__()
        self.worker = RunWorker(self.route)

    def submit(self, run: HostedRun) -> None:
        self._register(run, self.worker)
        self.worker.handle(("start", run.run_id, run.spec))
        if run.closed:  # closed while it was being submitted: close() found nothing to cancel
            self.cancel(run)

    def _send(self, worker: Any, message: tuple) -> bool:
        worker.handle(message)
        return True
