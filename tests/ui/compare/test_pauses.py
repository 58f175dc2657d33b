"""Limits on paused runs (ui/compare/stepping.py), without a browser: a few per visitor, a share of the
slots in all, and a run left paused ends — its status and panels saying why — through the stream adapter's watch."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from agents.events import Paused
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply
from tests.frames import compare_outputs
from ui.compare import stepping
from ui.compare.handlers import CompareTab
from ui.compare.stepping import PauseBook, PauseRefused, PauseState, wait_text
from ui.core import stream
from ui.core.stream import Outcome, StopSignal

STATUS = 6


def test_a_visitor_holds_a_few_and_all_together_a_share():
    book = PauseBook(per_visitor=2, total=3, ttl_s=60)
    with book.hold("a"), book.hold("a"):
        with pytest.raises(PauseRefused, match="You already have 2 runs going step by step"):
            with book.hold("a"):
                pass
        with book.hold("b"):
            with pytest.raises(PauseRefused, match="The app holds 3 runs paused step by step"):
                with book.hold("c"):
                    pass
        assert book.held == 2 and book.held_by("b") == 0
    assert book.held == 0


def test_the_share_of_the_slots_is_a_setting():
    from ui.core.settings import AppSettings

    assert AppSettings(concurrency=64).paused_max == 32 and AppSettings(concurrency=1).paused_max == 1
    assert AppSettings.from_env({"APP_CONCURRENCY": "10", "APP_PAUSED_SHARE": "0.3"}).paused_max == 3


def test_a_pause_expires_only_while_every_mode_waits(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(stepping.time, "monotonic", lambda: now[0])
    state = PauseState()
    state.add("react", Paused(1))
    assert state.expired(["react", "act"], lambda m: False, 5) is None  # act still runs
    state.add("act", Paused(1))
    assert state.expired(["react", "act"], lambda m: False, 5) is None  # paused from now on
    now[0] += 5
    assert "nobody pressed Next step or Continue for 5 s" in state.expired(["react", "act"], lambda m: False, 5)
    assert wait_text(300) == "5 minutes" and wait_text(90) == "90 s"


def test_a_watch_ends_the_stream_with_its_reason():
    class Idle:
        done = False

        def start(self):
            pass

        def poll(self, timeout=None):
            return None

        def close(self):
            pass

    class View:
        outcome = None

        def add(self, item):
            return False

        def running(self):
            return "running"

        async def end(self, outcome):
            View.outcome = outcome
            return "end"

    calls = []

    def watch():
        calls.append(1)
        return "too long" if len(calls) >= 3 else None

    async def scenario():
        return [f async for f in stream.stream(Idle(), View(), stop=StopSignal(), watch=watch)]

    assert asyncio.run(scenario())[-1] == "end" and View.outcome == Outcome(stopped=True, reason="too long")


@pytest.fixture(scope="module")
def stub():
    def responder(body: dict) -> StubReply:
        return StubReply(text="Thought: Step.\nAction: calculate\nAction Input: 1 + 1")

    with StubLLMServer(responder, latency=0.01) as server:
        yield server


def test_a_run_left_paused_ends_and_says_why(stub, registry):
    out = compare_outputs()
    tab = CompareTab(LLMSettings(model="stub", base_url=stub.url), registry, out,
                     pauses=PauseBook(per_visitor=1, total=1, ttl_s=1.0))
    visitor = SimpleNamespace(session_hash="teacher", client=SimpleNamespace(host="198.51.100.1"), headers={})

    async def scenario() -> tuple[list, list]:
        first = tab.step_compare(question="What is 1 + 1?", mode="ReAct", request=visitor)
        frames = [await anext(first)]
        second = [f async for f in tab.step_compare(question="What is 2 + 2?", mode="ReAct", request=visitor)]
        frames.extend([f async for f in first])
        return frames, second

    frames, refused = asyncio.run(scenario())
    assert "You already have 1 runs going step by step" in refused[-1][STATUS]  # one each, here
    statuses = [f[STATUS] for f in frames]
    assert any(s.startswith("⏸ Paused after step 1") for s in statuses)
    assert statuses[-1].startswith("⏹ Ended: nobody pressed Next step or Continue for 1 s")
    react = " ".join(str(m.get("content")) for m in frames[-1][2])
    assert "Ended: nobody pressed Next step" in react and "Ended** before an answer" in react
    assert tab.pauses.held == 0 and len(tab.stops) == 0
