"""The poll's tallies kept with the run: a ``poll`` block in the JSON export (counts only) and a line in the
Markdown; the file still replays, and a file that is not an export is left alone."""

from __future__ import annotations

import json

from agents.events import FinalAnswer
from agents.trace import Trace
from ui.poll import records
from ui.poll.rooms import RoomStore
from ui.recordings.export import export_dict, write_exports
from ui.recordings.reader import read_recording

MODES = [("think", "Think-only"), ("act", "Act-only"), ("react", "ReAct")]


def finished(mode: str, answer: str) -> Trace:
    trace = Trace(mode, "What is 17 * 23 + 5?")
    trace.add(FinalAnswer(answer), 0.5)
    return trace


def polled_room() -> dict:
    store = RoomStore()
    room = store.create("teacher", "What is 17 * 23 + 5?", MODES)
    phones = [store.join(room.code, "10.0.0.1") for _ in range(26)]  # each phone's voter id, as it joined
    for phone, choice in zip(phones, ["think"] * 12 + ["act"] * 5 + ["react"] * 9, strict=True):
        store.vote(room.code, phone, choice, "10.0.0.1")
    marks = {"think": ("400", False), "act": ("396", True), "react": ("396", True)}
    store.set_reveal(room.code, {m: {"answer": a, "correct": c} for m, (a, c) in marks.items()})
    store.again(room.code)
    for phone in phones[:20]:
        store.vote(room.code, phone, "react", "10.0.0.1")
    return store.get(room.code).public()


def test_the_export_keeps_the_tallies_and_still_replays(tmp_path):
    traces = {"think": finished("think", "400"), "act": finished("act", "396"), "react": finished("react", "396")}
    json_path, md_path = write_exports(export_dict("What is 17 * 23 + 5?", "All", traces, {"model": "m"}),
                                       directory=tmp_path, traces=traces)
    room = polled_room()
    assert records.keep_with_export(json_path, room)
    assert records.keep_with_export(json_path, room)  # again: replaced, not added twice
    text = open(json_path, encoding="utf-8").read()
    data = json.loads(text)
    assert data["poll"]["rounds"][0] == {"tally": {"think": 12, "act": 5, "react": 9, "none": 0}, "total": 26,
                                         "right": {"think": False, "act": True, "react": True}}
    assert data["poll"]["rounds"][1]["tally"]["react"] == 20
    assert "phone-" not in text and room["code"] not in text  # counts only
    assert read_recording(json_path).question == "What is 17 * 23 + 5?"
    report = open(md_path, encoding="utf-8").read()
    assert report.count("## Class poll") == 1
    assert ("The class voted 12/5/9/0 (Think-only/Act-only/ReAct/none); after discussion, round 2: 0/0/20/0; "
            "right: Act-only, ReAct." in report)
    assert records.record_in(json_path) == data["poll"]  # read back from the file's tail alone


def test_anything_but_an_export_is_left_alone(tmp_path):
    other = tmp_path / "notes.json"
    other.write_text('{"hello": 1}')
    assert not records.keep_with_export(str(other), polled_room())
    assert other.read_text() == '{"hello": 1}'
    assert not records.keep_with_export(str(tmp_path / "missing.json"), polled_room())
    assert not records.keep_with_export(None, polled_room())


def test_a_record_is_read_from_the_tail_and_checked(tmp_path):
    good = records.record_of(polled_room())
    cases = {
        "plain.json": '{"traces": {}}',
        "broken.json": '{"traces": {}, "poll":{"choices": [}',
        "wrong-types.json": json.dumps({"traces": {}, "poll": {**good, "rounds": [{"tally": {"act": "lots"}}]}}),
        "too-many-rounds.json": json.dumps({"traces": {}, "poll": {**good, "rounds": good["rounds"] * 3}}),
        "script.json": json.dumps({"traces": {}, "poll": {**good, "choices": [{"id": 1, "title": "<b>"}]}}),
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert records.record_in(str(tmp_path / name)) is None, name
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"traces": {"x": "y" * 100_000}, "poll": good}))
    assert records.record_in(str(big)) == good
    assert records.record_in(str(tmp_path / "missing.json")) is None and records.record_in(None) is None
