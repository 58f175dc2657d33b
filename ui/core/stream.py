"""One stream adapter: a run → the throttled frames a tab shows, for Compare and Benchmark alike.

A *run* has ``start()``, ``poll(timeout)``, ``done`` and a ``close()`` that works from any thread; a *view*
(:class:`StreamView`) turns its items into what the tab shows. :func:`stream` yields a panel's first text at once,
else at most every :func:`frame_interval`, and every :data:`TICK_S` while idle; a run with ``on_news`` wakes it
only when there is news. Stop (a :class:`StopSignal`), a ``watch`` or a closed tab end it, and ``finally`` closes
the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from ui.core.launcher import launcher

log = logging.getLogger(__name__)

THROTTLE_S = 0.1  # at most ten frames a second per run
FRAME_BUDGET_PER_S = 200  # frames a second for all live runs together; past it, each run's frames are rarer
TICK_S = 1.0  # refresh the live seconds counter this often while nothing happens
POLL_S = 0.1  # how often a run that cannot say when it has news is polled
_live = 0  # runs and replays streaming right now, in this process
_live_lock = threading.Lock()

Out = TypeVar("Out")


def frame_interval(throttle: float = THROTTLE_S) -> float:
    """Seconds between two frames of one run: ``throttle``, or more when many runs stream at once."""
    return max(throttle, _live / FRAME_BUDGET_PER_S)


def live_count() -> int:
    """Runs and replays streaming in this process right now."""
    return _live


@contextlib.contextmanager
def counted() -> Iterator[None]:
    """Count one streaming run or replay for as long as the block lasts (see :func:`frame_interval`)."""
    global _live
    with _live_lock:
        _live += 1
    try:
        yield
    finally:
        with _live_lock:
            _live -= 1


class Run(Protocol):
    """What :func:`stream` drives (a comparison, a benchmark, or a run in another process)."""

    def start(self) -> Any: ...

    def poll(self, timeout: float | None = None) -> Any: ...

    @property
    def done(self) -> bool: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Outcome:
    """How a stream ended: on its own, by Stop, or by a failure of the run itself."""

    stopped: bool = False
    failure: Exception | None = None
    reason: str = ""  # why it was stopped, when not by the visitor (e.g. a paused run left too long)


class StreamView(Protocol[Out]):
    """A tab's picture of one run: takes the run's items, renders running and final frames."""

    def add(self, item: Any) -> bool:
        """Record an item; True when the next frame should go out at once (e.g. a panel's first text)."""
        ...

    def running(self) -> Out | None:
        """The frame while the run goes (None: nothing to show yet)."""
        ...

    async def end(self, outcome: Outcome) -> Out:
        """The last frame: finished, stopped or failed (may write files, off the event loop)."""
        ...


class StopSignal:
    """Set by the Stop button (on the event loop); read by the stream it belongs to. It only stops: what the
    stream shows, and a stepping run's handle, are the page's lesson's (``ui/core/lesson.py``)."""

    def __init__(self) -> None:
        self.stopped = False
        self.reason = ""  # set when something other than the visitor stopped it
        self._callbacks: list[Callable[[], None]] = []

    def stop(self, reason: str = "") -> None:
        if not self.stopped:
            self.reason = reason
        self.stopped = True
        for callback in self._callbacks:
            callback()

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when stopped (e.g. to wake a wait for a slot)."""
        self._callbacks.append(callback)


def session_of(request: Any) -> str | None:
    """The visitor's session (one per open page), which the Stop button's request shares."""
    return getattr(request, "session_hash", None) if request is not None else None


class Stops:
    """The streams of each visitor's session, per tab, so that a Stop press finds the right ones.

    A stream registers for its lifetime (:meth:`signal`), so the table holds only live streams:
    nothing to expire, and a stream that ended (or whose tab closed) is gone from it.
    """

    def __init__(self) -> None:
        self._signals: dict[tuple[str, str], list[StopSignal]] = {}

    @contextlib.contextmanager
    def signal(self, session: str | None, tab: str) -> Iterator[StopSignal]:
        """A signal the tab's Stop sets while the block lasts (no session, e.g. a direct call: never set)."""
        signal = StopSignal()
        key = (session or "", tab)
        if session:
            self._signals.setdefault(key, []).append(signal)
        try:
            yield signal
        finally:
            if session:
                signals = self._signals.get(key, [])
                with contextlib.suppress(ValueError):
                    signals.remove(signal)
                if not signals:
                    self._signals.pop(key, None)

    def stop(self, session: str | None, tab: str) -> int:
        """Stop every stream of this session's tab; how many there were."""
        signals = list(self._signals.get((session or "", tab), ())) if session else []
        for signal in signals:
            signal.stop()
        return len(signals)

    def live(self, session: str | None, tab: str) -> list[StopSignal]:
        """The signals of this session's tab still streaming (a run, a replay, a fork); none without a session."""
        return list(self._signals.get((session or "", tab), ())) if session else []

    def __len__(self) -> int:
        return sum(len(s) for s in self._signals.values())


def _start(run: Run, failed: list[Exception], waker: _Waker) -> None:
    """Start the run: here when it says that is quick (``quick_start``: a hand-over to a worker process), else in
    the launcher's thread (starting threads on the loop makes every visitor wait)."""

    def start() -> None:
        try:
            run.start()
        except Exception as exc:
            log.exception("run failed to start")
            failed.append(exc)
            waker.news(urgent=True)

    if getattr(run, "quick_start", False):
        start()
    else:
        launcher.call(start)


class _Waker:
    """Wakes a stream's wait from any thread: on any news while ``eager`` (everything shown, the frame interval
    over), else only on urgent news (a mode started or ended, Stop), so a streaming run wakes it once a frame.
    A run without ``on_news`` is polled instead (``polled``). ``pending`` (news since the last :meth:`taken`) is
    set before any wake-up, so news that came while the stream was not yet waiting is not missed."""

    def __init__(self, run: Run) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self.eager = self.pending = self.closed = False
        on_news = getattr(run, "on_news", None)
        self.polled = on_news is None
        if on_news is not None:
            on_news(self.news)

    def news(self, urgent: bool = False) -> None:
        self.pending = True
        if (urgent or self.eager) and not self.closed and not self._event.is_set():
            self.eager = False  # one wake-up per wait is enough
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (a test's, or the app's at exit)
                self._loop.call_soon_threadsafe(self._event.set)

    def close(self) -> None:
        """The stream has ended: news that comes later (a late batch, the close's acknowledgement) wakes nothing."""
        self.closed = True

    def taken(self) -> None:
        """The stream is about to collect everything the run has."""
        self.pending = False

    async def wait(self, seconds: float, *, eager: bool) -> None:
        """Sleep up to ``seconds``; woken early as the class says (never, for a polled run: at most POLL_S)."""
        if self.polled:
            await asyncio.sleep(POLL_S)
            return
        self.eager = eager
        try:
            if not (eager and self.pending):
                await asyncio.wait_for(self._event.wait(), max(0.0, seconds))
        except TimeoutError:
            pass
        finally:
            self.eager = False
            self._event.clear()


class _Drain(Generic[Out]):
    """One poll: everything the run has for the view; whether the run ended, and why."""

    def __init__(self, run: Run, view: StreamView[Out]) -> None:
        self.run, self.view = run, view
        self.failure: Exception | None = None

    def __call__(self) -> tuple[bool, bool, bool]:
        """(any news, urgent, ended)."""
        news = urgent = False
        try:
            while (item := self.run.poll(timeout=0)) is not None:
                urgent = self.view.add(item) or urgent
                news = True
            return news, urgent, self.run.done
        except Exception as exc:
            log.exception("run failed")
            self.failure = exc
            return news, urgent, True


async def stream(run: Run, view: StreamView[Out], *, stop: StopSignal | None = None,
                 throttle: float = THROTTLE_S, watch: Callable[[], str | None] | None = None) -> AsyncIterator[Out]:
    """Start ``run`` and yield ``view``'s frames until the run ends or ``stop`` is set; then its last frame.
    ``watch``, asked at every poll, may end it too: the reason it returns is the stopped outcome's."""
    start_failed: list[Exception] = []
    drain = _Drain(run, view)
    stop = stop if stop is not None else StopSignal()
    waker = _Waker(run)
    stop.on_stop(lambda: waker.news(urgent=True))
    stopped = False
    with counted():
        try:
            _start(run, start_failed, waker)
            if (first := view.running()) is not None:
                yield first
            last, dirty = time.perf_counter(), False
            while True:
                now, next_frame = time.perf_counter(), last + frame_interval(throttle)
                if dirty or now < next_frame:  # a frame waits, or one just went: sleep to the interval's end
                    await waker.wait(next_frame - now, eager=False)
                else:  # everything shown: any news wakes us, else the tick
                    await waker.wait(last + TICK_S - now, eager=True)
                waker.taken()
                news, urgent, ended = drain()
                dirty = dirty or news
                if start_failed:
                    drain.failure, ended = start_failed[0], True
                if watch is not None and not ended and (reason := watch()):
                    stop.stop(reason)
                if stop.stopped:
                    stopped = True
                    break
                if ended:
                    break
                now = time.perf_counter()
                if urgent or now >= last + (frame_interval(throttle) if dirty else TICK_S):
                    if (frame := view.running()) is not None:
                        yield frame
                        dirty, last = False, time.perf_counter()
        finally:
            # Stop, a closed tab, or the end: cancel the run and close the clients still open (ending
            # their streams at once). close() joins threads, so it runs off the event loop.
            waker.close()
            launcher.start(run.close, "run-close")
    yield await view.end(Outcome(stopped=stopped, failure=drain.failure, reason=stop.reason if stopped else ""))
