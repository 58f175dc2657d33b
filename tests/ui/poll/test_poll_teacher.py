"""The teacher's side of the class poll without a browser: the handlers over the shared store and the page's lesson,
the split hidden while voting is open, the teacher's own rooms (known by their browser, not their address), a
closed page's grace time, the reveal read from the run on screen, the page's run events as one line for the phones,
the CSV, and what is shown when the room ended or the app restarted."""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import json
from types import SimpleNamespace

import pytest

from ui.core.lesson import Lessons, Shown, Turn
from ui.core.visitors import COOKIE, browser_cookie_value
from ui.poll import rooms as poll_rooms
from ui.poll import tally
from ui.poll.rooms import BOOT, RoomLimits, RoomStore
from ui.poll.teacher import Teacher, teacher_of

PAGES = itertools.count()


@pytest.fixture
def store():
    saved = poll_rooms._store
    poll_rooms._store = RoomStore()
    try:
        yield poll_rooms._store
    finally:
        poll_rooms._store = saved


@pytest.fixture
def teacher() -> Teacher:
    return Teacher(Lessons())


def request(host: str = "class.example:7860", browser: str | None = "teacherbrowser1",
            address: str = "10.1.2.3") -> SimpleNamespace:
    """One page of a teacher: its own session, their browser's signed cookie, their network's address."""
    headers = {"host": host, **({"cookie": f"{COOKIE}={browser_cookie_value(browser)}"} if browser else {})}
    return SimpleNamespace(headers=headers, client=SimpleNamespace(host=address), session_hash=f"page-{next(PAGES)}")


def started(teacher: Teacher, question: str = "What is 17 * 23 + 5?", modes=("think", "act", "react"),
            page: SimpleNamespace | None = None) -> tuple[SimpleNamespace, str]:
    """A page that started a poll: its request (the page) and the join box."""
    page = page or request()
    out = teacher.start(question, list(modes), False, page)
    seat = teacher.lessons.of(page).seat
    assert seat is not None and seat.handle.endswith(BOOT), out
    return page, out[1]


def code_of(teacher: Teacher, page) -> str:
    return teacher.lessons.of(page).seat.code


def on_screen(teacher: Teacher, page, path: str, source: str = "run") -> None:
    teacher.lessons.of(page).show(Shown(source, path, (Turn("What is 17 * 23 + 5?"),)))  # type: ignore[arg-type]


def export(tmp_path, *, expected: bool = True, stopped: bool = False, errors=()) -> str:
    rows = [{"mode": "think", "answer": "roughly 400", "error": None},
            {"mode": "act", "answer": "396", "error": None},
            {"mode": "react", "answer": None if "react" in errors else "396",
             "error": "HTTP 503: overloaded" if "react" in errors else None}]
    data = {"format": "think-act-react/run@1", "stopped": stopped, "comparison": {"rows": rows}, "traces": {},
            "verdicts": {"think": {"correct": False}, "act": {"correct": True}, "react": {"correct": True}}
            if expected else {}}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_start_shows_the_code_link_and_qr_and_how_many_voted_not_the_split(store, teacher):
    page, join = started(teacher)
    code = code_of(teacher, page)
    assert f"http://class.example:7860/?room={code}" in join and "<svg" in join and code in join
    assert "Phones cannot open this link" not in join  # a real address: no warning
    assert not any(isinstance(value, str) for value in teacher.tick(page))  # unchanged since Start: nothing is sent
    for choice in ("act", "act", "react"):  # three phones, each with the voter id it joined with
        store.vote(code, store.join(code, "10.0.0.1"), choice, "10.0.0.1")
    board, _ = teacher.tick(page)
    assert "3 voted" in board and "%" not in board and 'class="poll-n"' not in board  # no split while open
    assert "split shows when the votes are locked" in board
    board = teacher.split(True, page)  # the teacher's switch shows it
    assert "67 % predicted Act-only" in board and "33 % predicted ReAct" in board
    teacher.split(False, page)
    board = teacher.acting(lambda room, _: store.lock(room.code))(None, page)  # the lock shows it too
    assert "67 % predicted Act-only" in board and "3 voted · locked" in board


def test_a_loopback_join_link_says_phones_cannot_open_it_and_what_to_set(store, teacher):
    _, join = started(teacher, page=request(host="127.0.0.1:7860"))
    assert "Phones cannot open this link: 127.0.0.1 is this computer&#x27;s own address" in join
    assert "APP_PUBLIC_URL" in join
    for link, loop in (("http://localhost:7860/?room=X", "localhost"), ("http://[::1]:7860/?room=X", "::1"),
                       ("http://192.168.1.20:7860/?room=X", None), ("https://a-b.hf.space/?room=X", None)):
        assert tally.loopback_host(link) == loop


def test_app_public_url_is_the_join_links_address(store, teacher, monkeypatch):
    from ui.core import settings

    monkeypatch.setattr(settings, "_current", settings.AppSettings(public_url="http://192.168.1.20:7860/"))
    page, join = started(teacher, page=request(host="127.0.0.1:7860"))
    assert f"http://192.168.1.20:7860/?room={code_of(teacher, page)}" in join and "Phones cannot" not in join


def test_start_refuses_without_a_question_in_one_line(store, teacher):
    out = teacher.start("   ", ["react"], False, request())
    assert "Type the question first" in out[2] and len(store) == 0
    out = teacher.start("Q?", ["x" * 10_000, 3, None], False, request())  # only the page's modes
    assert "Pick at least one mode" in out[2] and len(store) == 0


def test_starting_again_ends_the_pages_earlier_room(store, teacher):
    page, _ = started(teacher)
    first = code_of(teacher, page)
    teacher.start("", ["react"], False, page)  # refused (no question): the room stays
    assert store.get(first) is not None and code_of(teacher, page) == first
    teacher.start("Another question?", ["react"], False, page)
    assert len(store) == 1 and code_of(teacher, page) != first
    assert "started a new poll" in store.gone_why(first)


def test_a_teacher_is_their_browser_and_lists_their_rooms_on_any_page(store, teacher):
    """Two teachers behind one school address each see only their own rooms; a second page of the same browser
    lists the first page's room, can show it there, and can end it."""
    mine, theirs = "teacherbrowserA", "teacherbrowserB"
    a1, _ = started(teacher, page=request(browser=mine))
    b1, _ = started(teacher, page=request(browser=theirs))
    assert teacher_of(a1) != teacher_of(b1) and a1.client.host == b1.client.host
    a2 = request(browser=mine)
    box, listed = teacher.mine(a2)
    assert box.visible is True and [c for _, c in listed.choices] == [code_of(teacher, a1)]
    assert teacher.mine(request(browser=theirs))[1].choices[0][1] == code_of(teacher, b1)
    teacher.end_mine(code_of(teacher, b1), a2)  # another teacher's room is not theirs to end
    assert store.get(code_of(teacher, b1)) is not None
    out = teacher.show_here(code_of(teacher, a1), False, a2)  # shown here now, driven from this page
    assert code_of(teacher, a2) == code_of(teacher, a1) and "<svg" in out[1]
    assert teacher.show_here(code_of(teacher, b1), False, request(browser=mine))[2].count("not yours") == 1
    teacher.end_mine(code_of(teacher, a1), request(browser=mine))
    assert store.get(code_of(teacher, a1)) is None and teacher.mine(request(browser=mine))[0].visible is False


def test_a_closed_pages_room_ends_after_the_grace_time_and_frees_the_cap(teacher):
    clock = [1000.0]
    saved, poll_rooms._store = poll_rooms._store, RoomStore(
        RoomLimits(per_teacher=3, grace_s=300), clock=lambda: clock[0])
    try:
        store = poll_rooms._store
        pages = [started(teacher, page=request())[0] for _ in range(3)]
        codes = [code_of(teacher, p) for p in pages]
        assert "3 open class polls" in teacher.start("A fourth?", ["react"], False, request())[2]
        for page in pages:  # each page closes without End poll
            teacher.closed(page)
        clock[0] += 60
        fourth = request()
        listed = teacher.mine(fourth)[1]
        assert sorted(c for _, c in listed.choices) == sorted(codes)
        assert all("page closed 1 min ago" in label for label, _ in listed.choices)
        teacher.show_here(codes[0], False, fourth)  # taken back in its grace time: it stays
        clock[0] += 300
        assert store.get(codes[0]) is not None and store.get(codes[1]) is None and store.get(codes[2]) is None
        assert "page closed" in store.gone_why(codes[1])
        assert teacher.lessons.of(fourth).seat is not None
        teacher.start("A new one?", ["react"], False, request())  # the cap counts the rooms still in use
        assert len(store) == 2
    finally:
        poll_rooms._store = saved


def test_the_page_runs_lock_the_votes_and_give_the_phones_one_line(store, teacher):
    page, _ = started(teacher)
    code = code_of(teacher, page)
    teacher.on_run("step")(page)
    room = store.get(code)
    assert room.state == "running" and room.current.locked and "stepping" in room.notice
    teacher.on_run("stop")(page)
    assert "stopped" in store.get(code).notice
    teacher.on_run("replay")(page)
    assert "replay" in store.get(code).notice
    teacher.on_run("fork")(page)
    assert "forked" in store.get(code).notice
    teacher.on_run(None)(page)
    assert store.get(code).notice == ""


def test_the_export_on_screen_reveals_each_modes_answer_and_mark(store, teacher, tmp_path):
    page, _ = started(teacher)
    code = code_of(teacher, page)
    for choice in ["think"] * 7 + ["react"] * 3:  # ten phones, each with the voter id it joined with
        store.vote(code, store.join(code, "10.0.0.1"), choice, "10.0.0.1")
    teacher.on_run(None)(page)
    on_screen(teacher, page, export(tmp_path))
    share = "**Share this run:** [http://x:1/?run=abcdefghijklmnop1234](http://x:1/?run=abcdefghijklmnop1234)"
    board = asyncio.run(teacher.reveal(share, None, page))
    assert "70 % predicted Think-only — <span class=\"poll-wrong\">✗ wrong" in board
    assert "30 % predicted ReAct — <span class=\"poll-right\">✓ right" in board
    room = store.get(code)
    assert room.state == "revealed" and room.link == "?run=abcdefghijklmnop1234"  # on the phone's own app
    assert tally.run_link_in("[x](https://evil.example/?run=abcdefghijklmnop1234)") == "?run=abcdefghijklmnop1234"
    assert tally.run_link_in("[x](https://x/?run=short)") is None and tally.run_link_in(None) is None
    assert room.reveal["act"] == {"answer": "396", "correct": True}
    kept = json.loads((tmp_path / "run.json").read_text())["poll"]  # the tallies are kept with the run's export
    assert kept["rounds"][0]["tally"] == {"think": 7, "act": 0, "react": 3, "none": 0}


def test_vote_again_asks_the_question_on_screen(store, teacher):
    page, _ = started(teacher)
    code = code_of(teacher, page)
    teacher.acting(lambda room, question: store.again(room.code, question))("And what is 396 * 2?", page)
    room = store.get(code)
    assert len(room.rounds) == 2 and room.question == "And what is 396 * 2?" and room.state == "open"


def test_without_an_expected_answer_the_teacher_marks_then_reveals(store, teacher, tmp_path):
    page, _ = started(teacher)
    code = code_of(teacher, page)
    teacher.on_run(None)(page)
    on_screen(teacher, page, export(tmp_path, expected=False))
    asyncio.run(teacher.reveal("", None, page))  # the run's end: answers shown, marks to come
    assert {m: r["correct"] for m, r in store.get(code).reveal.items()} == {"think": None, "act": None,
                                                                            "react": None}
    assert tally.right_of(store.get(code).public(), "none") is None
    asyncio.run(teacher.reveal("", ["react"], page))  # the teacher marks ReAct right
    marks = {m: r["correct"] for m, r in store.get(code).reveal.items()}
    assert marks == {"think": False, "act": False, "react": True}
    assert tally.right_of(store.get(code).public(), "none") is False


def test_a_stopped_or_failed_run_says_so_on_the_phones(store, teacher, tmp_path):
    page, _ = started(teacher)
    teacher.on_run(None)(page)
    on_screen(teacher, page, export(tmp_path, stopped=True))
    asyncio.run(teacher.reveal("", None, page))
    assert "stopped the run" in store.get(code_of(teacher, page)).notice
    answers, notice = tally.reveal_of(json.loads(open(export(tmp_path, errors=("react",))).read()),
                                      ["think", "act", "react"])
    assert answers["react"]["answer"].startswith("failed: HTTP 503") and notice == "1 mode failed in this run."


def test_the_reveal_waits_for_a_run(store, teacher, tmp_path):
    page, _ = started(teacher)
    out = asyncio.run(teacher.reveal("", [], page))
    assert "Run the question first" in out
    on_screen(teacher, page, export(tmp_path))  # a run from before the poll's
    asyncio.run(teacher.reveal("", None, page))
    assert store.get(code_of(teacher, page)).state == "open"


def test_text_from_visitors_and_models_is_escaped(store, teacher):
    page, _ = started(teacher, question="<img src=x onerror=alert(1)>?")
    store.set_reveal(code_of(teacher, page), {"act": {"answer": "<script>alert(1)</script>", "correct": True}})
    board = teacher.tick(page)[0]
    assert "<script>" not in board and "&lt;script&gt;" in board and "<img" not in board


def test_the_csv_holds_counts_only(store, teacher):
    page, _ = started(teacher)
    code = code_of(teacher, page)
    phones = [store.join(code, "10.0.0.1") for _ in range(2)]
    store.vote(code, phones[0], "act", "10.0.0.1")
    store.set_reveal(code, {"think": {"answer": "4", "correct": False}, "act": {"answer": "5", "correct": True},
                            "react": {"answer": "5", "correct": True}})
    store.again(code)
    store.vote(code, phones[1], "react", "10.0.0.1")
    path = teacher.csv_of(page).value
    text = open(path if isinstance(path, str) else path["path"]).read()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["round", "choice", "title", "votes", "share_pct", "right"]
    assert ["1", "act", "Act-only", "1", "100", "yes"] in rows and ["2", "react", "ReAct", "1", "100", ""] in rows
    assert phones[0] not in text and phones[1] not in text and len(rows) == 1 + 2 * 4


def test_an_ended_room_or_a_restart_is_one_line_and_the_timer_stops(store, teacher):
    page, _ = started(teacher)
    store.end(code_of(teacher, page))
    board, timer = teacher.tick(page)
    assert "The teacher ended this poll." in board and timer.active is False
    assert teacher.lessons.of(page).seat is None
    page, _ = started(teacher)
    seat = teacher.lessons.of(page).seat
    code, secret, _ = seat.handle.split(".")
    seat.handle = f"{code}.{secret}.0ld0b00t"
    assert "The app restarted" in teacher.tick(page)[0]
    page, _ = started(teacher)
    seat = teacher.lessons.of(page).seat
    seat.handle = f"{seat.code}.wrong-secret.{BOOT}"
    assert "not yours" in teacher.tick(page)[0]


def test_a_replay_is_revealed_from_the_replayed_file(store, teacher, tmp_path):
    page, _ = started(teacher)
    teacher.on_run("replay")(page)
    path = export(tmp_path)
    before = open(path).read()
    on_screen(teacher, page, path, source="replay")
    asyncio.run(teacher.reveal("", None, page))  # a replay's end reveals nothing by itself
    assert store.get(code_of(teacher, page)).state == "running"
    asyncio.run(teacher.reveal("", [], page))  # Reveal reads the replayed file
    assert open(path).read() == before  # a visitor's file is read, never written
    room = store.get(code_of(teacher, page))
    assert room.state == "revealed" and "replay" in room.notice
    assert {m: r["correct"] for m, r in room.reveal.items()} == {"think": False, "act": True, "react": True}
    assert tally.read_export(str(tmp_path / "missing.json")) is None
    (tmp_path / "bad.json").write_text("[1, 2")
    assert tally.read_export(str(tmp_path / "bad.json")) is None


def test_a_shared_or_replayed_run_shows_its_class_poll(store, teacher, tmp_path):
    page, _ = started(teacher)
    code = code_of(teacher, page)
    store.vote(code, store.join(code, "10.0.0.1"), "react", "10.0.0.1")
    teacher.on_run(None)(page)
    path = export(tmp_path)
    on_screen(teacher, page, path)
    asyncio.run(teacher.reveal("", None, page))  # the tallies go into the run's export
    visitor = request()
    on_screen(teacher, visitor, path, source="share")  # another page opens that run (a link)
    line, accordion = asyncio.run(teacher.recorded(None, visitor))
    assert line == ("**This run's class poll:** The class voted 0/0/1/0 \\(Think-only/Act-only/ReAct/none\\); "
                    "right: Act-only, ReAct.")
    assert accordion.open is True
    assert asyncio.run(teacher.recorded(path, request()))[0] == line  # a replayed file, the same line
    assert not any(isinstance(v, str) for v in asyncio.run(teacher.recorded(path, page)))  # a page with a room
    plain_run = tmp_path / "plain.json"
    plain_run.write_text('{"traces": {}}')
    assert asyncio.run(teacher.recorded(str(plain_run), request()))[0] == ""
