"""Step gating: a mode that runs one step at a time, waiting between steps with nothing in flight.

A step is one model reply and, where there is one, its observations. The wait happens in
:func:`agents.modes.base.complete` *before* the next call starts, so while a mode waits its stream is closed, no
``LLM_MAX_CONCURRENT`` slot is held and no watchdog clock runs: a class can talk for ten minutes. A
:class:`StepGate` counts the calls a mode may start; both run handles read who waits from the events
(:class:`StepState`) and offer the same step controls (:class:`StepControls`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterable

from agents.events import Event, LLMError, Paused, Resumed, Retry, Waiting


class Stopped(Exception):
    """The run was cancelled between steps."""


class StepGate:
    """One mode's permission to start model calls: ``allowed`` of them (None: no limit).

    The controller (``ComparisonRun.step``/``resume``/``close``) changes the allowance from any thread. The first
    call is always allowed, so a mode that ends in one step (Think-only) never pauses, and a mode that has ended is
    never "paused".
    """

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


RETRIED = ("interrupted", "busy")  # the LLMError reasons after which a mode may run again (agents/comparison.py)


class StepState:
    """Which modes of a run wait, from its ``(mode, event)`` stream: from a ``Paused`` until its ``Resumed``, its end
    (``None``), or until let go (at once, so nobody asks twice for one step). ``held`` modes neither run nor wait:
    a mode the server cut off (a ``Waiting`` to run again, or an older recording's ``LLMError`` "interrupted" or
    "busy") waits for its turn to run again, until its ``Retry``, its final error or its end — the same reading in
    the run's own process and in the app. Any thread may feed or ask."""

    def __init__(self, modes: Iterable[str] = ()) -> None:
        self.modes = list(modes)
        self.ended: set[str] = set()
        self.held: set[str] = set()
        self._waiting: dict[str, int] = {}  # mode → the step it paused after
        self._lock = threading.RLock()

    def add(self, mode: str, event: Event | None, emit: Callable[[str, Event | None], None] | None = None) -> None:
        """Note a pause, a resume or an end, and pass the event to ``emit`` under the same lock: nobody sees a mode
        wait before its ``Paused`` is passed on, and whoever gets it finds it noted (a worker grants the step)."""
        if event is not None and not isinstance(event, Paused | Resumed | LLMError | Retry | Waiting):
            if emit is not None:  # a token or a step that changes no one's waiting: no lock
                emit(mode, event)
            return
        with self._lock:
            if event is None:
                self.ended.add(mode)
            elif (isinstance(event, Waiting) and event.rerun) or (isinstance(event, LLMError)
                                                                  and event.reason in RETRIED):
                self.held.add(mode)
            elif isinstance(event, Retry | LLMError):
                self.held.discard(mode)
            elif isinstance(event, Paused):
                self._waiting[mode] = event.step
            elif isinstance(event, Resumed):
                self._waiting.pop(mode, None)
            if emit is not None:
                emit(mode, event)

    @property
    def paused(self) -> list[str]:
        with self._lock:
            return [m for m in self.modes if m in self._waiting and m not in self.ended]

    def pause_step(self, modes: Iterable[str] | None = None, idle: Callable[[str], bool] | None = None) -> int | None:
        """The step the run is paused after (some mode waits; each other one waits, has ended or is idle), or None."""
        idle = idle or self.held.__contains__
        with self._lock:
            active = [m for m in (self.modes if modes is None else modes) if m not in self.ended and not idle(m)]
            return max(self._waiting[m] for m in active) if active and all(m in self._waiting for m in active) else None

    def let_go(self, *, once: bool = False) -> bool:
        """Let the waiting modes go; ``once``: only if the run is paused, so once per pause. Whether it did."""
        with self._lock:
            if once and self.pause_step() is None:
                return False
            self._waiting.clear()
            return True


class StepControls:
    """A run handle's step controls (``ComparisonRun``, ``HostedRun``), none blocking: the handle feeds ``_steps``
    the events it passes on, and its ``_control(kind)`` acts on its gates or through its worker."""

    _steps: StepState

    @property
    def paused(self) -> list[str]:
        """Modes waiting for :meth:`step` or :meth:`resume` now (a mode that has ended is never paused)."""
        return self._steps.paused

    @property
    def waiting_for_step(self) -> bool:
        """True when nothing runs and some mode is paused: time to ask for the next step."""
        return self._steps.pause_step() is not None

    def step(self) -> None:
        """One more step for every paused mode, once per pause (a double click never grants two)."""
        if self._steps.let_go(once=True):
            self._control("step")

    def resume(self) -> None:
        """Stop pausing: every mode runs to its end."""
        self._steps.let_go()
        self._control("resume")

    def pause(self) -> None:
        """Switch a running run to stepping: each mode pauses before its next model call."""
        self._control("pause")
