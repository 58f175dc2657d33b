"""The benchmark's grounding shares (``agents/evaluation/grounded.py``): over a scripted dataset, run through the real
HF client against the stub server, each mode's shares equal the counts made by hand."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agents.evaluation.datasets import load_dataset
from agents.evaluation.grounded import NOTE, format_grounding, grounding_stats, grounding_table, paper_shares
from agents.evaluation.report import summary_csv
from agents.evaluation.runner import run_eval
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply
from tools.calculator import calculate
from tools.registry import ToolRegistry

ITEMS = [("What is 17 * 23 + 5?", "396"), ("What is 12 * 12?", "144"), ("What is 2 + 2?", "4")]
# Each mode's final answer per item (after its calculator call, for Act-only and ReAct), and what it makes of it:
#   Think-only: 396 (right, unbacked: never observed) · 124 (wrong, unbacked) · "4, as Euclid taught" (right, unbacked)
#   Act-only:   396 (right, backed) · "144, checked by Lisa" (right, Lisa unbacked) · 5 (wrong, unbacked)
#   ReAct:      396 · 144 · 4 (all right, all backed by the calculator)
ANSWERS = {"think": ["396", "124", "4, as Euclid taught"], "act": ["396", "144, checked by Lisa", "5"],
           "react": ["396", "144", "4"]}
BY_HAND = {"think": {"correct": 2, "correct_unbacked": 2, "wrong": 1, "wrong_unbacked": 1},
           "act": {"correct": 2, "correct_unbacked": 1, "wrong": 1, "wrong_unbacked": 1},
           "react": {"correct": 3, "correct_unbacked": 0, "wrong": 0, "wrong_unbacked": 0}}


def scripted(body: dict[str, Any]) -> StubReply:
    messages = body.get("messages") or []
    system = str(messages[0].get("content") or "")
    mode = "think" if "without any tools" in system else "react" if "ReAct paper" in system else "act"
    question = next(str(m.get("content") or "") for m in messages if m.get("role") == "user")
    n = next(i for i, (q, _) in enumerate(ITEMS) if q in question)
    if mode != "think" and not any(str(m.get("content") or "").startswith("Observation") for m in messages[1:]):
        expression = re.search(r"What is (.*)\?", ITEMS[n][0]).group(1)
        thought = "Thought: I compute it.\n" if mode == "react" else ""
        return StubReply(text=f"{thought}Action: calculate\nAction Input: {expression}")
    return StubReply(text=f"Final Answer: {ANSWERS[mode][n]}")


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "sums.jsonl"
    path.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in ITEMS), encoding="utf-8")
    return load_dataset(str(path))


def test_the_shares_per_mode_equal_the_counts_made_by_hand(dataset, tmp_path):
    with StubLLMServer(scripted) as server:
        settings = LLMSettings(base_url=server.url, model="stub")
        result = run_eval(dataset, ["think", "act", "react"], model_factory=lambda: HFInferenceModel(settings),
                          registry=ToolRegistry([calculate]), concurrency=3, out_dir=tmp_path / "out")
    for mode, counted in BY_HAND.items():
        stats = result.summary["modes"][mode]["grounding"]
        assert {k: stats[k] for k in counted} == counted, mode
    headers, rows = grounding_table(result.summary)
    table = {row[0]: dict(zip(headers[1:], row[1:], strict=True)) for row in rows}
    assert list(table["Think-only (CoT)"].values()) == [2, 100.0, 14.0, 1, 100.0, 56.0]  # beside the paper's
    assert list(table["Act-only"].values()) == [2, 50.0, None, 1, 100.0, None]  # Table 2 has no Act-only
    assert list(table["ReAct"].values()) == [3, 0.0, 6.0, 0, None, 0.0]
    assert "grounding.correct_share" in summary_csv(result.summary).splitlines()[0]
    text = format_grounding(result.summary)
    assert NOTE in text and "human labels" in text and "string matches" in text


def test_shares_count_only_answered_pairs_with_claim_counts():
    records = [{"em": 1, "prediction": "Paris", "claims": {"unbacked": 1}},
               {"em": 0, "prediction": "Lyon", "claims": {"backed": 1}},
               {"em": 0, "prediction": "", "claims": {}},  # no answer: neither right nor wrong here
               {"em": 1, "prediction": "Paris"}]  # a record saved before claims were counted
    assert grounding_stats(records) == {"correct": 1, "correct_unbacked": 1, "wrong": 1, "wrong_unbacked": 0,
                                        "correct_share": 1.0, "wrong_share": 0.0}
    assert grounding_stats([])["correct_share"] is None


def test_the_papers_shares_are_table_2s():
    assert paper_shares("think") == (0.14, 0.56) and paper_shares("react") == (0.06, 0.0)
    assert paper_shares("act") is None and paper_shares("reflexion") is None
