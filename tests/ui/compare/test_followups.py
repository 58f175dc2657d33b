"""A follow-up from the page, from the handlers (no browser): it continues the run the page's lesson shows — a live
run, a fork (the fork's panel continuing from the fork), a replayed file — each turn marked against its own expected
answer, and what cannot be continued is one line in a teacher's words that leaves the run on screen."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from tests.frames import collect, content
from tests.frames import compare_outputs as outputs
from ui.compare.handlers import CompareTab
from ui.core.lesson import Shown, Turn
from ui.fork.accordion import ForkTab
from ui.fork.screen import path_of
from ui.recordings.playback import play
from ui.recordings.reader import read_recording

STATUS, TABLE, FILES, BESIDE = 6, 7, 8, 9
PANELS = {"think": 0, "act": 1, "react": 2}
FIRST = "What is 17 * 23 + 5?"
PAGES = itertools.count()


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(latency=0.01, token_delay=0.001) as server:
        yield server


def page() -> SimpleNamespace:
    return SimpleNamespace(session_hash=f"page-{next(PAGES)}", headers={})


def tabs(stub, registry) -> tuple[CompareTab, ForkTab]:
    settings, out = LLMSettings(model="stub", base_url=stub.url), outputs()
    compare = CompareTab(settings, registry, out)
    return compare, ForkTab(settings, registry, out, stops=compare.stops, lessons=compare.lessons)


def text(panel) -> str:
    panel = panel.get("value", []) if isinstance(panel, dict) else panel  # a fork's panel beside: an update
    return " ".join(content(m) + str((m.get("metadata") or {}).get("title", "")) for m in panel)


def run(compare: CompareTab, request, question: str = FIRST, expected: str | None = "396") -> list:
    return asyncio.run(collect(compare.compare(question=question, mode="All", expected=expected, request=request)))


def follow(compare: CompareTab, request, question: str, expected: str | None = None) -> list:
    return asyncio.run(collect(compare.follow_up(question=question, mode="All", expected=expected, request=request)))


def marks(table: str) -> dict[str, str]:
    """This turn's ✓ / ✗ per mode, from the last table of the comparison."""
    rows = [r for r in table.split("**Turn")[-1].splitlines() if r.startswith("| **")]
    return {r.split("|")[1].strip(" *"): r.split("|")[3].strip() for r in rows}


def test_each_turn_is_marked_against_its_own_expected_answer(stub, registry):
    compare, _ = tabs(stub, registry)
    request = page()
    run(compare, request)
    lesson = compare.lessons.of(request)
    assert lesson.shown.turn == Turn(FIRST, "396") and lesson.shown.source == "run"
    # the box still holds 396 and nobody typed: the follow-up starts with an empty expected answer
    assert compare.followup_start(False, "396", request)[0] == ""
    assert compare.followup_start(True, "396", request)[0] == "396"  # typed again for it: kept
    assert compare.followup_start(False, "792", request)[0] == "792"  # a new one: kept
    last = follow(compare, request, "What is 396 * 2?", "792")[-1]
    assert marks(last[TABLE]) == {"Think-only": "✗", "Act-only": "✓", "ReAct": "✓"}  # the estimate ✗, 792 ✓
    assert "**Expected answer:** 792 — 2 of 3 right" in last[TABLE]
    assert "| 1 | What is 17 \\* 23 \\+ 5? | 396 |" in last[TABLE] and "396 ✓" in last[TABLE]  # turn 1 against 396
    data = json.loads(Path(path_of(last[FILES])).read_text(encoding="utf-8"))
    assert [t["expected"] for t in data["followup"]["turns"]] == ["396", "792"]
    assert [t.expected for t in compare.lessons.of(request).shown.turns] == ["396", "792"]
    replayed = asyncio.run(collect(play(read_recording(Path(path_of(last[FILES]))), "instant")))[-1]
    assert "396 ✓" in replayed.table and "**Expected answer:** 792 — 2 of 3 right" in replayed.table  # each its own


def test_a_follow_up_after_a_fork_continues_every_panel_and_the_fork(stub, registry):
    compare, fork_tab = tabs(stub, registry)
    request = page()
    run(compare, request)
    panel, step, _ = asyncio.run(fork_tab.refresh(None, None, request))
    forked = asyncio.run(collect(fork_tab.fork("react", step.value, "400", "new", request=request)))[-1]
    assert "400" in text(forked[BESIDE]) and compare.lessons.of(request).shown.beside == "react@1"
    last = follow(compare, request, "What is 400 * 2?")[-1]
    assert "⚠" not in last[STATUS] and "Done" in last[STATUS]
    beside = text(last[BESIDE])
    assert "Turn 2" in beside and "edited by the teacher" in beside and "800" in beside.split("Turn 2")[-1]
    for mode, index in PANELS.items():
        assert "Turn 2" in text(last[index]) and "What is 400 * 2?" in text(last[index]), mode
    assert "396" in text(last[PANELS["react"]]).split("Turn 2")[0]  # ReAct's own thread: its own turn 1
    data = json.loads(Path(path_of(last[FILES])).read_text(encoding="utf-8"))
    assert set(data["traces"]) == {"think", "act", "react", "react@1"}
    assert data["fork"] == {"panel": "beside", "trace": "react@1"}
    history = data["followup"]["history"]["react@1"]
    assert any("400" in str(m.get("content")) for m in history)  # the edited observation, in its conversation


def test_a_follow_up_after_a_fork_in_place_continues_the_fork_in_its_panel(stub, registry):
    compare, fork_tab = tabs(stub, registry)
    request = page()
    run(compare, request)
    _, step, _ = asyncio.run(fork_tab.refresh(None, None, request))
    asyncio.run(collect(fork_tab.fork("react", step.value, "400", "in place", request=request)))
    last = follow(compare, request, "What is 400 * 2?")[-1]
    react = text(last[PANELS["react"]])
    assert "edited by the teacher" in react and "400" in react.split("Turn 2")[0]
    assert "800" in react.split("Turn 2")[-1] and last[BESIDE] == []


def test_a_replayed_file_is_continued_when_this_app_sealed_it(stub, registry, tmp_path):
    compare, _ = tabs(stub, registry)
    first = run(compare, page())[-1]
    saved = tmp_path / "run.json"
    saved.write_bytes(Path(path_of(first[FILES])).read_bytes())
    request = page()
    frames = asyncio.run(collect(compare.play_on_page(str(saved), "instant", request)))
    assert frames[0][-1] == "396" and compare.lessons.of(request).shown.source == "replay"  # the box, restored
    last = follow(compare, request, "What is 396 * 2?")[-1]
    assert "Turn 2" in text(last[PANELS["react"]]) and "792" in text(last[PANELS["react"]]).split("Turn 2")[-1]

    forged = json.loads(saved.read_text(encoding="utf-8"))
    forged["followup"]["turns"][0]["question"] = "What is 1 + 1?"
    saved.write_text(json.dumps(forged), encoding="utf-8")
    request = page()
    asyncio.run(collect(compare.play_on_page(str(saved), "instant", request)))
    line = follow(compare, request, "What is 396 * 2?")
    assert len(line) == 1 and "saved by another copy of the app" in line[0][STATUS]
    assert all(v == {"__type__": "update"} for i, v in enumerate(line[0]) if i != STATUS)  # the run stays


def test_what_cannot_be_continued_is_one_teacher_line(stub, registry, tmp_path):
    compare, _ = tabs(stub, registry)
    request = page()
    line = follow(compare, request, "And then?")
    assert len(line) == 1 and "Nothing is on screen to ask a follow-up yet" in line[0][STATUS]
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"question": FIRST, "traces": {}}), encoding="utf-8")
    compare.lessons.of(request).show(Shown("share", str(old), (Turn(FIRST),)))
    assert "saved before follow-ups existed" in follow(compare, request, "And then?")[0][STATUS]
    compare.lessons.of(request).show(Shown("share", str(tmp_path / "gone.json"), (Turn(FIRST),)))
    assert "kept for an hour" in follow(compare, request, "And then?")[0][STATUS]
    compare.lessons.of(request).show(Shown("replay", str(old), (Turn(FIRST),), model="another-model"))
    said = follow(compare, request, "And then?")[0][STATUS]
    assert "recorded on another-model" in said and "Settings → Model" in said
    for words in ("previous", "JSON", "MCP", "export"):
        assert words not in said


def test_an_old_export_replays_with_its_expected_answer_on_its_first_turn(stub, registry):
    """An export of a follow-up written when a run kept one expected answer: that answer is its first turn's."""
    compare, _ = tabs(stub, registry)
    request = page()
    run(compare, request)
    last = follow(compare, request, "What is 396 * 2?", "792")[-1]
    data = json.loads(Path(path_of(last[FILES])).read_text(encoding="utf-8"))
    for turn in data["previous"]["turns"]:
        del turn["expected"]  # as exports before each turn kept its own
    data["expected"] = "396"
    recording = read_recording(json.dumps(data))
    assert recording.previous.turns[0]["expected"] == "396" and recording.expected is None
    replayed = asyncio.run(collect(play(recording, "instant")))[-1]
    assert "| 1 | What is 17 \\* 23 \\+ 5? | 396 |" in replayed.table
    assert "Expected answer:" not in replayed.table.split("**Turn 2**")[-1]  # turn 2 had none of its own
