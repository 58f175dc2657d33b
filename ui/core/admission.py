"""A line of runs waiting for a slot, where each visitor knows its place.

Gradio's own queue tells the browser a place only through the progress overlay (hidden on our
panels) and tells REST clients nothing at all: a visitor who submits into a busy app sees a
frozen page. So the Compare event starts at once in Gradio (no concurrency limit of its own)
and waits here instead, yielding "you are number N" frames while it waits; past
``max_waiting`` it is refused with a clear "full, try again". Everything runs on the event
loop, so no lock is needed; a cancelled wait (Stop, a closed tab) leaves the line at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator


class Full(Exception):
    """The line is full: ``str(exc)`` tells the visitor what to do."""


class Ticket:
    """One run's place: waiting, then running, then released (exactly once)."""

    def __init__(self, line: Admission) -> None:
        self._line = line
        self.admitted = asyncio.Event()
        self.released = False
        self.cancelled = False
        self._wake = asyncio.Event()  # admitted or cancelled

    @property
    def place(self) -> int:
        """1-based place in the line (0 once admitted)."""
        return 0 if self.admitted.is_set() else self._line.place_of(self)

    async def wait(self, refresh_s: float = 1.0) -> AsyncIterator[int]:
        """Yield this ticket's place whenever it changed until admitted: checked every ``refresh_s``
        near the front, less often further back (number 200 every 11 s), so that a long line costs
        the server ~50 frames a second in all rather than one per visitor per second."""
        shown = None
        while not self.admitted.is_set() and not self.cancelled:
            place = self.place
            if place != shown:
                shown = place
                yield place
            with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                await asyncio.wait_for(self._wake.wait(), refresh_s * (1 + place / 20))

    def cancel(self) -> None:
        """Stop waiting (the visitor pressed Stop): :meth:`wait` ends at once; call :meth:`release` after."""
        self.cancelled = True
        self._wake.set()

    def admit(self) -> None:
        self.admitted.set()
        self._wake.set()

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._line.release(self)


class Admission:
    """At most ``slots`` runs at once; at most ``max_waiting`` more wait, in order of arrival."""

    def __init__(self, slots: int, max_waiting: int) -> None:
        self.slots, self.max_waiting = max(1, slots), max(0, max_waiting)
        self.running = 0
        self._waiting: collections.deque[Ticket] = collections.deque()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def ticket(self) -> Ticket:
        """A ticket, admitted at once if a slot is free; raises :class:`Full` when the line is full."""
        ticket = Ticket(self)
        if self.running < self.slots and not self._waiting:
            self.running += 1
            ticket.admit()
        elif len(self._waiting) >= self.max_waiting:
            ticket.released = True
            raise Full(f"The app is full right now ({self.running} runs in progress, {len(self._waiting)} waiting). "
                       "Please try again in a minute.")
        else:
            self._waiting.append(ticket)
        return ticket

    def place_of(self, ticket: Ticket) -> int:
        try:
            return self._waiting.index(ticket) + 1
        except ValueError:
            return 0

    def release(self, ticket: Ticket) -> None:
        if ticket.admitted.is_set():
            self.running -= 1
        else:
            with contextlib.suppress(ValueError):
                self._waiting.remove(ticket)
        while self._waiting and self.running < self.slots:
            self.running += 1
            self._waiting.popleft().admit()
