"""The teacher's class poll on the Compare tab: :class:`Teacher` (the handlers) and :func:`wire_poll` (events) over
the controls of ``ui/poll/controls.py``.

Start opens a room for the question and the modes on screen; the page's lesson holds it (``ui/core/lesson.Seat``).
A ``gr.Timer`` redraws only when the room changed, and the page's own events drive it: Run locks it, and the
run's export reveals each mode's answer and ✓/✗. Every event is private and unqueued.

No ``from __future__ import annotations`` here: Gradio reads a handler's type hints at every event
(``tests/app/test_serving.py``).
"""

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from agents.modes.registry import mode_title
from ui.core import page_url, visitors
from ui.core.handlers import PAGE_EVENT
from ui.core.lesson import Lesson, Lessons, Seat
from ui.core.modes import PANEL_MODES
from ui.core.safe_text import plain
from ui.poll import records, tally
from ui.poll.controls import PollControls
from ui.poll.rooms import PollError, Room, rooms

Trigger = Any  # a Gradio event listener (``button.click``), as ``gr.on`` takes it
NOTICES = {  # what the phones read when the teacher's run is not a plain live run
    "step": "The teacher is stepping through the run, one step at a time.",
    "stop": "The teacher stopped the run: some modes may not have finished.",
    "fork": "The teacher forked the run: an observation was changed by hand, then the run went on.",
    "replay": "This is a replay of a saved run, not a live one.",
}
CSV_DIR = Path(tempfile.gettempdir()) / "think-act-react-poll"
CSV_KEPT_S = 86400.0
POLLING = "!!document.getElementById('poll-code')"  # the page shows a room's code: it holds a room
# once a room is shown: the join box (its QR code and code) scrolled just into view, however tall the header above
SHOW_JOIN_JS = ("() => { requestAnimationFrame(() => document.getElementById('poll-join')"
                "?.scrollIntoView({block: 'nearest'})); }")


def gate(when_polling: str | None, otherwise: str | None = None, *, shared_page: bool = False) -> str:
    """A browser-only event (no server call) that clicks the signal ``when_polling`` if this page shows a room,
    else ``otherwise`` (only on a page opened by a shared link, with ``shared_page``). A visitor who is not polling
    costs the server nothing on Run, Stop or a run's end."""
    other = f"document.getElementById('poll-signal-{otherwise}')?.click();" if otherwise else ""
    if other and shared_page:
        other = f"if (/[?&]run=/.test(location.search)) {{ {other} }}"
    polling = f"document.getElementById('poll-signal-{when_polling}')?.click();" if when_polling else ""
    return f"() => {{ if ({POLLING}) {{ {polling} }} else {{ {other} }} }}"


def teacher_of(request: Any) -> str:
    """Who holds a room: the teacher's browser (its signed cookie), else — a client without one — the address."""
    who = visitors.visitor(request)
    return who.browser or who.address or "?"


def _drawn(room: Room, seat: Seat, problem: str = "") -> str:
    seat.seen = room.version
    return tally.tally_html(rooms().view(room), problem, seat.show_split)


def _age(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes} min" if minutes else f"{int(seconds)} s"


class Teacher:
    """The teacher's handlers over the shared store, each reading this page's lesson."""

    def __init__(self, lessons: Lessons) -> None:
        self.lessons = lessons

    def _room(self, lesson: Lesson) -> Room:
        """This page's room; :class:`PollError` (one line) when it holds none or the room ended."""
        if lesson.seat is None:
            raise PollError("Start a class poll first.")
        try:
            return rooms().owned(lesson.seat.handle)
        except PollError:
            lesson.stand()
            raise

    def _opened(self, lesson: Lesson, room: Room, show_split: Any, request: Any) -> tuple:
        """What Start and "Show it here" put on the page: the box, the join box, the board, the timer on, the
        marks, and the list of this teacher's other rooms."""
        seat = lesson.sit(rooms().handle(room))
        seat.show_split = bool(show_split)
        link = tally.join_url(page_url.public_page_url(getattr(request, "headers", None)), room.code)
        return (gr.Column(visible=True), tally.join_html(room.code, link), _drawn(room, seat), gr.Timer(active=True),
                gr.CheckboxGroup(choices=[(t, m) for m, t in room.modes], value=[]), gr.Button(visible=False),
                *self._mine(lesson, request))

    def start(self, question: str, modes: Any, show_split: Any = False, request: gr.Request | None = None) -> tuple:
        """A new room for the question and modes on screen (this page's earlier room ends)."""
        lesson = self.lessons.of(request)
        store = rooms()
        picked = [m for m in (modes if isinstance(modes, list) else [modes]) if isinstance(m, str) and m in PANEL_MODES]
        if lesson.seat is not None and str(question or "").strip() and picked:  # a refused start keeps the room
            with contextlib.suppress(PollError):
                store.end(store.owned(lesson.seat.handle).code, "The teacher started a new poll: this one has ended.")
            lesson.stand()
        try:
            room = store.create(teacher_of(request), question, [(m, mode_title(m)) for m in picked],
                                page=str(getattr(request, "session_hash", "") or ""))
        except PollError as refused:
            return (gr.Column(visible=True), "", tally.tally_html(None, refused.line), gr.Timer(active=False),
                    gr.skip(), gr.skip(), *self._mine(lesson, request))
        return self._opened(lesson, room, show_split, request)

    def show_here(self, code: Any, show_split: Any = False, request: gr.Request | None = None) -> tuple:
        """One of this teacher's rooms, shown and driven from this page (a reloaded page takes its room back)."""
        lesson = self.lessons.of(request)
        try:
            room = rooms().show_on(str(code or ""), teacher_of(request), str(getattr(request, "session_hash", "")))
        except PollError as refused:
            return (gr.skip(), gr.skip(), tally.tally_html(None, refused.line), gr.skip(), gr.skip(), gr.skip(),
                    *self._mine(lesson, request))
        return self._opened(lesson, room, show_split, request)

    def end_mine(self, code: Any, request: gr.Request | None = None) -> tuple:
        """End one of this teacher's rooms listed here (another teacher's is never listed, nor ended)."""
        lesson = self.lessons.of(request)
        mine = {r.code for r in rooms().rooms_of(teacher_of(request))}
        if isinstance(code, str) and code in mine:
            rooms().end(code)
        return self._mine(lesson, request)

    def mine(self, request: gr.Request | None = None) -> tuple:
        """The list of this teacher's rooms this page does not show (page load, the accordion opened)."""
        return self._mine(self.lessons.of(request), request)

    def _mine(self, lesson: Lesson, request: Any) -> tuple:
        now = rooms().clock()
        here = lesson.seat.code if lesson.seat is not None else None
        listed = []
        for room in rooms().rooms_of(teacher_of(request)):
            if room.code == here:
                continue
            where = (f"page closed {_age(now - room.closed_at)} ago: it ends unless shown again"
                     if room.closed_at is not None else "on another page")
            listed.append((f"{room.code} · “{room.question[:60]}” · {where}", room.code))
        return (gr.Column(visible=bool(listed)),
                gr.Radio(choices=listed, value=listed[0][1] if listed else None))

    def split(self, on: Any, request: gr.Request | None = None) -> Any:
        """The teacher's switch: the split of an open round shown, or only how many voted (the default)."""
        lesson = self.lessons.of(request)
        try:
            room = self._room(lesson)
        except PollError:
            return gr.skip()
        assert lesson.seat is not None
        lesson.seat.show_split = bool(on)
        return _drawn(room, lesson.seat)

    def tick(self, request: gr.Request | None = None) -> tuple:
        """The timer: redraw the board when the room changed; say once that it ended (and stop ticking)."""
        lesson = self.lessons.of(request)
        if lesson.seat is None:
            return gr.skip(), gr.Timer(active=False)
        seat = lesson.seat
        try:
            room = self._room(lesson)
        except PollError as ended:
            return tally.tally_html(None, ended.line), gr.Timer(active=False)
        if room.version == seat.seen:
            return gr.skip(), gr.skip()
        return _drawn(room, seat), gr.skip()

    def acting(self, action: Callable[[Room, Any], Room]) -> Callable[..., str]:
        """A teacher's button on the room: the redrawn board, or its one line."""
        def act(question: Any = None, request: gr.Request | None = None) -> str:
            lesson = self.lessons.of(request)
            try:
                room = self._room(lesson)
                assert lesson.seat is not None
                return _drawn(action(room, question), lesson.seat)
            except PollError as refused:
                return tally.tally_html(self._public(lesson), refused.line)
        return act

    def _public(self, lesson: Lesson) -> dict[str, Any] | None:
        try:
            return rooms().view(self._room(lesson))
        except PollError:
            return None

    def on_run(self, kind: str | None) -> Callable[..., None]:
        """The page's run events: a run locks the round; Step, Stop, Fork, Replay give the phones one line."""
        def moved(request: gr.Request | None = None) -> None:
            try:
                room = self._room(self.lessons.of(request))
            except PollError:
                return
            if kind == "stop":
                if room.state == "running":
                    rooms().set_state(room.code, "running", NOTICES["stop"])
                return
            if room.state == "revealed" and kind is None:
                return  # a new run after the reveal: "Vote again" opens the next round first
            rooms().set_state(room.code, "running", NOTICES.get(kind or "", ""))
        return moved

    async def reveal(self, share_line: Any, marks: Any = None, request: gr.Request | None = None) -> str | Any:
        """Each polled mode's short answer and ✓/✗ from the export of the run on screen (the lesson's; a replayed
        file only with the teacher's ``marks``, from the Reveal button). Nothing happens before a room's votes
        were locked by a run."""
        lesson = self.lessons.of(request)
        try:
            room = self._room(lesson)
        except PollError:
            return gr.skip()
        shown = lesson.shown
        path = shown.export if shown is not None and (shown.source != "replay" or marks is not None) else None
        export = await asyncio.to_thread(tally.read_export, path)
        seat = lesson.seat
        assert seat is not None
        if export is None:
            line = "Run the question first: the reveal reads the run's answers." if marks is not None else ""
            return tally.tally_html(rooms().view(room), line, seat.show_split) if line else gr.skip()
        if marks is None and room.state not in ("running", "locked"):
            return gr.skip()
        modes = [m for m, _ in room.modes]
        verdicts = export.get("verdicts") if isinstance(export.get("verdicts"), dict) else {}
        use_marks = marks if isinstance(marks, list) and not verdicts else None
        answers, notice = tally.reveal_of(export, modes, use_marks)
        if shown is not None and shown.source in ("run", "step", "fork"):  # this page's own export, never a file of
            kept = rooms().view(room)  # a visitor's: before the phones see the reveal, so a Share then keeps it
            kept["rounds"][-1]["reveal"] = answers
            await asyncio.to_thread(records.keep_with_export, path, kept)
        try:
            rooms().set_reveal(room.code, answers, tally.run_link_in(share_line))
            if notice or room.notice:
                rooms().set_state(room.code, "revealed", notice or room.notice)
            return _drawn(self._room(lesson), seat)
        except PollError as refused:
            return tally.tally_html(None, refused.line)

    async def recorded(self, files: Any = None, request: gr.Request | None = None) -> tuple:
        """A run put on screen with a class poll kept in its file (a replayed file, ``files``; else the shared run
        the lesson shows): its line, and the accordion opened to show it. A page holding a room leaves it alone."""
        lesson = self.lessons.of(request)
        if lesson.seat is not None:
            return gr.skip(), gr.skip()
        path = files if isinstance(files, str) else (lesson.shown.export if lesson.shown is not None else None)
        record = await asyncio.to_thread(records.record_in, path)
        if record is None:
            return "", gr.skip()
        return f"**This run's class poll:** {plain(records.summary(record))}", gr.Accordion(open=True)

    def shared(self, share_line: Any, request: gr.Request | None = None) -> None:
        """A share link made after the reveal: the phones get "open the full run"."""
        link = tally.run_link_in(share_line)
        try:
            room = self._room(self.lessons.of(request))
        except PollError:
            return
        if link and room.state == "revealed" and room.link != link:
            rooms().update(room.code, lambda r: setattr(r, "link", link))

    def csv_of(self, request: gr.Request | None = None) -> Any:
        """The tallies as a CSV file (counts only)."""
        room = self._public(self.lessons.of(request))
        if room is None:
            return gr.File(visible=False)
        CSV_DIR.mkdir(parents=True, exist_ok=True)
        for old in CSV_DIR.glob("class-poll-*.csv"):  # a day's downloads at most: a CSV is made again in one click
            with contextlib.suppress(OSError):
                if time.time() - old.stat().st_mtime > CSV_KEPT_S:
                    old.unlink()
        path = CSV_DIR / f"class-poll-{room['code']}-v{room['version']}.csv"
        path.write_text(tally.tallies_csv(room), encoding="utf-8")
        return gr.File(str(path), visible=True)

    def end(self, request: gr.Request | None = None) -> tuple:
        """End poll: the room ends, the box closes."""
        lesson = self.lessons.of(request)
        with contextlib.suppress(PollError):
            rooms().end(self._room(lesson).code)
        lesson.stand()
        return (gr.Column(visible=False), "", "", gr.Timer(active=False), gr.File(None, visible=False),
                gr.Button(visible=True), *self._mine(lesson, request))

    @staticmethod
    def closed(request: gr.Request) -> None:
        """The teacher's page closed (``demo.unload``): the rooms it shows end after the grace time, unless one of
        their pages shows them again."""
        if session := str(getattr(request, "session_hash", "") or ""):
            rooms().page_closed(session)


@dataclass(frozen=True)
class PageHooks:
    """What of the Compare tab the poll reads or listens to (components and event triggers)."""

    question: gr.Textbox
    modes: gr.Dropdown
    exports: gr.File
    share_link: gr.Markdown
    replay_file: gr.File
    runs: list[Trigger]  # what starts a live run: Run, Enter in the question or expected answer, Ask a follow-up
    step: Trigger
    stop: Trigger
    fork: Trigger
    replay: Trigger
    more_steps: tuple[Trigger, ...] = ()  # other starts of a stepping run: Step a follow-up
    more_forks: tuple[Trigger, ...] = ()  # other starts of a fork: Test the evidence


def hooks_of(page: Any) -> PageHooks:
    """What the poll needs of ``app.ComparePage`` (taken by name: a feature does not import the app)."""
    return PageHooks(page.question, page.modes, page.outputs.exports, page.share_link, page.replay_file,
                     runs=[page.run_btn.click, page.question.submit, page.expected.submit,
                           page.followup.ask_btn.click],
                     step=page.step.step_btn.click, stop=page.stop_btn.click, fork=page.fork.button.click,
                     replay=page.replay_btn.click, more_steps=(page.followup.step_btn.click,),
                     more_forks=(page.fork.evidence.click,))


def wire_poll(poll: PollControls, page: Any, lessons: Lessons) -> Teacher:
    """The poll's events on ``app.ComparePage``. Wire it before the runs: Gradio's page starts a trigger's events in
    turn, a later one only after a run before it has streamed to its end, and a run must lock the votes as it
    starts. Opening the accordion lists this teacher's rooms."""
    hooks = page if isinstance(page, PageHooks) else hooks_of(page)
    teacher = Teacher(lessons)
    mine = [poll.mine_box, poll.mine]
    opened = [poll.box, poll.join, poll.board, poll.timer, poll.marks, poll.start, *mine]
    browser_only = {"fn": None, "queue": False, "api_visibility": "private", "show_progress": "hidden"}
    for shown in (poll.start.click(teacher.start, [hooks.question, hooks.modes, poll.split], opened, **PAGE_EVENT),
                  poll.show_here.click(teacher.show_here, [poll.mine, poll.split], opened, **PAGE_EVENT)):
        shown.then(js=SHOW_JOIN_JS, **browser_only)
    poll.end_mine.click(teacher.end_mine, poll.mine, mine, **PAGE_EVENT)
    poll.accordion.expand(teacher.mine, None, mine, **PAGE_EVENT)
    poll.split.change(teacher.split, poll.split, poll.board, **PAGE_EVENT)
    poll.timer.tick(teacher.tick, None, [poll.board, poll.timer], **PAGE_EVENT)
    poll.lock.click(teacher.acting(lambda room, _: rooms().lock(room.code)), None, poll.board, **PAGE_EVENT)
    poll.again.click(teacher.acting(lambda room, question: rooms().again(room.code, question)), hooks.question,
                     poll.board, **PAGE_EVENT)
    poll.end.click(teacher.end, None, [poll.box, poll.join, poll.board, poll.timer, poll.csv_file, poll.start,
                                       *mine], **PAGE_EVENT)
    poll.csv_btn.click(teacher.csv_of, None, poll.csv_file, **PAGE_EVENT)
    signals = poll.signals
    gr.on(hooks.runs, js=gate("run"), **browser_only)
    signals["run"].click(teacher.on_run(None), **PAGE_EVENT)
    for kind in ("step", "stop", "fork"):
        getattr(hooks, kind)(js=gate(kind), **browser_only)
        signals[kind].click(teacher.on_run(kind), **PAGE_EVENT)
    for trigger in hooks.more_steps:
        trigger(js=gate("step"), **browser_only)
    for trigger in hooks.more_forks:
        trigger(js=gate("fork"), **browser_only)
    hooks.replay(js=gate("replay", "replayed"), **browser_only)  # a replayed file may hold a class poll
    signals["replay"].click(teacher.on_run("replay"), **PAGE_EVENT)
    signals["replayed"].click(teacher.recorded, hooks.replay_file, [poll.record, poll.accordion], **PAGE_EVENT)
    hooks.exports.change(js=gate("reveal", "record", shared_page=True), **browser_only)  # a run's end, a shared run
    signals["reveal"].click(teacher.reveal, hooks.share_link, poll.board, **PAGE_EVENT)
    signals["record"].click(teacher.recorded, None, [poll.record, poll.accordion], **PAGE_EVENT)
    poll.reveal.click(teacher.reveal, [hooks.share_link, poll.marks], poll.board, **PAGE_EVENT)
    hooks.share_link.change(js=gate("shared"), **browser_only)
    signals["shared"].click(teacher.shared, hooks.share_link, **PAGE_EVENT)
    return teacher
