"""Benchmark → Compare without a browser: a real benchmark (stub model) keeps its traces, the picker
lists the items where the modes disagree first, and opening one fills the Compare tab's outputs."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import gradio as gr
import pytest

from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from tests.frames import compare_outputs
from tools.calculator import calculate
from tools.registry import ToolRegistry
from ui.benchmark import open_in_compare
from ui.benchmark import tab as bt
from ui.benchmark.open_in_compare import BenchFolder, BenchOpen, RunFolders, disagree, item_choices
from ui.core.frame import Outputs

STATUS, TABLE, FILES = 6, 7, 8
QUESTIONS = [("What is 17 * 23 + 5?", "396"), ("What is 12 * 12?", "144")]


def outputs() -> Outputs:
    return compare_outputs()


def benchmark(path, modes: list[str], session: str, **options) -> tuple[RunFolders, SimpleNamespace, list]:
    """A benchmark of the items in ``path`` through ``modes`` on the stand-in, for one visitor: its folders, the
    visitor and every frame."""
    folders, visitor = RunFolders(), SimpleNamespace(session_hash=session)
    with StubLLMServer(latency=0.01, token_delay=0.001) as stub:
        handler = bt.BenchmarkTab(LLMSettings(model="stub", base_url=stub.url), ToolRegistry([calculate]),
                                  stops=bt.Stops(), folders=folders)

        async def run() -> list:
            return [f async for f in handler.benchmark(bt.UPLOAD, str(path), options.pop("n", 2), modes, 1,
                                                       tools=["calculate"], request=visitor, **options)]

        return folders, visitor, asyncio.run(run())


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One benchmark of two arithmetic items through Think and ReAct (the stub's Think is wrong, ReAct right)."""
    path = tmp_path_factory.mktemp("bench") / "arith.jsonl"
    path.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in QUESTIONS), encoding="utf-8")
    folders, visitor, frames = benchmark(path, ["think", "react"], "v1")
    assert frames[-1][0].startswith("✔ Done"), frames[-1][0]
    return folders, visitor


def test_disagreement_is_a_right_and_a_wrong_or_different_answers():
    assert disagree([{"em": True, "parsed": "4"}, {"em": False, "parsed": "5"}])
    assert disagree([{"em": False, "parsed": "4"}, {"em": False, "parsed": "5"}])
    assert not disagree([{"em": True, "parsed": "4"}, {"em": True, "parsed": " 4 "}])


def test_the_filter_judges_agreement_as_the_comparison_table_does():
    """"396." and "396" agree in the table's line (ui/core/table.answers_agree): the filter must not list them."""
    from ui.core.table import answers_agree

    assert answers_agree("396.", "396") and answers_agree("Paris", "Paris, France")
    assert not disagree([{"em": False, "parsed": "396."}, {"em": False, "parsed": "396"}])
    assert not disagree([{"em": True, "parsed": "Paris"}, {"em": True, "prediction": "Paris, France"}])
    assert not disagree([{"em": False, "parsed": ""}, {"em": False, "parsed": None}])  # both failed alike
    assert disagree([{"em": False, "parsed": "396"}, {"em": False, "parsed": "400"}])
    assert disagree([{"em": False, "parsed": "Paris"}, {"em": False, "parsed": ""}])
    assert disagree([{"em": False, "parsed": "3.5"}, {"em": False, "parsed": "35"}])
    assert disagree([{"em": False, "parsed": "4"}, {"em": False, "parsed": "4"}, {"em": False, "parsed": "5"}])


def test_the_benchmark_keeps_each_pairs_trace_for_its_visitor(finished):
    folders, visitor = finished
    folder = folders.get("v1")
    assert folder is not None and len(list((folder.out_dir / "traces").glob("*.json"))) == 4
    listed = item_choices(folder, only_disagreeing=False)
    assert [item_id for _, item_id in listed] == list(folder.item_ids) and len(listed) == 2
    assert listed[0][0].startswith("1. What is 17 * 23 + 5?")
    assert "Think-only ✗" in listed[0][0] and "ReAct ✓" in listed[0][0]


def test_the_picker_lists_disagreeing_items_and_opening_one_fills_compare(finished):
    folders, visitor = finished
    handlers = BenchOpen(folders, outputs())
    dropdown = asyncio.run(handlers.choices(True, visitor))
    choices = dropdown.choices
    assert len(choices) == 2 and dropdown.value == choices[0][1]
    values = asyncio.run(handlers.open(dropdown.value, visitor))
    question, expected, modes, beside = values[-4:]  # the page's on_screen(): question, expected, picker, beside
    assert question in {q for q, _ in QUESTIONS} and expected in {a for _, a in QUESTIONS}
    assert modes == ["think", "react"] and beside.visible is False  # the benchmark ran these two
    assert "Benchmark item" in values[STATUS] and "Think-only" in values[TABLE] and "ReAct" in values[TABLE]
    assert "Final answer" in json.dumps(values[2], default=str) and values[FILES][0].endswith(".json")


def test_the_lists_two_refreshes_are_one_event_that_runs_again_with_the_box_as_it_is():
    """A benchmark's end and a click on the filter both refresh the list. As two events, headless Chromium saw
    their answers land in either order (the list said "where the modes disagree" under an unticked box); as one
    ``always_last`` event, a second trigger waits for the first and reads the box when it runs."""
    handlers = BenchOpen(RunFolders(), outputs())
    with gr.Blocks() as blocks:
        picker = open_in_compare.picker_layout()
        event = gr.Button().click(lambda: None)
        open_in_compare.wire(handlers, picker, event, [])
    writers = [d for d in blocks.get_config_file()["dependencies"] if picker["item"]._id in d["outputs"]]
    assert len(writers) == 1 and writers[0]["trigger_mode"] == "always_last"
    targets = {(picker["only"]._id, "change"), (picker["ended"]._id, "change")}
    assert {tuple(t) for t in writers[0]["targets"]} == targets


def test_an_empty_list_after_a_benchmark_says_why_not_to_run_one(tmp_path):
    """Every mode agreed (the toy model says "I don't know" to both): no item disagrees, and the list says so."""
    path = tmp_path / "agree.jsonl"
    path.write_text(json.dumps({"question": "Who wrote Hamlet?", "answer": "Shakespeare"}) + "\n", encoding="utf-8")
    folders, visitor, frames = benchmark(path, ["think", "act"], "v2", n=1)
    assert frames[-1][0].startswith("✔ Done")
    handlers = BenchOpen(folders, outputs())
    empty = asyncio.run(handlers.choices(True, visitor))
    assert empty.choices == [] and empty.info == open_in_compare.NONE_DISAGREE and "untick to list all" in empty.info
    listed = asyncio.run(handlers.choices(False, visitor))
    assert len(listed.choices) == 1 and "1 item" in listed.info


def test_nothing_to_open_is_one_line():
    handlers = BenchOpen(RunFolders(), outputs())
    visitor = SimpleNamespace(session_hash="nobody")
    assert asyncio.run(handlers.choices(True, visitor)).choices == []
    assert "Run a benchmark first" in asyncio.run(handlers.open("x", visitor))[STATUS]


def test_an_unknown_item_is_one_line(finished, tmp_path):
    folders, visitor = finished
    values = asyncio.run(BenchOpen(folders, outputs()).open("no-such-item", visitor))
    assert "no saved traces" in values[STATUS]


def test_folders_forget_the_least_recent_visitor(tmp_path):
    folders = RunFolders(limit=2)
    for name in "abc":
        folders.remember(name, BenchFolder(tmp_path, ()))
    assert folders.get("a") is None and folders.get("c") is not None
    assert open_in_compare.MAX_VISITORS >= 64


def test_with_k_tries_each_item_is_listed_once_and_opens_each_mode_s_first_try(tmp_path):
    path = tmp_path / "arith.jsonl"
    path.write_text(json.dumps({"question": QUESTIONS[0][0], "answer": QUESTIONS[0][1]}) + "\n", encoding="utf-8")
    folders, visitor, frames = benchmark(path, ["think", "react"], "v3", n=1, k=3)
    assert frames[-1][0].startswith("✔ Done: 6 / 6 pairs")
    folder = folders.get("v3")
    assert folder is not None and len(list((folder.out_dir / "traces").glob("*.json"))) == 6  # a trace per try
    (label, item_id), = item_choices(folder, only_disagreeing=False)
    assert label.endswith("— Think-only ✗ · ReAct ✓")
    values = asyncio.run(BenchOpen(folders, outputs()).open(item_id, visitor))
    assert values[-2] == ["think", "react"] and "Benchmark item" in values[STATUS]
