"""The Compare tab's handlers called directly (no browser, no Gradio server), against the local stub model."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import gradio as gr
import pytest

from agents.events import FinalAnswer, Thought, TokenDelta
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from agents.request import RunRequest
from agents.trace import Trace
from tests.frames import collect, compare_outputs
from ui.compare.handlers import OPTIONS, CompareTab
from ui.core.admission import Admission
from ui.core.frame import Frame, Outputs, output_index
from ui.core.inputs import read_request
from ui.core.modes import BESIDE, PANEL_MODES

STATUS, TABLE, FILES = 6, 7, 8  # positions in /compare's outputs (the three panels and metrics come first)


def outputs() -> Outputs:
    return compare_outputs()


def responder(body: dict) -> StubReply:
    question = next((str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user"), "")
    if "slowly" in question:
        return StubReply(text="Thought: " + "pondering " * 300, token_delay=0.05)
    return toy_policy(body)


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(responder, latency=0.02, token_delay=0.002) as server:
        yield server


def tab_for(stub, registry, **kw) -> CompareTab:
    return CompareTab(LLMSettings(model="stub", base_url=stub.url), registry, outputs(), **kw)


def text_of(panel: list) -> str:
    return " ".join(str(m.get("content")) for m in panel)


def test_the_frame_owns_the_output_order():
    """The outputs /compare had before the mode picker come first, as they were (three panels, three metrics,
    status, table, files, the panel beside and its metrics), then a panel and a metrics line per further mode, then
    the step-aligned map (last: /replay gives it after its own outputs)."""
    out, n = outputs(), len(PANEL_MODES)
    frame = Frame(tuple([k] for k in range(n)), tuple(f"m{k}" for k in range(n)), "status", "table", None,
                  beside=["b"], beside_metrics="mb", step_map="<map>")
    values = frame.values()
    assert len(out.all()) == len(values) == 2 * n + 6 and values[:11] == [[0], [1], [2], "m0", "m1", "m2", "status",
                                                                          "table", None, ["b"], "mb"]
    assert values[11:-1] == [*([k] for k in range(3, n)), *(f"m{k}" for k in range(3, n))]
    assert values[-1] == "<map>" and out.all()[-1] is out.step_map
    assert frame.values(files=False, step_map=False) == [v for i, v in enumerate(values[:-1]) if i != 8]
    assert [values[output_index(m)] for m in PANEL_MODES] == [[k] for k in range(n)]
    assert [values[output_index(m, metrics=True)] for m in PANEL_MODES] == [f"m{k}" for k in range(n)]
    assert out.exports not in out.all(files=False) and None not in frame.values(files=False)
    short = frame.values(files=False)
    assert short[output_index(BESIDE, files=False)] == ["b"] and short[output_index("codeact", files=False)] == [5]


@pytest.mark.parametrize(("inputs", "why"), [
    ({"question": "   "}, "Please type a question"),
    ({"question": "x" * 2001}, "the limit is 2,000"),
    ({"question": "q?", "mode": "Everything"}, "Unknown mode 'Everything'"),
    ({"question": "q?", "mode": ["react", "Telepathy"]}, "Unknown mode 'Telepathy'"),
    ({"question": "q?", "mode": []}, "Pick at least one mode"),
    ({"question": "q?", "mode": ["cot_sc"]}, "CoT-SC has no panel: it runs on the Benchmark tab"),
    ({"question": "q?", "mode": [1]}, "The modes must be mode ids (text)"),
    ({"question": "q?", "fourth": "Telepathy"}, "Unknown mode 'Telepathy' for `fourth`"),
    ({"question": "q?", "trials": 0}, "Reflexion trials must be a whole number from 1 to 10 (got 0)"),
])
def test_a_request_is_checked_once_into_one_line(registry, inputs, why):
    assert why in read_request(inputs, registry)


def test_a_good_request_names_its_modes_settings_and_options(registry):
    checked = read_request({"question": "q?", "mode": "ReAct", "protocol": "native tool calls", "max_steps": "3",
                            "temperature": 0.5, "tools": ["calculate"], "fourth": "Reflexion", "max_tokens": 99,
                            "expected": "", "trials": "2"}, registry, stepping=True)
    assert isinstance(checked, RunRequest) and checked.modes == ("react", "reflexion")
    assert (checked.protocol, checked.max_steps, checked.max_tokens, checked.tools) == ("tools", 3, 99, ("calculate",))
    assert checked.options == {"trials": 2} and checked.expected is None and checked.stepping
    assert checked.mode_options() == {"expected": None, "trials": 2} and checked.selection == "ReAct"


@pytest.mark.parametrize(("mode", "modes", "selection"), [
    (["reflexion", "Think", "codeact"], ("think", "codeact", "reflexion"), "Think, CodeAct, Reflexion"),
    (["think", "act", "react"], ("think", "act", "react"), "All"),
    ("All", ("think", "act", "react"), "All"),  # the single choices from before the picker
    ("Act", ("act",), "Act"),
    (None, ("think", "act", "react"), "All"),  # not sent: the picker's default
])
def test_the_picker_sends_a_list_of_modes_and_the_single_choices_still_work(registry, mode, modes, selection):
    checked = read_request({"question": "q?", "mode": mode} if mode is not None else {"question": "q?"}, registry)
    assert isinstance(checked, RunRequest) and (checked.modes, checked.selection) == (modes, selection)


def test_a_refused_request_is_one_frame_and_no_model_call(stub, registry):
    stub.requests.clear()
    frames = asyncio.run(collect(tab_for(stub, registry).compare(question="   ")))
    assert len(frames) == 1 and "Please type a question" in frames[0][STATUS] and stub.requests == []


def test_a_run_streams_to_the_end_with_table_and_exports(stub, registry):
    frames = asyncio.run(collect(tab_for(stub, registry).compare(question="What is 17 * 23 + 5?", mode="All")))
    last = frames[-1]
    assert "Done" in last[STATUS] and "Agrees with" in last[TABLE] and len(last[FILES]) == 2
    assert all("Final answer" in text_of(panel) for panel in last[:3])


def test_stop_ends_this_sessions_run_with_a_stopped_frame(stub, registry):
    """The Stop handler closes the visitor's run; the stream renders "stopped" from its own view."""
    tab = tab_for(stub, registry)
    visitor, other = SimpleNamespace(session_hash="v1"), SimpleNamespace(session_hash="v2")
    stub.requests.clear()

    async def scenario() -> list:
        gen = tab.compare(question="Think slowly about this", mode="All", request=visitor)
        frames = [await anext(gen)]
        while not all("pondering" in text_of(p) for p in frames[-1][:3]):
            frames.append(await anext(gen))
        await tab.stop(request=other)  # another visitor's Stop leaves this run alone
        frames.append(await anext(gen))
        await tab.stop(request=visitor)
        frames.extend([f async for f in gen])
        return frames

    frames = asyncio.run(scenario())
    last = frames[-1]
    assert last[STATUS].startswith("■ Stopped") and frames[-2][STATUS].startswith("● Running")
    assert all("Stopped" in text_of(panel) for panel in last[:3])
    assert all(m["metadata"].get("status") != "pending" for panel in last[:3] for m in panel if m.get("metadata"))
    assert json.loads(open(last[FILES][0]["path"], encoding="utf-8").read())["stopped"] is True
    deadline = time.monotonic() + 5
    while any(r.finished is None for r in stub.requests) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(stub.requests) == 3 and all(r.finished is not None for r in stub.requests)  # every stream closed
    assert len(tab.stops) == 0


def test_stop_while_waiting_for_a_slot_leaves_the_line(stub, registry):
    admission = Admission(1, 5)
    held = admission.ticket()  # someone else's run holds the only slot
    tab, visitor = tab_for(stub, registry, admission=admission), SimpleNamespace(session_hash="w1")
    stub.requests.clear()

    async def scenario() -> list:
        loop = asyncio.get_running_loop()
        return await collect(tab.compare(question="What is 2+2?", mode="Think", request=visitor),
                             after_first=lambda: loop.call_soon(lambda: tab.stops.stop("w1", "compare")))

    started = time.monotonic()
    frames = asyncio.run(scenario())
    assert "number 1" in frames[0][STATUS] and "Stopped while waiting" in frames[-1][STATUS]
    assert time.monotonic() - started < 1.0 and admission.waiting == 0 and stub.requests == []
    held.release()


def test_stop_ends_a_replay(tmp_path, registry, stub):
    trace = Trace("react", "A long day?")
    for t, event in [(0.0, TokenDelta("Thought: a long day")), (0.01, Thought("morning")), (60.0, FinalAnswer("x"))]:
        trace.add(event, t)
    path = tmp_path / "day.json"
    path.write_text(json.dumps({"question": "A long day?", "selection": "ReAct", "traces": {"react": trace.to_dict()}}),
                    encoding="utf-8")
    tab, visitor = tab_for(stub, registry), SimpleNamespace(session_hash="r1")

    async def scenario() -> list:
        loop = asyncio.get_running_loop()
        return await collect(tab.play(str(path), request=visitor),
                             after_first=lambda: loop.call_later(0.3, lambda: tab.stops.stop("r1", "compare")))

    started = time.monotonic()
    frames = asyncio.run(scenario())
    last = frames[-1]
    assert time.monotonic() - started < 3 and last[STATUS] == "■ Replay stopped."
    assert last[-3 - len(OPTIONS)] == "A long day?"  # the question box, the run options, the picker, the map
    assert frames[0][-2] == last[-2] == ["react"]  # the picker: the recording's modes
    assert "step-map" in last[-1]  # the map, last
    assert "Stopped" in text_of(last[2]) and "morning" in text_of(last[2])


def test_a_replay_opens_the_panel_beside_only_for_a_recording_with_a_fork_there(tmp_path):
    fork, old_fork, plain = tmp_path / "fork.json", tmp_path / "old.json", tmp_path / "plain.json"
    fork.write_text(json.dumps({"traces": {}, "fork": {"panel": "beside", "trace": "react@2"}}))
    old_fork.write_text(json.dumps({"traces": {}, "fork": {"panel": "fourth", "trace": "act@1"}}))  # before the picker
    plain.write_text(json.dumps({"traces": {"react_cot_sc": {"mode": "react_cot_sc", "events": []}}}))
    column, chat = CompareTab.reveal_beside(str(fork))
    assert column.visible is True and chat.label == "ReAct (fork @2)"
    assert CompareTab.reveal_beside(str(old_fork))[1].label == "Act-only (fork @1)"
    column, chat = CompareTab.reveal_beside(str(plain))  # a hybrid has its own column: nothing beside
    assert column.visible is False and chat == gr.skip()
    assert CompareTab.reveal_beside(None) == (gr.skip(), gr.skip())  # no file: the replay says so, nothing moves


def test_the_picker_shows_one_column_per_chosen_mode():
    shown = [c.visible for c in CompareTab.show_modes(["codeact", "think", "reflexion"])]
    assert shown == [m in ("think", "codeact", "reflexion") for m in PANEL_MODES]
    assert not any(c.visible for c in CompareTab.show_modes(None))




def test_an_api_client_runs_several_at_once_in_one_session_and_the_pages_run_stops_its_replay(tmp_path, stub,
                                                                                              registry):
    """``/compare`` twice at once from one session (one gradio_client, two threads): neither stops the other, and
    the one that started last is what the page's lesson shows. The page's Run first stops a replay it shows."""
    tab, visitor = tab_for(stub, registry), SimpleNamespace(session_hash="same-client")

    async def both() -> list:
        return await asyncio.gather(collect(tab.compare(question="What is 2 + 2?", mode="Think", request=visitor)),
                                    collect(tab.compare(question="What is 3 + 3?", mode="Think", request=visitor)))

    first, second = asyncio.run(both())
    assert "Done" in first[-1][STATUS] and "Done" in second[-1][STATUS], (first[-1][STATUS], second[-1][STATUS])
    assert tab.lessons.of(visitor).shown.turn.question == "What is 3 + 3?"

    trace = Trace("react", "A long day?")
    for t, event in [(0.0, TokenDelta("Thought: a long day")), (60.0, FinalAnswer("x"))]:
        trace.add(event, t)
    path = tmp_path / "day.json"
    path.write_text(json.dumps({"question": "A long day?", "traces": {"react": trace.to_dict()}}), encoding="utf-8")

    async def replay_then_run() -> list:
        loop = asyncio.get_running_loop()
        return await collect(tab.play_on_page(str(path), request=visitor),
                             after_first=lambda: loop.call_later(0.2, lambda: tab.page_run(visitor)))

    started = time.monotonic()
    frames = asyncio.run(replay_then_run())
    assert time.monotonic() - started < 5 and frames[-1][STATUS] == "■ Replay stopped."
