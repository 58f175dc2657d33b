"""The teacher's side of the class poll without a browser: the handlers over the shared store, the reveal read from a
run's export (verdicts, or the teacher's marks), the page's run events as one line for the phones, the CSV, and
what is shown when the room ended or the app restarted."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from types import SimpleNamespace

import pytest

from ui.poll import rooms as poll_rooms
from ui.poll import tally, teacher
from ui.poll.rooms import BOOT, RoomStore

VOTERS = [f"phone-{i:014d}" for i in range(10)]


@pytest.fixture
def store():
    saved = poll_rooms._store
    poll_rooms._store = RoomStore()
    try:
        yield poll_rooms._store
    finally:
        poll_rooms._store = saved


def request(host: str = "class.example:7860") -> SimpleNamespace:
    return SimpleNamespace(headers={"host": host}, client=SimpleNamespace(host="10.1.2.3"), session_hash="s")


def started(question: str = "What is 17 * 23 + 5?", modes=("think", "act", "react")) -> tuple[str, str]:
    out = teacher.start("", question, list(modes), request())
    handle, join = out[0], out[2]
    assert isinstance(handle, str) and handle.endswith(BOOT), out
    return handle, join


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


def test_start_shows_the_code_link_and_qr_and_the_tally_follows_the_votes(store):
    handle, join = started()
    code = handle.split(".")[0]
    assert f"http://class.example:7860/?room={code}" in join and "<svg" in join and code in join
    board, seen, _ = teacher.tick(handle, 0)
    assert "0 voted" in board
    assert not any(isinstance(value, str) for value in teacher.tick(handle, seen))  # unchanged: nothing is sent
    store.vote(code, VOTERS[0], "act", "10.0.0.1")
    board, seen2, _ = teacher.tick(handle, seen)
    assert seen2 > seen and "100 % predicted Act-only" in board and "1 voted" in board


def test_start_refuses_without_a_question_in_one_line(store):
    out = teacher.start("", "   ", ["react"], request())
    assert "Type the question first" in out[3] and len(store) == 0
    out = teacher.start("", "Q?", ["x" * 10_000, 3, None], request())  # only the page's modes
    assert "Pick at least one mode" in out[3] and len(store) == 0


def test_starting_again_ends_the_pages_earlier_room(store):
    first, _ = started()
    teacher.start(first, "", ["react"], request())  # refused (no question): the room stays
    assert store.get(first.split(".")[0]) is not None
    second = teacher.start(first, "Another question?", ["react"], request())[0]
    assert len(store) == 1 and second != first
    assert "started a new poll" in store.gone_why(first.split(".")[0])


def test_the_page_runs_lock_the_votes_and_give_the_phones_one_line(store):
    handle, _ = started()
    code = handle.split(".")[0]
    teacher.on_run("step")(handle)
    room = store.get(code)
    assert room.state == "running" and room.current.locked and "stepping" in room.notice
    teacher.on_run("stop")(handle)
    assert "stopped" in store.get(code).notice
    teacher.on_run("replay")(handle)
    assert "replay" in store.get(code).notice
    teacher.on_run("fork")(handle)
    assert "forked" in store.get(code).notice
    teacher.on_run(None)(handle)
    assert store.get(code).notice == ""


def test_the_export_reveals_each_modes_answer_and_mark(store, tmp_path):
    handle, _ = started()
    code = handle.split(".")[0]
    for voter, choice in zip(VOTERS, ["think"] * 7 + ["react"] * 5, strict=False):
        store.vote(code, voter, choice, "10.0.0.1")
    teacher.on_run(None)(handle)
    share = "**Share this run:** [http://x:1/?run=abcdefghijklmnop1234](http://x:1/?run=abcdefghijklmnop1234)"
    board, _ = asyncio.run(teacher.reveal(handle, [export(tmp_path)], share))
    assert "70 % predicted Think-only — <span class=\"poll-wrong\">✗ wrong" in board
    assert "30 % predicted ReAct — <span class=\"poll-right\">✓ right" in board
    room = store.get(code)
    assert room.state == "revealed" and room.link == "?run=abcdefghijklmnop1234"  # on the phone's own app
    assert tally.run_link_in("[x](https://evil.example/?run=abcdefghijklmnop1234)") == "?run=abcdefghijklmnop1234"
    assert tally.run_link_in("[x](https://x/?run=short)") is None and tally.run_link_in(None) is None
    assert room.reveal["act"] == {"answer": "396", "correct": True}
    kept = json.loads((tmp_path / "run.json").read_text())["poll"]  # the tallies are kept with the run's export
    assert kept["rounds"][0]["tally"] == {"think": 7, "act": 0, "react": 3, "none": 0}


def test_without_an_expected_answer_the_teacher_marks_then_reveals(store, tmp_path):
    handle, _ = started()
    code = handle.split(".")[0]
    teacher.on_run(None)(handle)
    path = export(tmp_path, expected=False)
    asyncio.run(teacher.reveal(handle, [path], ""))  # the run's end: answers shown, marks to come
    assert {m: r["correct"] for m, r in store.get(code).reveal.items()} == {"think": None, "act": None,
                                                                            "react": None}
    assert tally.right_of(store.get(code).public(), "none") is None
    asyncio.run(teacher.reveal(handle, [path], "", ["react"]))  # the teacher marks ReAct right
    marks = {m: r["correct"] for m, r in store.get(code).reveal.items()}
    assert marks == {"think": False, "act": False, "react": True}
    assert tally.right_of(store.get(code).public(), "none") is False


def test_a_stopped_or_failed_run_says_so_on_the_phones(store, tmp_path):
    handle, _ = started()
    teacher.on_run(None)(handle)
    asyncio.run(teacher.reveal(handle, [export(tmp_path, stopped=True)], ""))
    assert "stopped the run" in store.get(handle.split(".")[0]).notice
    answers, notice = tally.reveal_of(json.loads(open(export(tmp_path, errors=("react",))).read()),
                                      ["think", "act", "react"])
    assert answers["react"]["answer"].startswith("failed: HTTP 503") and notice == "1 mode failed in this run."


def test_the_reveal_waits_for_a_run(store, tmp_path):
    handle, _ = started()
    out = asyncio.run(teacher.reveal(handle, None, "", []))
    assert "Run the question first" in out[0]
    asyncio.run(teacher.reveal(handle, [export(tmp_path)], ""))  # an export from before the poll's run
    assert store.get(handle.split(".")[0]).state == "open"


def test_text_from_visitors_and_models_is_escaped(store):
    handle, _ = started(question="<img src=x onerror=alert(1)>?")
    code = handle.split(".")[0]
    store.set_reveal(code, {"act": {"answer": "<script>alert(1)</script>", "correct": True}})
    board = teacher.tick(handle, 0)[0]
    assert "<script>" not in board and "&lt;script&gt;" in board


def test_the_csv_holds_counts_only(store, tmp_path):
    handle, _ = started()
    code = handle.split(".")[0]
    store.vote(code, VOTERS[0], "act", "10.0.0.1")
    store.set_reveal(code, {"think": {"answer": "4", "correct": False}, "act": {"answer": "5", "correct": True},
                            "react": {"answer": "5", "correct": True}})
    store.again(code)
    store.vote(code, VOTERS[1], "react", "10.0.0.1")
    path = teacher.csv_of(handle).value
    text = open(path if isinstance(path, str) else path["path"]).read()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["round", "choice", "title", "votes", "share_pct", "right"]
    assert ["1", "act", "Act-only", "1", "100", "yes"] in rows and ["2", "react", "ReAct", "1", "100", ""] in rows
    assert VOTERS[0] not in text and VOTERS[1] not in text and len(rows) == 1 + 2 * 4


def test_an_ended_room_or_a_restart_is_one_line_and_the_timer_stops(store):
    handle, _ = started()
    store.end(handle.split(".")[0])
    board, seen, timer = teacher.tick(handle, 3)
    assert "The teacher ended this poll." in board and seen == -1 and timer.active is False
    code, secret, _ = started()[0].split(".")
    board, _, _ = teacher.tick(f"{code}.{secret}.0ld0b00t", 0)
    assert "The app restarted" in board
    board, _, _ = teacher.tick(f"{code}.wrong-secret.{BOOT}", 0)
    assert "not yours" in board


def test_a_replay_is_revealed_from_the_replayed_file(store, tmp_path):
    handle, _ = started()
    teacher.on_run("replay")(handle)
    path = export(tmp_path)
    before = open(path).read()
    asyncio.run(teacher.reveal(handle, None, "", [], path))  # a replay makes no export: Reveal reads its file
    assert open(path).read() == before  # a visitor's file is read, never written
    room = store.get(handle.split(".")[0])
    assert room.state == "revealed" and "replay" in room.notice
    assert {m: r["correct"] for m, r in room.reveal.items()} == {"think": False, "act": True, "react": True}
    assert tally.read_export(str(tmp_path / "missing.json")) is None
    (tmp_path / "bad.json").write_text("[1, 2")
    assert tally.read_export(str(tmp_path / "bad.json")) is None


def test_a_shared_or_replayed_run_shows_its_class_poll(store, tmp_path):
    handle, _ = started()
    code = handle.split(".")[0]
    store.vote(code, VOTERS[0], "react", "10.0.0.1")
    teacher.on_run(None)(handle)
    path = export(tmp_path)
    asyncio.run(teacher.reveal(handle, [path], ""))  # the tallies go into the run's export
    line, accordion = asyncio.run(teacher.recorded("", path))  # another page opens that run (a link, a replay)
    assert line == ("**This run's class poll:** The class voted 0/0/1/0 \\(Think-only/Act-only/ReAct/none\\); "
                    "right: Act-only, ReAct.")
    assert accordion.open is True
    assert not any(isinstance(v, str) for v in asyncio.run(teacher.recorded(handle, path)))  # a page with a room
    plain_run = tmp_path / "plain.json"
    plain_run.write_text('{"traces": {}}')
    assert asyncio.run(teacher.recorded("", [str(plain_run)]))[0] == ""
