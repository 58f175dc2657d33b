"""The one stream adapter (ui/core/stream.py) with a fake run: first frame at once, throttling, Stop, close."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from types import SimpleNamespace
from typing import Any

from tests.frames import collect
from ui.core import stream
from ui.core.stream import Outcome, Stops, StopSignal, session_of


class FakeRun:
    """A run whose items a test feeds; records start/close (close may come from another thread)."""

    def __init__(self, fail_start: bool = False) -> None:
        self.items: queue.SimpleQueue = queue.SimpleQueue()
        self.started, self.closed, self.finished = threading.Event(), threading.Event(), False
        self.fail_start = fail_start

    def start(self) -> None:
        if self.fail_start:
            raise RuntimeError("no threads left")
        self.started.set()

    def poll(self, timeout: float | None = None):
        try:
            item = self.items.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, Exception):
            raise item
        return item

    @property
    def done(self) -> bool:
        return self.finished and self.items.empty()

    def close(self) -> None:
        self.closed.set()


class ListView:
    """Frames are the items seen so far; item "first" is urgent."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.outcome: Outcome | None = None

    def add(self, item: str) -> bool:
        self.seen.append(item)
        return item == "first"

    def running(self) -> tuple:
        return ("running", tuple(self.seen))

    async def end(self, outcome: Outcome) -> tuple:
        self.outcome = outcome
        return ("stopped" if outcome.stopped else "failed" if outcome.failure else "done", tuple(self.seen))


def test_first_frame_at_once_then_news_then_the_end():
    run, view = FakeRun(), ListView()

    async def scenario() -> list:
        frames = []
        gen = stream.stream(run, view, throttle=0.05)
        frames.append(await anext(gen))
        run.items.put("first")
        frames.append(await anext(gen))  # urgent: no throttle wait
        run.items.put("x")
        run.finished = True
        frames.extend([f async for f in gen])
        return frames

    frames = asyncio.run(scenario())
    assert frames[0] == ("running", ()) and frames[1] == ("running", ("first",))
    assert frames[-1] == ("done", ("first", "x"))
    assert run.started.is_set() and run.closed.wait(2)  # closed by the generator's own finally


def stopped_after_first_frame(run: Any, view: ListView, stop: StopSignal) -> tuple[list, float]:
    """Stream ``run`` and press Stop 0.1 s after its first frame: the frames, and the seconds it all took."""

    async def scenario() -> list:
        loop = asyncio.get_running_loop()
        return await collect(stream.stream(run, view, stop=stop), after_first=lambda: loop.call_later(0.1, stop.stop))

    started = time.monotonic()
    frames = asyncio.run(scenario())
    return frames, time.monotonic() - started


def test_stop_signal_ends_the_stream_with_the_views_stopped_frame():
    run, view = FakeRun(), ListView()
    frames, took = stopped_after_first_frame(run, view, StopSignal())
    assert frames[-1][0] == "stopped" and view.outcome == Outcome(stopped=True)
    assert took < 1.0  # no wait for the run: it is closed off the event loop
    assert run.closed.wait(2)


def test_a_cancelled_stream_closes_its_run_and_says_nothing_more():
    run, view = FakeRun(), ListView()

    async def scenario() -> None:
        gen = stream.stream(run, view)
        await anext(gen)
        assert stream.live_count() == 1
        await gen.aclose()  # what Gradio does when the tab closes

    asyncio.run(scenario())
    assert run.closed.wait(2) and view.outcome is None and stream.live_count() == 0


def test_a_failing_run_ends_with_the_failure():
    run, view = FakeRun(), ListView()
    run.items.put(ValueError("broken queue"))
    frames = asyncio.run(collect(stream.stream(run, view)))
    assert frames[-1][0] == "failed" and str(view.outcome.failure) == "broken queue"
    broken, view = FakeRun(fail_start=True), ListView()
    frames = asyncio.run(collect(stream.stream(broken, view)))
    assert frames[-1][0] == "failed" and "no threads" in str(view.outcome.failure)


def test_news_waits_for_the_interval_and_an_idle_run_ticks(monkeypatch):
    monkeypatch.setattr(stream, "TICK_S", 0.6)
    run, view = FakeRun(), ListView()

    async def timed(gen) -> tuple[float, tuple]:
        started = time.monotonic()
        frame = await anext(gen)
        return time.monotonic() - started, frame

    async def scenario() -> list:
        gen = stream.stream(run, view, throttle=0.3)
        await anext(gen)
        run.items.put("x")  # news, not urgent: shown once the interval since the last frame passed
        news = await timed(gen)
        idle = await timed(gen)  # nothing new: a tick after TICK_S (the clock moves; a closed tab is noticed)
        run.finished = True
        await gen.aclose()
        return [news, idle]

    (news_s, news), (idle_s, idle) = asyncio.run(scenario())
    assert 0.25 <= news_s < 0.6 and news == ("running", ("x",))
    assert 0.5 <= idle_s < 1.2 and idle == news


def test_stops_reach_only_the_sessions_tab_and_forget_ended_streams():
    stops = Stops()
    with stops.signal("a", "compare") as a, stops.signal("a", "benchmark") as bench, stops.signal("b", "compare") as b:
        with stops.signal(None, "compare") as anonymous:  # a direct call (no page): never registered
            assert len(stops) == 3
            assert stops.stop("a", "compare") == 1 and stops.stop(None, "compare") == 0
            assert a.stopped and not bench.stopped and not b.stopped and not anonymous.stopped
    assert len(stops) == 0 and stops.stop("a", "compare") == 0
    assert session_of(SimpleNamespace(session_hash="s1")) == "s1" and session_of(None) is None


def test_stop_signal_runs_callbacks():
    calls: list[int] = []
    signal = StopSignal()
    signal.on_stop(lambda: calls.append(1))
    signal.stop()
    assert signal.stopped and calls == [1]


class TellingRun(FakeRun):
    """A run that says when it has news (``on_news``, as HostedRun does) and counts the stream's polls."""

    def __init__(self) -> None:
        super().__init__()
        self.notify = None
        self.polls = 0

    def on_news(self, notify) -> None:
        self.notify = notify

    def poll(self, timeout: float | None = None):
        self.polls += 1
        return super().poll(timeout)

    def tell(self, item: str | None = None, *, urgent: bool = False, end: bool = False) -> None:
        """From another thread, as a worker's batch arrives: the item, then the news."""
        if item is not None:
            self.items.put(item)
        self.finished = self.finished or end
        self.notify(urgent or end)


def test_a_run_that_tells_its_news_is_not_polled_while_nothing_happens(monkeypatch):
    monkeypatch.setattr(stream, "TICK_S", 5.0)
    run, view = TellingRun(), ListView()

    async def scenario() -> tuple[int, float, tuple]:
        gen = stream.stream(run, view, throttle=0.05)
        await anext(gen)
        waiting = asyncio.ensure_future(anext(gen))
        await asyncio.sleep(0.6)  # a polled run would have been looked at six times by now
        idle_polls = run.polls
        started = time.monotonic()
        threading.Thread(target=run.tell, args=("x",)).start()  # plain news: nothing waited to be shown
        frame = await waiting
        took = time.monotonic() - started
        run.tell(end=True)
        await gen.aclose()
        return idle_polls, took, frame

    idle_polls, took, frame = asyncio.run(scenario())
    assert idle_polls <= 1 and frame == ("running", ("x",))  # one look as the frame interval ended, then asleep
    assert took < 1.0  # woken by the news, not by the 5 s tick


def test_a_run_that_tells_its_end_ends_the_stream_before_its_next_frame_is_due(monkeypatch):
    monkeypatch.setattr(stream, "TICK_S", 5.0)
    run, view = TellingRun(), ListView()

    async def scenario() -> tuple[float, list]:
        gen = stream.stream(run, view, throttle=5.0)  # a frame waits five seconds for its interval
        frames = [await anext(gen)]
        run.tell("first", urgent=True)
        frames.append(await anext(gen))
        run.tell("x")  # waits for the interval: no wake-up
        started = time.monotonic()
        threading.Timer(0.2, run.tell, kwargs={"end": True}).start()
        frames += [f async for f in gen]
        return time.monotonic() - started, frames

    took, frames = asyncio.run(scenario())
    assert frames[-1] == ("done", ("first", "x")) and took < 2.0


def test_stop_wakes_a_stream_that_sleeps_until_its_next_tick(monkeypatch):
    monkeypatch.setattr(stream, "TICK_S", 5.0)
    frames, took = stopped_after_first_frame(TellingRun(), ListView(), StopSignal())
    assert frames[-1][0] == "stopped" and took < 2.0


def test_a_run_that_starts_quickly_is_started_on_the_loop_and_others_off_it():
    """A hand-over to a worker process (``quick_start``) costs less than waking a thread to do it; starting
    threads does not, so any other run starts in the launcher's thread."""

    class Recording(FakeRun):
        def __init__(self, quick: bool) -> None:
            super().__init__()
            self.quick_start, self.thread = quick, None

        def start(self) -> None:
            self.thread = threading.current_thread()
            super().start()

    async def scenario(run: Recording) -> threading.Thread:
        gen = stream.stream(run, ListView())
        await anext(gen)
        await gen.aclose()
        return threading.current_thread()

    quick, slow = Recording(True), Recording(False)
    assert asyncio.run(scenario(quick)) is quick.thread
    loop_thread = asyncio.run(scenario(slow))
    assert slow.started.wait(2) and slow.thread is not loop_thread and slow.thread.name == "thread-launcher"


def test_news_after_the_stream_ended_wakes_nothing_and_raises_nothing():
    run, view = TellingRun(), ListView()

    async def scenario() -> list:
        gen = stream.stream(run, view)
        frames = [await anext(gen)]
        run.tell(end=True)
        frames += [f async for f in gen]
        return frames

    frames = asyncio.run(scenario())  # the loop is closed now
    assert frames[-1][0] == "done"
    run.tell("late", urgent=True)  # a late batch from the worker's thread: no error, no wake-up
