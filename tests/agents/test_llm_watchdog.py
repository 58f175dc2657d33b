"""The shared watchdog: limits caught on time, and no wake-ups while a call streams (it sleeps to a deadline)."""

from __future__ import annotations

import threading
import time

from agents.llm import watchdog


def test_silence_is_caught_soon_after_it_passes() -> None:
    fired, at = threading.Event(), []
    start = time.monotonic()
    w = watchdog.watch(0.2, 60.0, lambda: (at.append(time.monotonic() - start), fired.set()))
    try:
        assert fired.wait(2.0)
        assert w.expired == "silence"
        assert 0.2 <= at[0] < 0.4
    finally:
        watchdog.unwatch(w)


def test_beats_move_the_deadline_and_duration_still_ends_the_call() -> None:
    fired = threading.Event()
    w = watchdog.watch(0.15, 0.5, fired.set)
    try:
        end = time.monotonic() + 0.45
        while time.monotonic() < end:  # a steady stream: never silent for 0.15 s
            w.beat()
            time.sleep(0.03)
        assert w.expired is None
        assert fired.wait(1.0)
        assert w.expired == "duration"
    finally:
        watchdog.unwatch(w)


def test_a_restart_after_a_pause_wakes_the_watchdog() -> None:
    """Paused (a retry's back-off), only the duration counts, so the watchdog sleeps long; the next attempt's
    silence limit must still be caught on time."""
    fired = threading.Event()
    w = watchdog.watch(0.2, 30.0, fired.set)
    try:
        w.pause()
        time.sleep(0.3)
        assert w.expired is None
        w.restart()
        assert fired.wait(1.0)
        assert w.expired == "silence"
    finally:
        watchdog.unwatch(w)


def test_a_streaming_call_costs_the_watchdog_no_wake_ups(monkeypatch) -> None:
    checks = []
    real = watchdog.Watch.check
    monkeypatch.setattr(watchdog.Watch, "check", lambda self, now: checks.append(now) or real(self, now))
    w = watchdog.watch(5.0, 60.0, lambda: None)
    try:
        for _ in range(10):
            w.beat()
            time.sleep(0.05)
        assert len(checks) <= 2  # the add's wake-up (and perhaps one already under way): not one per 0.1 s
    finally:
        watchdog.unwatch(w)
