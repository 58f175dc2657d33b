"""Step gating: a mode that runs one step at a time, waiting between steps with nothing in flight.

A step is one model reply and, where there is one, its observations. The wait happens in
:func:`agents.modes.base.complete` *before* the next call starts, so while a mode waits its
previous reply is complete, its stream is closed, no ``LLM_MAX_CONCURRENT`` slot is held and
no watchdog clock runs (those bound only calls in flight). A class can talk for ten minutes.

A :class:`StepGate` counts the calls a mode has started and how many it may start; the
controller (``ComparisonRun.step``/``resume``/``close``) changes the allowance from any
thread. The first call is always allowed, so a mode that ends in one step (Think-only) never
pauses, and a mode that has ended is never "paused".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator

from agents.events import Event, Paused, Resumed


class Stopped(Exception):
    """The run was cancelled between steps."""


class StepGate:
    """One mode's permission to start model calls: ``allowed`` of them (None: no limit)."""

    def __init__(self, cancel: threading.Event, *, stepping: bool = True) -> None:
        self.cancel = cancel
        self.allowed: int | None = 1 if stepping else None
        self.started = 0  # calls started: replies received or on their way
        self.paused = False
        self._cond = threading.Condition()

    def grant(self, steps: int = 1) -> None:
        """Let the mode run ``steps`` more steps (from wherever it is; no effect when not limited)."""
        with self._cond:
            if self.allowed is not None:
                self.allowed += steps
            self._cond.notify_all()

    def release(self) -> None:
        """No more pauses: run to the end."""
        with self._cond:
            self.allowed = None
            self._cond.notify_all()

    def pause_next(self) -> None:
        """Start stepping now: pause before the next call (the one under way finishes)."""
        with self._cond:
            self.allowed = self.started
            self._cond.notify_all()

    def wake(self) -> None:
        """Make a waiting mode re-check its cancel flag (``close()``)."""
        with self._cond:
            self._cond.notify_all()

    def restart(self) -> None:
        """A new attempt of the mode (``Retry``) counts its calls from zero again."""
        with self._cond:
            self.started = 0

    @property
    def waiting(self) -> bool:
        """Paused and not yet let go: False from the moment ``grant``/``release`` is called, not when
        the mode's thread gets round to waking (so a caller never asks twice for the same step)."""
        with self._cond:
            return self.paused and not self._may_go()

    def _may_go(self) -> bool:
        return self.allowed is None or self.started < self.allowed or self.cancel.is_set()

    def before_call(self) -> Generator[Event, None, None]:
        """Wait, if the allowance is used up, until the controller grants a step; raise Stopped when cancelled.

        Yields :class:`Paused` before waiting and :class:`Resumed` after, so a UI and the trace know.
        """
        with self._cond:
            must_wait = not self._may_go()
        if must_wait:
            try:
                yield Paused(self.started)  # the consumer has it before anyone can see this mode waiting
                began = time.monotonic()
                with self._cond:
                    self.paused = True
                    # Woken by grant/release/wake; the timeout only re-checks, it never ends the wait.
                    while not self._may_go():
                        self._cond.wait(60.0)
            finally:
                with self._cond:
                    self.paused = False
            if self.cancel.is_set():
                raise Stopped
            yield Resumed(round(time.monotonic() - began, 3))
        with self._cond:
            self.started += 1
