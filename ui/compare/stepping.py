"""Step through in the Compare tab: which modes wait, the status line while they do, Next step / Continue,
and the limits on paused runs.

The engine steps (``agents/stepping.py``); a run is paused for the page when every mode waits after a
``Paused`` event or has ended, read from the events already shown. A paused run keeps its admission slot, so
:class:`PauseBook` bounds stepping runs per visitor and in all (``APP_PAUSED_PER_VISITOR``,
``APP_PAUSED_SHARE``), and one left paused for ``APP_PAUSE_TTL`` ends (:meth:`PauseState.expired`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agents.events import Event
from agents.stepping import StepState

PAUSED_STATUS = "⏸ Paused after step {step} — Next step, Continue or Stop."
STEPPING_STATUS = "● Stepping through **{selection}** on {where}: step {step}…"
EXPIRED = ("Ended: nobody pressed Next step or Continue for {wait} (the most a run may stay paused here). "
           "Press Step to start again.")


class PauseRefused(Exception):
    """A stepping run the limits do not allow; ``str(exc)`` is the one line to show."""


class PauseBook:
    """The stepping runs in progress, per visitor and in all: :meth:`hold` one for as long as its stream lasts.

    Stepping runs are counted from the click to the end of their stream, paused or not (a stepping run spends
    nearly all its life paused), on the event loop (no lock needed).
    """

    def __init__(self, per_visitor: int, total: int, ttl_s: float) -> None:
        self.per_visitor, self.total, self.ttl_s = max(1, per_visitor), max(1, total), float(ttl_s)
        self._held: dict[str, int] = {}

    @property
    def held(self) -> int:
        return sum(self._held.values())

    def held_by(self, visitor: str) -> int:
        return self._held.get(visitor, 0)

    @contextlib.contextmanager
    def hold(self, visitor: str) -> Iterator[None]:
        """Count one stepping run of ``visitor`` while the block lasts; :class:`PauseRefused` past a limit."""
        if self.held_by(visitor) >= self.per_visitor:
            raise PauseRefused(f"You already have {self.held_by(visitor)} runs going step by step, the most one "
                               "visitor may hold: press Continue or Stop in one of them first, or press Run.")
        if self.held >= self.total:
            raise PauseRefused(f"The app holds {self.held} runs paused step by step right now, the most it keeps "
                               "room for: press Run to run without pausing, or try Step again in a minute.")
        self._held[visitor] = self.held_by(visitor) + 1
        try:
            yield
        finally:
            left = self._held.get(visitor, 1) - 1
            if left > 0:
                self._held[visitor] = left
            else:
                self._held.pop(visitor, None)


def wait_text(seconds: float) -> str:
    """"5 minutes", "90 s": a pause limit as the panels say it."""
    minutes = seconds / 60
    if seconds >= 120 and minutes == int(minutes):
        return f"{int(minutes)} minutes"
    return f"{seconds:g} s"


def is_paused(status: str | None) -> bool:
    """The status line says the run waits for Next step (what enables that button)."""
    return str(status or "").startswith(PAUSED_STATUS.split("{", 1)[0])


class PauseState:
    """Which modes of a live run wait between steps, and after which step (from the events seen, as the run
    handles read them: :class:`~agents.stepping.StepState`)."""

    def __init__(self) -> None:
        self._steps = StepState()
        self.step = 0  # the last step every unfinished mode completed
        self.since: float | None = None  # when the whole run last became paused (None: it is not)

    def add(self, mode: str, event: Event) -> None:
        self._steps.add(mode, event)

    def paused(self, modes: Iterable[str], finished: Callable[[str], bool]) -> bool:
        """True when some mode waits and every other one waits too or has finished."""
        step = self._steps.pause_step(modes, finished)
        if step is None:
            self.since = None
            return False
        self.step, self.since = step, self.since if self.since is not None else time.monotonic()
        return True

    def expired(self, modes: Iterable[str], finished: Callable[[str], bool], ttl_s: float) -> str | None:
        """Why the run must end now (paused for ``ttl_s`` without Next step or Continue), or None."""
        if self.paused(modes, finished) and self.since is not None and time.monotonic() - self.since >= ttl_s:
            return EXPIRED.format(wait=wait_text(ttl_s))
        return None


def next_step(runs: Iterable[Any]) -> int:
    """Let each paused stepping run take one more step; how many were paused (others are left alone)."""
    paused = [run for run in runs if getattr(run, "waiting_for_step", False)]
    for run in paused:
        run.step()
    return len(paused)


def continue_runs(runs: Iterable[Any]) -> int:
    """Let each stepping run go on to its end without pausing again; how many there were."""
    stepping = [run for run in runs if hasattr(run, "resume")]
    for run in stepping:
        run.resume()
    return len(stepping)
