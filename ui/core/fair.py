"""A few places for the whole app, shared fairly among visitors: :class:`FairGate`.

A plain semaphore serves its waiters first come, first served, so one crowd's backlog (hundreds of requests from a
few addresses) delays every later visitor by the whole backlog. Here each visitor has a line of its own; when a
place frees it goes to the waiting visitor with the fewest places held, and among those to the one served least
recently — a visitor with nothing under way counts as never served — so a newcomer waits at most for a place to
free, whatever the crowd has queued. A visitor may have at most ``per_visitor`` requests waiting or held.
Everything runs on the event loop (no locks): it is for ``async`` handlers only.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
from collections.abc import AsyncIterator


class GateFull(Exception):
    """This visitor already has its most requests waiting or held."""


class FairGate:
    """At most ``at_once`` holders in all and ``per_visitor`` requests (waiting or holding) per visitor."""

    def __init__(self, at_once: int, per_visitor: int) -> None:
        self.at_once, self.per_visitor = int(at_once), int(per_visitor)
        self._held = 0
        self._held_by: collections.Counter[str] = collections.Counter()
        self._pending_by: collections.Counter[str] = collections.Counter()  # waiting or holding
        self._lines: dict[str, collections.deque[asyncio.Future[None]]] = {}
        self._served: dict[str, int] = {}  # visitor → when it was last given a place (a tick), while it has pending
        self._ticks = itertools.count()

    def waiting(self) -> int:
        """Requests waiting for a place (for tests and logs)."""
        return sum(len(line) for line in self._lines.values())

    @contextlib.asynccontextmanager
    async def hold(self, visitor: str) -> AsyncIterator[None]:
        """Wait for a place (fairly), hold it for the ``async with`` block; :class:`GateFull` at once when this
        visitor already has ``per_visitor`` requests waiting or holding."""
        if self._pending_by[visitor] >= self.per_visitor:
            raise GateFull(visitor)
        self._pending_by[visitor] += 1
        try:
            await self._acquire(visitor)
            try:
                yield
            finally:
                self._release(visitor)
        finally:
            self._pending_by[visitor] -= 1
            if self._pending_by[visitor] <= 0:
                del self._pending_by[visitor]
                self._served.pop(visitor, None)  # nothing under way: next time it counts as a newcomer

    async def _acquire(self, visitor: str) -> None:
        place: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._lines.setdefault(visitor, collections.deque()).append(place)
        self._grant()  # a free place is given at once (to this request, unless someone else waits)
        try:
            await place
        except asyncio.CancelledError:
            if place.done() and not place.cancelled():  # given a place just as it was cancelled: pass it on
                self._release(visitor)
            else:
                self._forget(visitor, place)
            raise

    def _take(self, visitor: str) -> None:
        self._held += 1
        self._held_by[visitor] += 1
        self._served[visitor] = next(self._ticks)

    def _release(self, visitor: str) -> None:
        self._held -= 1
        self._held_by[visitor] -= 1
        if self._held_by[visitor] <= 0:
            del self._held_by[visitor]
        self._grant()

    def _grant(self) -> None:
        """Give free places to the waiting visitors who hold fewest, then were served least recently."""
        while self._held < self.at_once and self._lines:
            visitor = min(self._lines, key=lambda v: (self._held_by[v], self._served.get(v, -1)))
            place = self._lines[visitor].popleft()
            if not self._lines[visitor]:
                del self._lines[visitor]
            if place.done():  # cancelled while waiting (its task removes nothing more)
                continue
            self._take(visitor)
            place.set_result(None)

    def _forget(self, visitor: str, place: asyncio.Future[None]) -> None:
        line = self._lines.get(visitor)
        if line is not None and place in line:
            line.remove(place)
            if not line:
                del self._lines[visitor]
