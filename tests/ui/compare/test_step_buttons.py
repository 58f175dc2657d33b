"""Step through from the Compare tab's handlers (no browser): Step, Next step, Continue and Stop
act on this session's stepping run only; the panels and the status line show each pause."""

from __future__ import annotations

import asyncio
import re
from types import SimpleNamespace

import pytest

from agents.events import Paused, Resumed
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from tests.frames import compare_outputs
from tests.stepping import calculator_steps
from ui.compare.handlers import CompareTab
from ui.compare.stepping import PauseState, continue_runs, next_step
from ui.core.render import Panel

STATUS = 6
STEPS_TO_ANSWER = 5  # the stub's Act/ReAct take four calculator steps, then answer


responder = calculator_steps(STEPS_TO_ANSWER - 1, "6", lambda step: f"{step + 1} + 1", guess="6")


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(responder, latency=0.01, token_delay=0.001) as server:
        yield server


def tab_for(stub, registry) -> CompareTab:
    out = compare_outputs()
    return CompareTab(LLMSettings(model="stub", base_url=stub.url), registry, out)


def text_of(panel: list) -> str:
    return " ".join(str(m.get("content")) + str((m.get("metadata") or {}).get("title", "")) for m in panel)


async def until_paused(gen, frames: list) -> list:
    """Frames until the status line says the run is paused."""
    async for frame in gen:
        frames.append(frame)
        if frame[STATUS].startswith("⏸"):
            return frames
    raise AssertionError(f"the run ended without pausing: {frames[-1][STATUS]}")


def test_step_next_three_times_then_continue(stub, registry):
    tab, visitor = tab_for(stub, registry), SimpleNamespace(session_hash="s1")
    stub.requests.clear()

    async def scenario() -> tuple[list, list[str]]:
        gen = tab.step_compare(question="What is 1 + 1, three times?", mode="All", request=visitor)
        frames: list = []
        statuses = []
        for _ in range(3):
            await until_paused(gen, frames)
            statuses.append(frames[-1][STATUS])
            calls = len(stub.requests)
            await asyncio.sleep(0.2)
            assert len(stub.requests) == calls  # nothing runs while paused
            await tab.next_step(request=visitor)
        await until_paused(gen, frames)
        statuses.append(frames[-1][STATUS])
        await tab.continue_run(request=visitor)
        frames.extend([f async for f in gen])
        return frames, statuses

    frames, statuses = asyncio.run(scenario())
    assert statuses == [f"⏸ Paused after step {n} — Next step, Continue or Stop." for n in (1, 2, 3, 4)]
    last = frames[-1]
    assert "Done" in last[STATUS] and all("Final answer" in text_of(p) for p in last[:3])
    think, act, react = (text_of(p) for p in last[:3])
    assert "Paused" not in think  # Think-only finishes in its one step
    assert len(re.findall(r"Paused after step", react)) == 4
    assert "Paused after step 5" not in react and "Resumed after" in react
    assert len(tab.stops) == 0


def test_next_and_continue_reach_only_this_sessions_run_and_stop_ends_a_paused_run(stub, registry):
    tab = tab_for(stub, registry)
    visitor, other = SimpleNamespace(session_hash="s2"), SimpleNamespace(session_hash="s3")

    async def scenario() -> list:
        gen = tab.step_compare(question="What is 1 + 1, three times?", mode="ReAct", request=visitor)
        frames = await until_paused(gen, [])
        await tab.next_step(request=other)
        await tab.continue_run(request=other)
        await asyncio.sleep(0.3)
        paused = tab.lessons.of(visitor).paused_run()  # the run is found through the page's lesson
        assert paused is not None and paused.run is not None and tab.lessons.of(other).live is None
        await tab.stop(request=visitor)
        frames.extend([f async for f in gen])
        return frames

    frames = asyncio.run(scenario())
    assert frames[-2][STATUS].startswith("⏸") and frames[-1][STATUS].startswith("■ Stopped")
    assert "Stopped while paused" in text_of(frames[-1][1 + 1])
    assert len(tab.stops) == 0


def test_a_plain_run_is_not_reachable_by_the_step_buttons(stub, registry):
    tab, visitor = tab_for(stub, registry), SimpleNamespace(session_hash="s4")

    async def scenario() -> list:
        gen = tab.compare(question="What is 1 + 1, three times?", mode="ReAct", request=visitor)
        frames = [await anext(gen)]
        live = tab.lessons.of(visitor).live
        assert live is not None and live.run is None  # nothing for Next step / Continue to act on
        frames.extend([f async for f in gen])
        return frames

    frames = asyncio.run(scenario())
    assert "Done" in frames[-1][STATUS] and "Paused" not in text_of(frames[-1][2])


def test_pause_state_waits_for_every_unfinished_mode():
    state = PauseState()
    state.add("act", Paused(2))
    assert not state.paused(["act", "react"], lambda m: False)
    assert state.paused(["act", "react"], lambda m: m == "react") and state.step == 2
    state.add("act", Resumed(1.0))
    assert not state.paused(["act", "react"], lambda m: m == "react")


def test_next_step_only_moves_runs_that_wait():
    class FakeRun:
        def __init__(self, waiting: bool) -> None:
            self.waiting_for_step, self.steps, self.resumed = waiting, 0, False

        def step(self) -> None:
            self.steps += 1

        def resume(self) -> None:
            self.resumed = True

    waiting, busy = FakeRun(True), FakeRun(False)
    assert next_step([waiting, busy]) == 1 and (waiting.steps, busy.steps) == (1, 0)
    assert continue_runs([waiting, busy]) == 2 and waiting.resumed and busy.resumed


def test_a_panel_marks_the_pause_and_the_resume():
    panel = Panel("react")
    panel.add(Paused(1))
    assert panel.messages[-1].metadata["title"] == "⏸ Paused after step 1" and "Next step" in panel.messages[-1].content
    panel.add(Resumed(2.5))
    assert "Resumed after 2.5 s" in panel.messages[-1].content


def test_next_step_is_enabled_only_by_the_paused_status_line():
    from ui.compare.stepping import PAUSED_STATUS, STEPPING_STATUS, is_paused

    assert is_paused(PAUSED_STATUS.format(step=3))
    assert not is_paused(STEPPING_STATUS.format(selection="All", where="stub", step=2))
    assert not is_paused("✔ Done in 3.2 s") and not is_paused(None) and not is_paused("")
