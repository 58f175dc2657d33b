"""The Benchmark tab on the toy model opens on the questions the toy can answer, and says in one line what it
answers; with a real model it opens on HotpotQA, as before."""

from __future__ import annotations

import gradio as gr

from agents.evaluation.datasets import load_dataset
from agents.llm.settings import LLMSettings
from agents.llm.toy_model import toy_expression
from tools.calculator import calculate
from tools.registry import ToolRegistry
from ui.benchmark import layout
from ui.benchmark import tab as bt

REGISTRY = ToolRegistry([calculate])


def built(settings: LLMSettings) -> dict:
    with gr.Blocks():
        with gr.Tab("Benchmark"):
            return bt.build_benchmark_tab(settings, REGISTRY)


def note_of(parts: dict) -> gr.Markdown:
    return parts["toy_note"]


def test_on_the_toy_the_tab_opens_on_arithmetic_and_says_what_the_toy_answers():
    parts = built(LLMSettings(base_url="http://127.0.0.1:9/v1", model="toy", toy=True))
    assert parts["dataset"].value == layout.TOY_DATASET == "arithmetic"
    note = note_of(parts)
    assert note.visible and "only arithmetic" in note.value and "scores 0" in note.value
    items = load_dataset("arithmetic")
    assert items and all(i.category == "arithmetic" for i in items)
    assert sum(bool(toy_expression(i.question)) for i in items) >= len(items) / 2  # most of them it can compute


def test_with_a_real_model_the_tab_opens_on_hotpotqa_and_says_nothing_of_the_toy():
    parts = built(LLMSettings(base_url="http://127.0.0.1:9/v1", model="m"))
    assert parts["dataset"].value == "hotpotqa"
    note = note_of(parts)
    assert not note.visible
