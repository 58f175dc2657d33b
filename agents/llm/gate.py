"""Process-wide bookkeeping of model calls per server: a fair gate for calls, and who else is streaming.

Some local servers serve one request at a time and *close* the reply in flight when another arrives
(llama-cpp-python's server by default). Two things help with them, per process and per server:
:class:`Gate`, the calls in flight and a first-come-first-served line of those waiting (limit
``LLM_MAX_CONCURRENT``, or one once the server shows it serves one at a time), and :class:`OpenStreams`, which
of our streams are open, so a reply cut off while another was open is reported for what it probably was.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable

FORGET_AFTER_S = 600.0  # a one-at-a-time server idle this long may have been restarted with other settings


class Gate:
    """A fair counting semaphore with a limit (None: no limit until :meth:`learn`), whose waiters can be woken to
    re-check a cancel flag (the Stop button). A server left idle for :data:`FORGET_AFTER_S` is trusted again."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit  # the owner's LLM_MAX_CONCURRENT; None: automatic
        self._busy = 0
        self._queue: collections.deque[object] = collections.deque()
        self._cond = threading.Condition()
        self._learned = False  # the server serves one request at a time (automatic gates only)
        self._idle_since = time.monotonic()

    @property
    def one_at_a_time(self) -> bool:
        """The server was found to serve one request at a time, and has not been idle since for long."""
        with self._cond:
            return self._serial()

    @property
    def learned(self) -> bool:
        """:attr:`one_at_a_time` read without the lock (the watchdog's thread asks it, holding its own)."""
        return self._learned

    def _serial(self) -> bool:
        if self._learned and not self._busy and not self._queue and \
                time.monotonic() - self._idle_since > FORGET_AFTER_S:
            self._learned = False
        return self._learned

    def _cap(self) -> int | None:
        return self.limit or (1 if self._serial() else None)

    def learn(self) -> bool:
        """The server serves one request at a time: from now on one call at a time. True the first time (to say
        so once). An owner's limit (``LLM_MAX_CONCURRENT``) is never changed."""
        with self._cond:
            first = not self._serial()
            self._learned = True
            self._cond.notify_all()
            return first and not self.limit

    def forget(self) -> None:
        """Trust the server again (tests: a port the next test's stand-in may reuse)."""
        with self._cond:
            self._learned = False
            self._cond.notify_all()

    def _free(self) -> bool:
        cap = self._cap()
        return cap is None or self._busy < cap

    def try_acquire(self) -> bool:
        """Take a slot if one is free and nobody is queued; never blocks."""
        with self._cond:
            if self._free() and not self._queue:
                self._busy += 1
                return True
            return False

    def acquire(self, cancelled: Callable[[], bool]) -> bool:
        """Wait for a slot in arrival order; False (without a slot) once ``cancelled()`` is true."""
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            try:
                while not (self._queue[0] is ticket and self._free()):
                    if cancelled():
                        return False
                    self._cond.wait(1.0)  # woken by release()/wake(); the timeout is only a safety net
                if cancelled():
                    return False
                self._busy += 1
                return True
            finally:
                self._queue.remove(ticket)
                self._cond.notify_all()  # the next in line may go now

    def release(self) -> None:
        with self._cond:
            self._busy = max(0, self._busy - 1)
            if not self._busy:
                self._idle_since = time.monotonic()
            self._cond.notify_all()

    def wake(self) -> None:
        """Make every waiter re-check its cancel flag (called by a model's ``close()``)."""
        with self._cond:
            self._cond.notify_all()

    @property
    def in_flight(self) -> int:
        return self._busy

    @property
    def ahead(self) -> int:
        """Calls in flight and in line: what a call that joins the line now waits behind."""
        with self._cond:
            return self._busy + len(self._queue)


_gates: dict[tuple[str, int | None], Gate] = {}
_gates_lock = threading.Lock()


def gate_for(server: str, limit: int | None) -> Gate:
    """The process-wide gate for calls to ``server`` with this limit (None: automatic, see :meth:`Gate.learn`)."""
    with _gates_lock:
        return _gates.setdefault((server, limit), Gate(limit))


def one_at_a_time(server: str) -> bool:
    """Whether this process found ``server`` to serve one request at a time (and sends it one at a time)."""
    with _gates_lock:
        gate = _gates.get((server, None))
    return gate is not None and gate.one_at_a_time


def learn(server: str) -> bool:
    """What a worker process found, learned by this one too (``agents/hosting/host.py``); True the first time."""
    return gate_for(server, None).learn()


def forget() -> None:
    """Every server trusted again (tests only: one test's learning must not reach the next)."""
    with _gates_lock:
        gates = list(_gates.values())
    for gate in gates:
        gate.forget()


class OpenStreams:
    """Our open streams per server, numbered in the order they were opened, and when one last received a chunk."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, set[int]] = collections.defaultdict(set)
        self._counter = itertools.count(1)
        self._latest: dict[str, int] = {}
        self._met: set[int] = set()  # streams opened while another of ours to the same server was open
        self._beats: dict[str, float] = {}

    def opened(self, server: str) -> int:
        """Register a stream to ``server``; returns its ticket for :meth:`closed` and :meth:`crowded`."""
        with self._lock:
            ticket = next(self._counter)
            if self._open[server]:
                self._met.add(ticket)
            self._open[server].add(ticket)
            self._latest[server] = ticket
            return ticket

    def closed(self, server: str, ticket: int) -> None:
        with self._lock:
            self._open[server].discard(ticket)
            self._met.discard(ticket)
            if not self._open[server]:
                del self._open[server]

    def crowded(self, server: str, ticket: int) -> bool:
        """True when another of our streams to ``server`` is open now, was open when this one opened, or was
        opened after it."""
        with self._lock:
            return (bool(self._open.get(server, set()) - {ticket}) or ticket in self._met
                    or self._latest.get(server, 0) > ticket)

    def beat(self, server: str) -> None:
        """One of our streams to ``server`` received a chunk now (a dict write: no lock, one per chunk)."""
        self._beats[server] = time.monotonic()

    def last_beat(self, server: str) -> float | None:
        """When one of our streams to ``server`` last received a chunk (None: never)."""
        return self._beats.get(server)


streams = OpenStreams()
