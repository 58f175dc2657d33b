"""Process-wide bookkeeping of model calls per server: a concurrency gate and who else is streaming.

Some local servers serve one request at a time and *abort* the one in flight when another
arrives (llama-cpp-python's server with its default ``interrupt_requests=True``). Two things
help with them, both per process and per server:

- :class:`Gate` — at most ``LLM_MAX_CONCURRENT`` calls in flight; the others wait their turn,
  first come first served, and a waiting call can be cancelled at once (the Stop button).
- :class:`OpenStreams` — which of our streams to a server are open, so a reply the server cut
  off while another of ours was open can be reported for what it probably was.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Callable


class Gate:
    """A fair counting semaphore whose waiters can be woken to re-check a cancel flag."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._busy = 0
        self._queue: collections.deque[object] = collections.deque()
        self._cond = threading.Condition()

    def try_acquire(self) -> bool:
        """Take a slot if one is free and nobody is queued; never blocks."""
        with self._cond:
            if self._busy < self.limit and not self._queue:
                self._busy += 1
                return True
            return False

    def acquire(self, cancelled: Callable[[], bool]) -> bool:
        """Wait for a slot in arrival order; False (without a slot) once ``cancelled()`` is true."""
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            try:
                while not (self._queue[0] is ticket and self._busy < self.limit):
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
            self._cond.notify_all()

    def wake(self) -> None:
        """Make every waiter re-check its cancel flag (called by a model's ``close()``)."""
        with self._cond:
            self._cond.notify_all()

    @property
    def in_flight(self) -> int:
        return self._busy


_gates: dict[tuple[str, int], Gate] = {}
_gates_lock = threading.Lock()


def gate_for(server: str, limit: int | None) -> Gate | None:
    """The process-wide gate for calls to ``server`` with this limit; None when unlimited."""
    if not limit:
        return None
    with _gates_lock:
        return _gates.setdefault((server, limit), Gate(limit))


class OpenStreams:
    """Our open streams per server, numbered in the order they were opened."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, set[int]] = collections.defaultdict(set)
        self._counter = itertools.count(1)
        self._latest: dict[str, int] = {}

    def opened(self, server: str) -> int:
        """Register a stream to ``server``; returns its ticket for :meth:`closed` and :meth:`crowded`."""
        with self._lock:
            ticket = next(self._counter)
            self._open[server].add(ticket)
            self._latest[server] = ticket
            return ticket

    def closed(self, server: str, ticket: int) -> None:
        with self._lock:
            self._open[server].discard(ticket)
            if not self._open[server]:
                del self._open[server]

    def crowded(self, server: str, ticket: int) -> bool:
        """True when another of our streams to ``server`` is open now or was opened after this one."""
        with self._lock:
            return bool(self._open.get(server, set()) - {ticket}) or self._latest.get(server, 0) > ticket


streams = OpenStreams()
