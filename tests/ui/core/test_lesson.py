"""The page's lesson (``ui/core/lesson.py``): each transition — run, step, fork, follow-up, replay, share, a benchmark
item, stop, a poll round — on its own, and the store that keeps one lesson per page and gives it back."""

from __future__ import annotations

from types import SimpleNamespace

from ui.core.lesson import BUSY, NOTHING, Lesson, Lessons, Shown, Turn
from ui.core.stream import StopSignal

FIRST = Turn("What is 17 * 23 + 5?", "396")


class FakeRun:
    """A stepping run as Next step and Continue see it."""

    def __init__(self) -> None:
        self.waiting_for_step = True
        self.steps = 0

    def step(self) -> None:
        self.steps += 1

    def resume(self) -> None:
        self.waiting_for_step = False


def ran(lesson: Lesson, source: str = "run", export: str = "/x/run.json", turns=(FIRST,)) -> Shown:
    """A run of ``source`` from its start to its last frame."""
    live = lesson.begin(source, StopSignal(), turns)  # type: ignore[arg-type]
    shown = Shown(source, export, turns)  # type: ignore[arg-type]
    lesson.end(live, shown)
    return shown


def test_run_shows_nothing_until_its_last_frame_then_its_export_and_turns():
    lesson = Lesson()
    live = lesson.begin("run", StopSignal(), (FIRST,))
    assert lesson.shown is None and lesson.live is live and live.turns == (FIRST,)
    assert lesson.on_screen("fork") == BUSY.format(action="fork")
    lesson.end(live, Shown("run", "/x/run.json", (FIRST,)))
    assert lesson.live is None and lesson.shown.export == "/x/run.json" and lesson.shown.turn == FIRST
    assert lesson.on_screen("fork") is lesson.shown


def test_a_new_stream_stops_the_one_before_and_a_replaced_stream_changes_nothing():
    lesson = Lesson()
    first_stop, second_stop = StopSignal(), StopSignal()
    replay = lesson.begin("replay", first_stop)
    run = lesson.begin("run", second_stop)
    assert first_stop.stopped and not second_stop.stopped and lesson.live is run
    lesson.end(replay, Shown("replay", "/x/old.json", (FIRST,)))  # the replay's stopped frame, late
    assert lesson.live is run and lesson.shown is None
    lesson.left(replay)
    assert lesson.live is run


def test_an_api_callers_run_goes_alongside_and_the_pages_run_stops_a_replay_or_a_paused_run():
    """``/compare`` runs alongside what the session streams (a client may run several at once); the page's Run
    first stops a replay or a paused run it shows, never a run still streaming."""
    lesson = Lesson()
    first_stop, second_stop = StopSignal(), StopSignal()
    first = lesson.begin("run", first_stop, (FIRST,))
    second = lesson.begin("run", second_stop, (FIRST,), alongside=True)
    assert not first_stop.stopped and lesson.live is second
    lesson.end(first, Shown("run", "/x/first.json", (FIRST,)))  # the first one's end: not what the panels show
    assert lesson.live is second and lesson.shown is None
    lesson.interrupt()  # the page's Run while a run streams: it goes on
    assert not second_stop.stopped
    lesson.end(second, Shown("run", "/x/second.json", (FIRST,)))
    replay_stop = StopSignal()
    lesson.begin("replay", replay_stop)
    lesson.interrupt()
    assert replay_stop.stopped
    step_stop = StopSignal()
    live = lesson.begin("step", step_stop, (FIRST,))
    lesson.stepping(live, FakeRun(), lambda: None)  # paused after its first step
    lesson.interrupt()
    assert step_stop.stopped


def test_step_hands_the_paused_run_to_next_step_and_to_a_fork():
    lesson = Lesson()
    live = lesson.begin("step", StopSignal(), (FIRST,))
    assert lesson.paused_run() is None  # waiting for a slot: no run yet
    run = FakeRun()
    lesson.stepping(live, run, lambda: "traces so far")
    assert lesson.paused_run() is live and live.paused() == "traces so far"
    assert lesson.busy("fork") is None  # a paused run may be forked
    run.waiting_for_step = False  # stepping on: a run streams
    assert lesson.busy("fork") == BUSY.format(action="fork") and lesson.paused_run() is None
    other = Lesson()
    other.stepping(live, FakeRun(), lambda: None)  # another page's stream: nothing here
    assert other.live is None


def test_fork_keeps_the_turns_and_records_the_fork_in_this_turn():
    lesson = Lesson()
    shown = ran(lesson, turns=(FIRST, Turn("What is 400 * 2?", "800")))
    live = lesson.begin("fork", StopSignal(), shown.turns)
    assert lesson.shown is None
    lesson.end(live, shown.forked("/x/fork.json", "react@1", beside=True))
    after = lesson.shown
    assert after.source == "fork" and after.export == "/x/fork.json" and after.beside == "react@1"
    assert after.turns[0] == FIRST and after.turn == Turn("What is 400 * 2?", "800", forks=("react@1",))
    in_place = after.forked("/x/fork2.json", "react@1", beside=False)
    assert in_place.beside is None and in_place.turn.forks == ("react@1", "react@1")


def test_a_fork_that_never_got_a_slot_leaves_the_run_on_screen():
    lesson = Lesson()
    shown = ran(lesson)
    live = lesson.begin("fork", StopSignal(), shown.turns)
    lesson.left(live, shown)  # refused for a full app: nothing was forked
    assert lesson.shown is shown and lesson.live is None


def test_follow_up_starts_from_the_run_on_screen_or_says_why_not():
    lesson = Lesson()
    assert lesson.on_screen("ask a follow-up") == NOTHING.format(action="ask a follow-up")
    shown = ran(lesson)
    assert lesson.on_screen("ask a follow-up") is shown
    live = lesson.begin("run", StopSignal(), (FIRST, Turn("And 396 * 2?")))  # the follow-up runs
    assert "still going" in lesson.on_screen("ask a follow-up")
    lesson.end(live, Shown("run", "/x/turn2.json", (FIRST, Turn("And 396 * 2?"))))
    assert [t.expected for t in lesson.shown.turns] == ["396", None]  # each turn its own expected answer


def test_replay_shows_the_replayed_file_and_its_block():
    lesson = Lesson()
    live = lesson.begin("replay", StopSignal())
    block = {"format": "think-act-react/followup@1"}
    lesson.end(live, Shown("replay", "/upload/run.json", (FIRST,), followup=block, model="stub"))
    assert lesson.on_screen("ask a follow-up").followup is block and lesson.shown.model == "stub"


def test_share_and_a_benchmark_item_fill_the_panels_at_once_and_stop_what_streamed():
    lesson = Lesson()
    stop = StopSignal()
    lesson.begin("replay", stop)
    lesson.show(Shown("share", "/x/shared-run.json", (FIRST,)))
    assert stop.stopped and lesson.live is None and lesson.shown.source == "share"
    assert lesson.on_screen("share").export == "/x/shared-run.json"
    lesson.show(Shown("benchmark", "/x/benchmark-item.json", (Turn("Q?", "gold"),)))
    assert lesson.shown.turn.expected == "gold"


def test_stop_only_stops_the_stream_and_its_stopped_frame_says_what_is_on_screen():
    lesson = Lesson()
    stop = StopSignal()
    live = lesson.begin("run", stop, (FIRST,))
    stop.stop()  # the Stop button: the signal alone, the lesson is the stream's to change
    assert lesson.live is live
    lesson.end(live, Shown("run", "/x/stopped.json", (FIRST,)))
    assert lesson.shown.export == "/x/stopped.json" and lesson.live is None


def test_a_refusal_or_a_closed_tab_leaves_nothing_on_screen():
    lesson = Lesson()
    ran(lesson)
    lesson.clear()
    assert lesson.shown is None
    live = lesson.begin("run", StopSignal())
    lesson.left(live)  # the tab closed mid-run: no last frame
    assert lesson.live is None and lesson.shown is None


def test_a_poll_round_sits_on_the_page_and_stands_up_when_it_ends():
    lesson = Lesson()
    seat = lesson.sit("ABCDEF.secret.boot")
    assert lesson.seat is seat and seat.code == "ABCDEF" and seat.show_split is False and seat.seen == 0
    lesson.stand()
    assert lesson.seat is None


def test_turns_read_from_a_follow_up_block():
    turn = Turn.of_block({"question": "Q?", "answers": {}, "expected": "4", "edits": {"react@1": {"step": 1}}})
    assert turn == Turn("Q?", "4", ("react@1",))
    assert Turn.of_block({"question": "Q?", "answers": {}}) == Turn("Q?")  # a block written before expected answers


def test_one_lesson_per_page_given_back_when_it_closes():
    lessons = Lessons()
    page, other = SimpleNamespace(session_hash="a"), SimpleNamespace(session_hash="b")
    assert lessons.of(page) is lessons.of(page) and lessons.of(page) is not lessons.of(other)
    assert lessons.of(None) is not lessons.of(None) and len(lessons) == 2  # a direct call: kept nowhere
    closed = lessons.of(page)
    assert lessons.close(page) is closed and len(lessons) == 1 and lessons.of(page) is not closed


def test_idle_lessons_are_dropped_and_the_store_is_bounded():
    now = [0.0]
    lessons = Lessons(limit=3, idle_s=100.0, clock=lambda: now[0])
    pages = [SimpleNamespace(session_hash=str(n)) for n in range(5)]
    for page in pages:
        lessons.of(page)
    assert len(lessons) == 3  # the least recently used go first
    streaming = lessons.of(pages[4])
    streaming.begin("run", StopSignal())
    now[0] = 200.0
    lessons.of(SimpleNamespace(session_hash="new"))
    assert len(lessons) == 2 and lessons.of(pages[4]) is streaming  # a lesson with a stream is kept
