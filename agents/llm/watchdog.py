"""Time limits of streamed model calls, watched by one thread for the whole process.

``LLM_TIMEOUT`` bounds a *silence*: the wait for the first chunk and any gap between two
chunks, so a hung server is caught quickly while a slow model that streams steadily is never
cut. ``LLM_MAX_DURATION`` bounds a whole call. httpx's own timeout is per socket operation
and counts keep-alive bytes, so it cannot express either; one shared thread checking every
open call a few times a second costs nothing next to a thread (or timer) per call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

LONGEST_SLEEP_S = 60.0  # a bound on one sleep, in case a clock jumps


class Watch:
    """The clock of one call: ``beat()`` on every chunk; ``expired`` says which limit passed, if any."""

    def __init__(self, timeout_s: float, max_duration_s: float, on_expire: Callable[[], None]) -> None:
        self.timeout_s, self.max_duration_s, self.on_expire = timeout_s, max_duration_s, on_expire
        self.started = time.monotonic()
        self.last: float | None = self.started  # None: paused (sleeping before a retry)
        self.chunks = 0
        self.expired: str | None = None  # "silence" or "duration"
        self.poke: Callable[[], None] = lambda: None  # the watchdog's: the watch's deadline moved earlier
        # Before the call's first chunk, the last moment another call to its one-at-a-time server got a chunk (None:
        # no such server): queued behind our other calls in the server, the call waits its turn; it is not silence.
        self.turn: Callable[[], float | None] | None = None

    def beat(self) -> None:
        self.last = time.monotonic()
        self.chunks += 1

    def restart(self) -> None:
        """A new attempt: the wait for its first chunk starts now (after a pause, that may be earlier than the
        moment the watchdog sleeps until: wake it)."""
        paused = self.last is None
        self.last, self.chunks = time.monotonic(), 0
        if paused:
            self.poke()

    def pause(self) -> None:
        self.last = None

    def _silent_since(self) -> float | None:
        """Since when the call has heard nothing that counts (None: paused)."""
        last = self.last
        if last is not None and not self.chunks and self.turn is not None:
            other = self.turn()
            return max(last, other) if other is not None else last
        return last

    def check(self, now: float) -> str | None:
        """Which limit has passed at ``now`` (sets ``expired`` once)."""
        if self.expired is None:
            since = self._silent_since()
            if now - self.started > self.max_duration_s:
                self.expired = "duration"
            elif since is not None and now - since > self.timeout_s:
                self.expired = "silence"
        return self.expired

    def deadline(self) -> float:
        """The earliest moment a limit could pass, as things stand (a beat only moves it later)."""
        ends, since = self.started + self.max_duration_s, self._silent_since()
        return ends if since is None else min(ends, since + self.timeout_s)


class _Watchdog:
    def __init__(self) -> None:
        self._watches: set[Watch] = set()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, watch: Watch) -> None:
        watch.poke = self._poke
        with self._cond:
            self._watches.add(watch)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="llm-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()

    def remove(self, watch: Watch) -> None:
        """After this returns, ``watch.on_expire`` is not running and will not run."""
        with self._cond:
            self._watches.discard(watch)

    def _poke(self) -> None:
        with self._cond:
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while True:
                while not self._watches:
                    self._cond.wait()
                now = time.monotonic()
                wake = now + LONGEST_SLEEP_S
                for watch in list(self._watches):
                    if watch.expired is None and watch.check(now):
                        try:
                            watch.on_expire()  # under the lock: remove() cannot return mid-call
                        except Exception:  # the watchdog must outlive any one call
                            log.exception("a watchdog expiry callback failed")
                    if watch.expired is None:
                        wake = min(wake, watch.deadline())
                self._cond.wait(max(0.0, wake - time.monotonic()) + 0.001)  # just past it: check() is strict


_watchdog = _Watchdog()


def watch(timeout_s: float, max_duration_s: float, on_expire: Callable[[], None]) -> Watch:
    """Start watching a call; pass the result to :func:`unwatch` when the call ends."""
    w = Watch(timeout_s, max_duration_s, on_expire)
    _watchdog.add(w)
    return w


def unwatch(w: Watch) -> None:
    _watchdog.remove(w)
