"""Step through in the Compare tab: which modes wait, the status line while they do, and the
Next step / Continue controls that act on a session's stepping run.

The engine does the stepping (``agents/stepping.py``, ``ComparisonRun(stepping=True)``); here is only
what the UI needs around it. A run is "paused" for the UI when every mode either waits after a
``Paused`` event or has finished — read from the events the view has already seen, so the status line
changes in the same frame as the panels (the engine's own ``waiting_for_step`` is the guard the
buttons use, so a double click never grants two steps).

While paused, nothing times out: the stream adapter keeps polling and ticking (``ui/stream.py`` has no
deadline), the run keeps its admission slot (``ui/admission.py``: a paused run is a running run, so a
class that leaves runs paused fills ``APP_CONCURRENCY`` and later visitors wait in line), and the
session is kept however long the pause lasts (``ui/sessions.py`` never expires a session with an event
pending, and a stepping run's stream is one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from agents.events import Event, Paused, Resumed

PAUSED_STATUS = "⏸ Paused after step {step} — Next step, Continue or Stop."
STEPPING_STATUS = "● Stepping through **{selection}** on {where}: step {step}…"


def is_paused(status: str | None) -> bool:
    """The status line says the run waits for Next step (what enables that button)."""
    return str(status or "").startswith(PAUSED_STATUS.split("{", 1)[0])


class PauseState:
    """Which modes of a live run wait between steps, and after which step (from the events seen)."""

    def __init__(self) -> None:
        self._waiting: dict[str, int] = {}  # mode → the step it paused after
        self.step = 0  # the last step every unfinished mode completed

    def add(self, mode: str, event: Event) -> None:
        if isinstance(event, Paused):
            self._waiting[mode] = event.step
        elif isinstance(event, Resumed):
            self._waiting.pop(mode, None)

    def paused(self, modes: Iterable[str], finished: Callable[[str], bool]) -> bool:
        """True when some mode waits and every other one waits too or has finished."""
        modes = list(modes)
        waiting = [m for m in modes if m in self._waiting and not finished(m)]
        if waiting and all(m in waiting or finished(m) for m in modes):
            self.step = max(self._waiting[m] for m in waiting)
            return True
        return False


def next_step(runs: Iterable[Any]) -> int:
    """Let each paused stepping run take one more step; how many were paused (others are left alone)."""
    moved = 0
    for run in runs:
        if getattr(run, "waiting_for_step", False):
            run.step()
            moved += 1
    return moved


def continue_runs(runs: Iterable[Any]) -> int:
    """Let each stepping run go on to its end without pausing again; how many there were."""
    moved = 0
    for run in runs:
        if hasattr(run, "resume"):
            run.resume()
            moved += 1
    return moved
