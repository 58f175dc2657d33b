"""A line of runs waiting for a slot, where each visitor knows its place.

Gradio's own queue tells a place only through the progress overlay (hidden on our panels) and REST clients
nothing, so a visitor who submits into a busy app would see a frozen page. So the Compare event starts at once in
Gradio and waits here instead, yielding "you are number N" frames; past ``max_waiting`` it is refused with a clear
"full, try again". Everything runs on the event loop, so no lock is needed; a cancelled wait leaves the line at
once. Before a run joins the line, :class:`RunQuota` counts it against its visitor.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator

from ui.core.settings import app_settings
from ui.core.visitors import Visitor

APP_FULL_SHORT = "⏳ The app is full right now — please try again in a minute."


class Full(Exception):
    """The line is full: ``str(exc)`` tells the visitor what to do, ``short`` is the line each panel shows."""

    short = APP_FULL_SHORT


class OverQuota(Full):
    """This visitor (browser or address) already has its most live runs."""

    def __init__(self, line: str, short: str) -> None:
        super().__init__(line)
        self.short = short


class RunQuota:
    """Live runs at once per browser (``per_browser``) and per address (``per_address``: every run from it, a
    browser's or a cookieless client's), from the moment a run asks for a slot until it ends. Thread-safe.

    The limits are ``APP_RUNS_PER_VISITOR`` and ``APP_RUNS_PER_ADDRESS`` (waiting places included), so one visitor
    cannot fill the slots and the line; the next run past either is refused with one line, and holds nothing."""

    def __init__(self, per_browser: int, per_address: int) -> None:
        self.per_browser, self.per_address = int(per_browser), int(per_address)
        self._held: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls) -> RunQuota:
        """``APP_RUNS_PER_VISITOR`` and ``APP_RUNS_PER_ADDRESS``."""
        limits = app_settings()
        return cls(limits.runs_per_visitor, limits.runs_per_address)

    def held(self, key: str) -> int:
        """Live runs counted against ``key`` (a browser or an address)."""
        with self._lock:
            return self._held[key]

    def take(self, visitor: Visitor | None) -> Callable[[], None]:
        """Count one run for ``visitor`` and return what gives it back (callable once), or raise
        :class:`OverQuota`. A run with no visitor (a test, a script) is not counted."""
        keys = [k for k in ((visitor.browser, visitor.address) if visitor is not None else ()) if k]
        with self._lock:
            if visitor is not None and visitor.browser and self._held[visitor.browser] >= self.per_browser:
                raise OverQuota(f"You already have {self.per_browser} runs going (at most {self.per_browser} at once "
                                "per browser): wait for one to end, or press Stop, then try again.",
                                f"⏳ You already have {self.per_browser} runs going: see the status line.")
            if visitor is not None and visitor.address and self._held[visitor.address] >= self.per_address:
                raise OverQuota(f"{self.per_address} runs are already going from your network (at most "
                                f"{self.per_address} at once from one address): try again in a minute.",
                                "⏳ Your network already has as many runs going as it may: see the status line.")
            for key in keys:
                self._held[key] += 1
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if released:
                    return
                released = True
                for key in keys:
                    self._held[key] -= 1
                    if self._held[key] <= 0:
                        del self._held[key]
        return release

    @contextlib.contextmanager
    def hold(self, visitor: Visitor | None) -> Iterator[None]:
        """One run counted for the ``with`` block (:meth:`take`, given back however it ends)."""
        release = self.take(visitor)
        try:
            yield
        finally:
            release()


class Ticket:
    """One run's place: waiting, then running, then released (exactly once)."""

    def __init__(self, line: Admission, quota: Callable[[], None] | None = None) -> None:
        self._line = line
        self._quota = quota  # gives the visitor's count back (RunQuota.take)
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
        if self._quota is not None:
            self._quota()


class Admission:
    """At most ``slots`` runs at once; at most ``max_waiting`` more wait, in order of arrival; with a ``quota``, each
    visitor's runs (waiting or running) are counted against it first."""

    def __init__(self, slots: int, max_waiting: int, quota: RunQuota | None = None) -> None:
        self.slots, self.max_waiting = max(1, slots), max(0, max_waiting)
        self.quota = quota
        self.running = 0
        self._waiting: collections.deque[Ticket] = collections.deque()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def ticket(self, visitor: Visitor | None = None) -> Ticket:
        """A ticket, admitted at once if a slot is free; raises :class:`OverQuota` when ``visitor`` has its most
        runs, :class:`Full` when the line is full (either way nothing is held)."""
        release = self.quota.take(visitor) if self.quota is not None else None
        ticket = Ticket(self, release)
        if self.running < self.slots and not self._waiting:
            self.running += 1
            ticket.admit()
        elif len(self._waiting) >= self.max_waiting:
            ticket.released = True
            if release is not None:
                release()
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
