"""🔬 Test the evidence on the page, at the handler level: the Fork's machinery with a scripted stub model (the toy
policy: ReAct answers with the calculator's last observation, so it follows the changed evidence)."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from agents.evidence import NEEDS_A_MODEL
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, toy_policy
from tests.frames import collect, compare_outputs
from tools.calculator import calculate
from tools.registry import ToolRegistry
from ui.compare.handlers import CompareTab
from ui.core import render
from ui.core.lesson import Shown, Turn
from ui.fork.accordion import ForkTab
from ui.fork.screen import NEW_PANEL, choice_value, path_of
from ui.recordings.playback import final_frame, play
from ui.recordings.reader import read_recording

STATUS, FILES, BESIDE = 6, 8, 9
QUESTION = "What is 17 × 23 + 5?"
FOLLOWED = "the answer followed the evidence (396 → 515)"
PAGES = itertools.count()


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(toy_policy, latency=0.01, token_delay=0.001) as server:
        yield server


def tabs(stub, settings: LLMSettings | None = None) -> tuple[CompareTab, ForkTab]:
    settings = settings or LLMSettings(model="stub", base_url=stub.url)
    registry, out = ToolRegistry([calculate]), compare_outputs()
    compare = CompareTab(settings, registry, out)
    return compare, ForkTab(settings, registry, out, stops=compare.stops, lessons=compare.lessons)


@pytest.fixture(scope="module")
def run_on_screen(stub):
    compare, _ = tabs(stub)
    return asyncio.run(collect(compare.compare(question=QUESTION, mode="All")))[-1]


def showing(tab: ForkTab, files, source: str = "run") -> SimpleNamespace:
    request = SimpleNamespace(session_hash=f"evidence-page-{next(PAGES)}")
    path = files if isinstance(files, str) else path_of(files)
    tab.lessons.of(request).show(Shown(source, path, (Turn(QUESTION),)))  # type: ignore[arg-type]
    return request


def text_of(panel) -> str:
    panel = panel.get("value", panel) if isinstance(panel, dict) else panel
    return json.dumps(panel, ensure_ascii=False, default=str)


def only_status(frames: list) -> str:
    assert len(frames) == 1
    assert all(v == gr.skip() for i, v in enumerate(frames[0]) if i != STATUS)
    return frames[0][STATUS]


def test_one_click_states_the_change_forks_beside_and_judges(run_on_screen, stub):
    _, tab = tabs(stub)
    stub.requests.clear()
    frames = asyncio.run(collect(tab.test_evidence("react", request=showing(tab, run_on_screen[FILES]))))
    assert "396 → 515" in frames[0][STATUS] and "changes observation 1 \\(calculate\\)" in frames[0][STATUS]
    last = frames[-1]
    assert all(v == gr.skip() for v in last[:STATUS]), "the original panels are left as they are"
    assert "515" in text_of(last[BESIDE]) and "edited by the teacher" in text_of(last[BESIDE])
    assert last[STATUS].endswith(f"🔬 Evidence test: 396 → 515 — {render.plain(FOLLOWED)}")
    data = json.loads(Path(path_of(last[FILES])).read_text(encoding="utf-8"))
    assert data["fork"] == {"panel": "beside", "trace": "react@1"}
    block = data["evidence"]["react@1"]
    assert block["source"] == "react" and block["change"]["new"] == "515"
    assert len(stub.requests) == 1  # one more run of one mode, from the changed observation

    recording = read_recording(Path(path_of(last[FILES])))  # the export replayed shows the verdict
    replayed = asyncio.run(collect(play(recording, "instant")))[-1]
    assert replayed.status.endswith(f"🔬 Evidence test: 396 → 515 — {render.plain(FOLLOWED)}")
    assert "515" in text_of(replayed.beside)
    shown, beside = asyncio.run(final_frame(read_recording(Path(path_of(last[FILES]))), "Shared run"))
    assert beside == "react@1" and render.plain(FOLLOWED) in shown.status

    # a later fork takes the place of the tested one: its export holds no test of a panel no longer there
    _, again = tabs(stub)
    page = showing(again, last[FILES])
    act = asyncio.run(collect(again.fork("act", choice_value(0, "396"), "400", NEW_PANEL, request=page)))[-1]
    assert read_recording(Path(path_of(act[FILES]))).evidence is None


@pytest.mark.parametrize(("panel", "line"), [
    (None, "Pick the panel whose evidence to test first."),
    ("think", "⚠ "),  # Think-only looks nothing up: no backed claim
])
def test_a_refusal_is_one_status_line(run_on_screen, stub, panel, line):
    _, tab = tabs(stub)
    stub.requests.clear()
    status = only_status(asyncio.run(collect(tab.test_evidence(panel, request=showing(tab, run_on_screen[FILES])))))
    assert status.startswith("⚠ ") and line in status and stub.requests == []


def test_nothing_on_screen_is_one_line(stub):
    _, tab = tabs(stub)
    page = SimpleNamespace(session_hash=f"evidence-page-{next(PAGES)}")
    assert only_status(asyncio.run(collect(tab.test_evidence("react", request=page)))).startswith("⚠ ")


def test_a_replay_with_no_model_says_it_needs_one(run_on_screen, stub):
    _, tab = tabs(stub, LLMSettings(model="", base_url=""))
    assert tab.settings.problem() is not None
    page = showing(tab, path_of(run_on_screen[FILES]), source="replay")
    status = only_status(asyncio.run(collect(tab.test_evidence("react", request=page))))
    assert status == f"⚠ {NEEDS_A_MODEL}"
