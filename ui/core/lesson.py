"""One home for what a page shows: a :class:`Lesson` per open page, kept by :class:`Lessons` under its session.

A lesson holds the run on screen (:class:`Shown`: where its export is, its turns with their expected answers and
forks, the fork beside the modes), the run, fork or replay streaming now (:class:`Live`) and the class poll room
(:class:`Seat`). Run, Step, Fork, a follow-up, Replay, Share, a benchmark item and the poll change it only through
the transitions below, which take no I/O and are unit-tested; the traces stay in the export file a lesson names.
The Stop signal only stops: a stepping run is found through the lesson, not through its signal.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from ui.core.stream import StopSignal, session_of

Source = Literal["run", "step", "fork", "replay", "share", "benchmark"]
FROM_FILE: tuple[Source, ...] = ("replay", "share", "benchmark")  # a run put on screen from a file
BUSY = "A run is still going: wait for it to finish (or press Stop), then {action}."
NOTHING = "Nothing is on screen to {action} yet: run a question (or replay a saved run) first."
MAX_LESSONS = 10_000  # as many sessions as Gradio keeps by default; each lesson is a few hundred bytes
IDLE_S = 7200.0  # a lesson no page has used for this long (a REST client's, never closed) is dropped


@dataclass(frozen=True)
class Turn:
    """One turn of the conversation on screen: its question, its own expected answer and the teacher's forks."""

    question: str
    expected: str | None = None
    forks: tuple[str, ...] = ()  # the panels of the forks made in this turn ("react@2")

    @classmethod
    def of_block(cls, turn: dict[str, Any]) -> Turn:
        """A turn as a follow-up block records it (``agents/followup.py``)."""
        expected = turn.get("expected")
        edits = turn.get("edits")
        return cls(str(turn.get("question") or ""), expected if isinstance(expected, str) else None,
                   tuple(edits) if isinstance(edits, dict) else ())


@dataclass(frozen=True)
class Shown:
    """The run on screen once its last frame went out."""

    source: Source
    export: str | None  # its JSON export: the one file Fork, a follow-up, Share and the poll's reveal read
    turns: tuple[Turn, ...]  # oldest first; the last is the turn on screen
    beside: str | None = None  # a fork continued in the panel beside the modes ("react@2"): a follow-up continues it
    model: str | None = None  # the model a run from a file was recorded on (its follow-up needs the same)
    followup: dict[str, Any] | None = None  # a replayed file's sealed block, read with it (else: in ``export``)

    @property
    def turn(self) -> Turn:
        return self.turns[-1]

    def forked(self, export: str, panel: str, beside: bool) -> Shown:
        """The same run after a fork of it shown in ``panel``: the fork's export, the fork among this turn's."""
        turn = replace(self.turn, forks=(*self.turn.forks, panel))
        return replace(self, source="fork", export=export, turns=(*self.turns[:-1], turn),
                       beside=panel if beside else None, followup=None)


class Steppable(Protocol):
    """A stepping run as Next step and Continue drive it (``agents.stepping.StepControls``)."""

    @property
    def waiting_for_step(self) -> bool: ...

    def step(self) -> Any: ...

    def resume(self) -> Any: ...


@dataclass
class Live:
    """A run, fork or replay streaming into the panels: its Stop signal and, for a stepping run, its handle."""

    source: Source
    stop: StopSignal
    turns: tuple[Turn, ...] = ()  # the turns it shows (a run's: those it continues, then its own)
    run: Steppable | None = None  # a stepping run once it is made (Next step / Continue)
    paused: Callable[[], Any] | None = None  # a stepping run's traces so far: a fork of the paused run reads them

    @property
    def waiting(self) -> bool:
        """The run waits for Next step (a fork may continue it from here)."""
        return self.run is not None and self.run.waiting_for_step


@dataclass
class Seat:
    """This page's class poll room: the handle it acts with, the version last drawn, and whether the teacher shows
    the split of the votes while they are open."""

    handle: str
    seen: int = 0
    show_split: bool = False

    @property
    def code(self) -> str:
        return self.handle.split(".")[0]


@dataclass
class Lesson:
    """What one open page shows, changed only through its transitions (see the module docstring)."""

    shown: Shown | None = None
    live: Live | None = None
    seat: Seat | None = None
    touched: float = field(default_factory=time.monotonic)

    # -- streams: run, step, fork, follow-up, replay ------------------------------------------------------------
    def begin(self, source: Source, stop: StopSignal, turns: tuple[Turn, ...] = (), *,
              alongside: bool = False) -> Live:
        """A new stream takes the panels, showing ``turns``, and nothing is on screen to fork, follow up or share
        until it ends. The one before is stopped (a replay playing, a paused run), unless the new one runs
        ``alongside`` it (an API caller's ``/compare`` or ``/replay``: one client may run several at once in one
        session); then the one before goes on without the panels, its end changing nothing here."""
        if self.live is not None and self.live.stop is not stop and not alongside:
            self.live.stop.stop()
        self.live, self.shown = Live(source, stop, turns), None
        return self.live

    def interrupt(self) -> None:
        """The page starts a run of its own (Run, Step; its ``/compare`` runs alongside): a replay playing or a
        paused run it shows is stopped first. A run still streaming is left alone (Run waits for it)."""
        if self.live is not None and (self.live.source == "replay" or self.live.waiting):
            self.live.stop.stop()

    def stepping(self, live: Live, run: Steppable, paused: Callable[[], Any]) -> None:
        """A stepping run was made for ``live``: Next step, Continue and a fork of the paused run find it here."""
        if self.live is live:
            live.run, live.paused = run, paused

    def end(self, live: Live, shown: Shown | None) -> None:
        """``live``'s last frame goes out, showing ``shown`` (None: no run, e.g. stopped while waiting for a slot).
        A stream that another replaced changes nothing."""
        if self.live is live:
            self.live, self.shown = None, shown

    def left(self, live: Live, unchanged: Shown | None = None) -> None:
        """``live`` is over however it ended: without a last frame (a closed tab, a fork that never got a slot),
        the panels show ``unchanged`` (what a stream that never wrote them left on screen), else nothing."""
        if self.live is live:
            self.live, self.shown = None, unchanged

    # -- runs put on screen at once: a share link, a benchmark item ----------------------------------------------
    def show(self, shown: Shown) -> None:
        """A run from a file fills the panels at once; a stream still going is stopped first."""
        if self.live is not None:
            self.live.stop.stop()
            self.live = None
        self.shown = shown

    def clear(self) -> None:
        """The panels show no run any more (a refusal replaced them)."""
        self.shown = None

    # -- what an action may start from ---------------------------------------------------------------------------
    def busy(self, action: str) -> str | None:
        """Why ``action`` must wait (a run streams and is not paused), or None."""
        if self.live is not None and not self.live.waiting:
            return BUSY.format(action=action)
        return None

    def paused_run(self) -> Live | None:
        """The stepping run waiting for Next step, if any."""
        return self.live if self.live is not None and self.live.waiting else None

    def on_screen(self, action: str) -> Shown | str:
        """The finished run an action (Fork, Share, a follow-up) works on, or the one line why there is none."""
        if (why := self.busy(action)) is not None:
            return why
        if self.shown is None or (self.shown.export is None and self.shown.followup is None):
            return NOTHING.format(action=action)
        return self.shown

    # -- the class poll ------------------------------------------------------------------------------------------
    def sit(self, handle: str) -> Seat:
        """This page holds the room of ``handle`` now (Start, or a room of this teacher shown here)."""
        self.seat = Seat(handle)
        return self.seat

    def stand(self) -> None:
        """This page holds no room any more (End poll, or it ended)."""
        self.seat = None


class Lessons:
    """Every open page's lesson, by session; thread-safe (the poll's handlers run in Gradio's threads)."""

    def __init__(self, limit: int = MAX_LESSONS, idle_s: float = IDLE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.idle_s, self.clock = limit, idle_s, clock
        self._lessons: OrderedDict[str, Lesson] = OrderedDict()
        self._lock = threading.Lock()
        self._swept = clock()

    def of(self, request: Any) -> Lesson:
        """The page's lesson, made on its first use; a call without a session (a direct call) gets one of its own,
        kept nowhere."""
        session = session_of(request)
        if not session:
            return Lesson()
        with self._lock:
            now = self.clock()
            self._sweep(now)
            lesson = self._lessons.get(session)
            if lesson is None:
                lesson = self._lessons[session] = Lesson(touched=now)
                while len(self._lessons) > self.limit:
                    self._lessons.popitem(last=False)
            self._lessons.move_to_end(session)
            lesson.touched = now
            return lesson

    def close(self, request: Any) -> Lesson | None:
        """The page closed: its lesson, given back (the caller ends what it held)."""
        session = session_of(request)
        with self._lock:
            return self._lessons.pop(session, None) if session else None

    def _sweep(self, now: float) -> None:
        """Drop lessons idle past ``idle_s`` with nothing streaming (looked at once a minute)."""
        if now - self._swept < 60.0:
            return
        self._swept = now
        for session in [s for s, lesson in self._lessons.items()
                        if now - lesson.touched >= self.idle_s and lesson.live is None]:
            del self._lessons[session]

    def __len__(self) -> int:
        with self._lock:
            return len(self._lessons)
