"""Settings → Add a tool (``ui/page/page_tools.py``), its handlers called directly: add, replace, remove, the
examples, the limit, a refused name in one line, a replay putting a recording's tools back, an MCP refresh keeping
the visitor's tools in the picker."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import gradio as gr
import pytest

from tools import default_registry
from tools.page_tools import MAX_TOOLS, make_tool, page_tool
from ui.page.page_tools import CLASS_FACTS, EXAMPLES, PageTools
from ui.page.tool_picker import ToolRefresh

BUILTIN = default_registry().names


def handlers() -> PageTools:
    return PageTools(default_registry())


def test_adding_a_tool_puts_it_in_the_visitors_list_and_picker_enabled():
    own, picker, line = handlers().add("class_facts", "Facts about our class.", CLASS_FACTS, [], ["calculate"])
    assert own == [{"name": "class_facts", "description": "Facts about our class.", "source": CLASS_FACTS}]
    assert [c[1] for c in picker.choices] == [*BUILTIN, "class_facts"]
    assert picker.value == ["calculate", "class_facts"]
    assert line.startswith("✔ **class_facts** is added") and "Your tools (1 of 3): `class_facts`." in line


def test_the_same_name_replaces_and_remove_takes_it_away():
    h = handlers()
    own, _, _ = h.add("facts", "One.", "return 'a'", [], [])
    own, _, line = h.add("Facts", "Two.", "return 'b'", own, ["facts"])
    assert [t["description"] for t in own] == ["Two."] and "is replaced" in line
    kept, picker, line = h.remove("facts", own, ["calculate", "Facts"])
    assert kept == [] and [c[1] for c in picker.choices] == BUILTIN and picker.value == ["calculate"]
    assert h.remove("nothing", kept, [])[2] == "⚠ You have no tool named 'nothing'."


def test_a_shadowing_name_or_a_fourth_tool_is_one_line_and_nothing_changes():
    h = handlers()
    own, picker, line = h.add("python_repl", "Mine.", "return text", [], [])
    assert own == gr.skip() and picker == gr.skip()
    assert line == "⚠ 'python_repl' would shadow the tool 'python_repl': choose another name."
    full = [page_tool(f"t{i}", "d", "return text").to_dict() for i in range(MAX_TOOLS)]
    own, _, line = h.add("t9", "d", "return text", full, [])
    assert own == gr.skip() and line.startswith(f"⚠ You have {MAX_TOOLS} tools already")
    assert h.add("t0", "new", "return text", full, [])[0][-1]["description"] == "new"  # a replacement fits


@pytest.mark.parametrize(("label", "question", "answer"), [("Class facts", "Room", "B12"),
                                                            ("Class facts", "lunch", "I know about: exam, room"),
                                                            ("Unit converter", "10 km to miles", "6.21371 miles"),
                                                            ("Unit converter", "100 f in c", "37.7778 c")])
def test_the_examples_are_accepted_and_answer_in_the_sandbox(label, question, answer):
    name, description, body = handlers().example(label)
    assert (name, description, body) == EXAMPLES[label]
    assert answer in make_tool(page_tool(name, description, body, BUILTIN))(question)


def test_a_replayed_recording_puts_its_tools_back_with_the_source_in_the_form(tmp_path):
    recorded = {"name": "class_facts", "description": "Facts.", "source": CLASS_FACTS}
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"question": "q", "settings": {"tools": ["class_facts"], "page_tools": [recorded]},
                                "traces": {"react": {"mode": "react", "question": "q", "events": []}}}))
    mine = {"name": "mine", "description": "Mine.", "source": "return text"}
    own, picker, line, name, description, body = asyncio.run(
        handlers().from_recording(str(path), [mine], ["mine"]))
    assert own == [mine, recorded] and picker.value == ["mine", "class_facts"]
    assert (name, description, body) == ("class_facts", "Facts.", CLASS_FACTS) and "class_facts" in line
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"question": "q", "traces": {"react": {"mode": "react", "events": []}}}))
    assert asyncio.run(handlers().from_recording(str(plain), [mine], [])) == (gr.skip(),) * 6


def test_a_recordings_tool_that_would_shadow_one_here_is_one_line(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"question": "q", "settings": {"page_tools": [
        {"name": "calculate", "description": "d", "source": "return text"}]},
        "traces": {"react": {"mode": "react", "question": "q", "events": []}}}))
    own, _, line, *_ = asyncio.run(handlers().from_recording(str(path), [], []))
    assert own == gr.skip() and "would shadow the tool 'calculate'" in line


def test_an_mcp_refresh_keeps_the_visitors_tools_after_the_apps():
    registry = SimpleNamespace(names=[*BUILTIN, "srv_lookup"], mcp=SimpleNamespace(refresh=lambda _: []))
    picker = SimpleNamespace(choices=[])
    update = ToolRefresh(registry, picker).click(["calculate", "mine"], [{"name": "mine"}])
    assert [c[1] for c in update.choices] == [*BUILTIN, "srv_lookup", "mine"]
    assert update.value == ["calculate", "mine"]
