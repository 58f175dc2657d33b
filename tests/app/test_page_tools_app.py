"""A tool written on the page, through the real app's HTTP queue (what the page itself sends): Settings' Add a tool
(a private event, the visitor's session), then a ReAct run of that session using it in the sandbox (in a run worker:
the tool travels as data), its export carrying the source, a fork of that export running it again, the Prompts tab
listing it; another session, and a REST call, know nothing of it; a name that shadows a built-in tool is refused."""

from __future__ import annotations

import json
import re

import httpx
import pytest

import app
from agents.llm.stub_server import StubLLMServer, StubReply
from tests.gradio_rest import last_frame, queue_frames
from ui.core.frame import output_index
from ui.core.modes import BESIDE
from ui.fork.screen import choice_value
from ui.page.page_tools import CLASS_FACTS

STATUS, FILES = 2 * 3, 2 * 3 + 2  # /compare's status line and export files (ui/core/frame.Outputs.all)
QUESTION = "Who teaches our class, and in which room?"


def class_facts_model(body: dict) -> StubReply:
    """ReAct asking the class's tool: the teacher, then the room, then the answer from what it was told."""
    seen = [str(m.get("content")) for m in body.get("messages") or [] if str(m.get("content") or "").startswith(
        "Observation:")]
    if not seen:
        return StubReply(text="Thought: ask the class's tool.\nAction: class_facts\nAction Input: teacher")
    if len(seen) == 1:
        return StubReply(text="Thought: now the room.\nAction: class_facts\nAction Input: room")
    said = [s.removeprefix("Observation:").strip() for s in seen]
    return StubReply(text=f"Thought: known.\nFinal Answer: {said[0]} in {said[1]}")


@pytest.fixture(scope="module")
def served(kit):
    with StubLLMServer(responder=class_facts_model) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
        with kit.launched(demo) as base:
            yield demo, base.rstrip("/"), stub


def fn_index(demo, name: str) -> int:
    return next(i for i, fn in demo.fns.items() if fn.name == name)


def test_a_tool_added_on_the_page_is_used_by_react_exported_and_forked_again(served):
    demo, base, stub = served
    session = "page-tool-visitor"
    add = queue_frames(base, fn_index(demo, "add"),
                     ["class_facts", "Facts about our class.", CLASS_FACTS, None, ["calculate"]], session)
    own, picker, status = add[-1]
    assert "class_facts" in status and "added" in status
    shadow = queue_frames(base, fn_index(demo, "add"), ["Calculate", "Mine.", "return text", None, ["calculate"]],
                        session)
    assert "would shadow the tool 'calculate'" in shadow[-1][2]

    compare = fn_index(demo, "compare")
    inputs = demo.fns[compare].inputs
    run = queue_frames(base, compare, [_value(demo, b, ["calculate", "class_facts"]) for b in inputs], session)
    last = run[-1]
    react = json.dumps(last[output_index("react")], ensure_ascii=False)
    assert "Ms Okafor" in react and "B12" in react, react[-2000:]
    exports = last[FILES]
    export = next(f for f in (exports.get("value", exports) if isinstance(exports, dict) else exports)
                  if str(f.get("path", "")).endswith(".json"))
    path = export["path"]
    with open(path, encoding="utf-8") as f:
        exported = json.load(f)
    assert exported["settings"]["tools"] == ["calculate", "class_facts"]
    assert exported["settings"]["page_tools"] == [
        {"name": "class_facts", "description": "Facts about our class.", "source": CLASS_FACTS}]
    assert exported["traces"]["react"]["summary"]["answer"] == "Ms Okafor in B12"
    with open(path.removesuffix(".json") + ".md", encoding="utf-8") as f:
        assert "**Tool written on the page:** `class_facts`" in f.read()  # the report shows the source too

    # the export replayed in a new session that never added the tool, and forked there: the tool is made again
    # from the export's source (a fork continues the run on its page's screen)
    queue_frames(base, fn_index(demo, "play"), [export, "instant"], "someone-else")
    stub.requests.clear()
    fork = fn_index(demo, "fork")
    data = ["react", choice_value(0, "Ms Okafor"), "Mr Adeyemi", "new", None, "text", 5, 0.2, ["calculate"], None]
    frames = queue_frames(base, fork, data, "someone-else")
    beside = json.dumps(frames[-1][output_index(BESIDE)], ensure_ascii=False)
    assert "Mr Adeyemi in B12" in beside, beside[-2000:]
    assert len(stub.requests) == 2  # the room asked again (the page tool ran in the fork), then the answer

    # a Share link of the run, opened by someone else: its export carries the source, and a fork of it runs it again
    link = queue_frames(base, fn_index(demo, "share"), [exports, None], session)[-1][0]
    run_id = re.search(r"\?run=([\w-]+)", link).group(1)
    opened = queue_frames(base, fn_index(demo, "open"), [], "a-student", query=f"?run={run_id}")[-1]
    shared = opened[FILES]
    shared_path = next(f["path"] for f in (shared.get("value", shared) if isinstance(shared, dict) else shared))
    with open(shared_path, encoding="utf-8") as f:
        assert json.load(f)["settings"]["page_tools"][0]["source"] == CLASS_FACTS
    stub.requests.clear()
    data = ["react", choice_value(0, "Ms Okafor"), "Mx Lee", "new", None, "text", 5, 0.2, [], None]
    frames = queue_frames(base, fork, data, "a-student")
    assert "Mx Lee in B12" in json.dumps(frames[-1][output_index(BESIDE)], ensure_ascii=False)
    assert len(stub.requests) == 2

    # another visitor's run does not know the tool
    other = queue_frames(base, compare, [_value(demo, b, ["calculate", "class_facts"]) for b in inputs], "another")
    assert "Unknown tool(s): 'class_facts'" in other[-1][STATUS]


def _value(demo, block, tools: list[str]):
    """What the page sends for each /compare input: the run's values, None for the states and hidden inputs."""
    import gradio as gr

    if isinstance(block, gr.State):
        return None
    label = getattr(block, "label", None)
    known = {"Question": QUESTION, "Modes": ["react"], "Protocol": "text", "Max steps": 5, "Temperature": 0.2,
             "Enabled tools": tools, "Expected answer": ""}
    return known.get(label)


def test_codeact_calls_the_visitors_tool_as_a_function_in_a_worker(served):
    demo, base, stub = served
    session = "page-tool-codeact"
    queue_frames(base, fn_index(demo, "add"), ["class_facts", "Facts about our class.", CLASS_FACTS, None, []], session)
    stub.script("Thought: ask it twice.\n<code>\nwho, where = class_facts('teacher'), class_facts('room')\n"
                "print(who, where)\n</code>",
                "Thought: done.\n<code>\nfinal_answer(f'{who} in {where}')\n</code>")
    compare = fn_index(demo, "compare")
    data = [_value(demo, b, ["class_facts"]) for b in demo.fns[compare].inputs]
    data[[getattr(b, "label", None) for b in demo.fns[compare].inputs].index("Modes")] = ["codeact"]
    last = queue_frames(base, compare, data, session)[-1]
    codeact = json.dumps(last[output_index("codeact")], ensure_ascii=False)
    assert "Ms Okafor B12" in codeact and "Ms Okafor in B12" in codeact, codeact[-2000:]


def test_the_prompts_tab_lists_the_visitors_tool(served):
    demo, base, _ = served
    session = "page-tool-prompts"
    queue_frames(base, fn_index(demo, "add"), ["class_facts", "Facts about our class.", CLASS_FACTS, None, []], session)
    frames = queue_frames(base, fn_index(demo, "show"), ["text", 5, ["class_facts"], None], session)
    assert any("- class_facts(text): Facts about our class." in box for box in frames[-1])


def test_rest_calls_are_unchanged_and_carry_no_page_tool(served):
    _, base, _ = served
    data = [QUESTION, ["react"], None, "text", 5, 0.2, ["calculate", "class_facts"], "None", None, ""]
    last = last_frame(base, "compare", data)
    assert "Unknown tool(s): 'class_facts'" in last[STATUS]
    prompts = httpx.post(f"{base}/gradio_api/call/prompts", json={"data": ["text", 5, ["calculate"]]}, timeout=30)
    assert prompts.status_code == 200, prompts.text  # /prompts' three inputs, as before page_tools
    with httpx.stream("GET", f"{base}/gradio_api/call/prompts/{prompts.json()['event_id']}", timeout=30) as s:
        events = [line for line in s.iter_lines() if line.startswith("event:")]
    assert "event: complete" in events


def test_the_benchmark_uses_the_visitors_tool_and_refuses_it_for_anyone_else(kit, tmp_path):
    import asyncio

    from ui.benchmark import tab as bt
    from ui.core.stream import Stops

    items = tmp_path / "class.jsonl"
    items.write_text(json.dumps({"question": QUESTION, "answer": "Ms Okafor in B12"}) + "\n", encoding="utf-8")
    own = [{"name": "class_facts", "description": "Facts about our class.", "source": CLASS_FACTS}]

    async def frames(tab, page_tools) -> list:
        return [f async for f in tab.benchmark(bt.UPLOAD, str(items), 1, ["react"], 1, 1, "stub", "text", 5, 0.2,
                                               ["class_facts"], None, None, page_tools)]  # trials, k

    with StubLLMServer(responder=class_facts_model) as stub:
        tab = bt.BenchmarkTab(kit.settings(stub), kit.registry(), stops=Stops(), refresh_s=0.2)
        status = asyncio.run(frames(tab, own))[-1][0]
        assert "1 / 1 pairs" in status, status
        assert "Observation: B12" in json.dumps(stub.requests[-1].body)
        assert "Unknown tool\\(s\\): 'class\\_facts'" in asyncio.run(frames(tab, None))[-1][0]  # Markdown-escaped
