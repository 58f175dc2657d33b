"""pass^k, cost per correct answer and the N × k runs: counted by hand over scripted datasets.

The scripted tries go through the runner (``run_eval(k=…)``) with ScriptedModel factories; the priced run goes
through the real HF client to the stand-in server, whose model listing carries the price (as the router's does).
"""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest

from agents.comparison import default_model_factory
from agents.evaluation.datasets import Item, load_dataset
from agents.evaluation.report import NO_FIGURE, format_summary, reliability_table, summarise, summary_csv
from agents.evaluation.runner import run_eval
from agents.evaluation.store import RESULTS_FILE, ResultStore, trace_filename
from agents.llm import pricing
from agents.llm.discovery import resolve_model
from agents.llm.scripted import Request, ScriptedModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, toy_policy
from tools.calculator import calculate
from tools.registry import ToolRegistry

REGISTRY = ToolRegistry([calculate])
# How many of its three tries Think-only gets right, per item: 2 of 3, 3 of 3, none, 1 of 3.
RIGHT_OF_THREE = {"a": 2, "b": 3, "c": 0, "d": 1}
ITEMS = [Item(id=name, question=f"Name the letter {name}.", answer=name, dataset="letters")
         for name in RIGHT_OF_THREE]


@pytest.fixture(autouse=True)
def no_prices():
    """Each test publishes its own prices; none leak into the next."""
    pricing.publish(None)
    yield
    pricing.publish(None)


class Tries:
    """A fresh ScriptedModel per try; the n-th try of an item (whichever thread runs it) is right while n is under
    that item's :data:`RIGHT_OF_THREE`, so each item gets exactly that many right answers."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self) -> ScriptedModel:
        return ScriptedModel([self.reply])

    def reply(self, request: Request) -> str:
        name = request.messages[-1]["content"].rstrip(".")[-1]
        with self.lock:
            number = self.seen[name]
            self.seen[name] += 1
        answer = name if number < RIGHT_OF_THREE[name] else "z"
        return f"Thinking.\nFinal Answer: {answer}"


def row_of(summary: dict, mode: str) -> dict:
    headers, rows = reliability_table(summary)
    return dict(zip(headers, next(r for r in rows if r[0] == mode), strict=True))


def test_right_on_two_of_three_tries_is_pass_at_1_two_thirds_and_pass_hat_3_zero(tmp_path):
    tries = Tries()
    result = run_eval(ITEMS, ["think"], model_factory=tries, registry=REGISTRY, concurrency=4, out_dir=tmp_path, k=3)
    assert tries.seen == dict.fromkeys(RIGHT_OF_THREE, 3)  # every item ran three times, no more
    records = result.records
    assert [(r["id"], r["try"]) for r in records] == [(i.id, t) for i in ITEMS for t in (1, 2, 3)]
    one = summarise([r for r in records if r["id"] == "a"], ["think"], "letters", k=3)["modes"]["think"]
    assert (one["pass_at_1"], one["pass_hat_k"]) == (pytest.approx(2 / 3), 0.0)  # item a alone: 2/3 and 0
    assert (one["correct"], one["tries"], one["pass_hat_k_passed"], one["pass_hat_k_items"]) == (2, 3, 0, 1)

    think = result.summary["modes"]["think"]
    right = sum(RIGHT_OF_THREE.values())  # by hand: 6 of 12 tries; only item b right on all three
    assert (think["correct"], think["tries"], think["n"]) == (right, 12, 12)
    assert think["pass_at_1"] == think["em"] == right / 12
    assert (think["pass_hat_k"], think["pass_hat_k_passed"], think["pass_hat_k_items"]) == (1 / 4, 1, 4)
    assert result.summary["k"] == think["k"] == 3
    assert row_of(result.summary, "Think-only (CoT)") == {
        "Mode": "Think-only (CoT)", "EM % (pass@1)": 50.0, "Right / tries": "6 / 12", "pass^3 %": 25.0,
        "All 3 right / items": "1 / 4", "Tokens per correct": round(sum(r["tokens"] for r in records) / right)}
    assert "pass^3 %" in format_summary(result.summary) and "τ-bench" in format_summary(result.summary)
    assert "pass_hat_k" in summary_csv(result.summary).splitlines()[0]

    saved = ResultStore(tmp_path).load()  # one record and one trace per try
    assert sorted(saved) == sorted((i.id, "think", t) for i in ITEMS for t in (1, 2, 3))
    assert (tmp_path / "traces" / trace_filename("a", "think", 2)).is_file()
    assert trace_filename("a", "think", 1) == "a__think.json"  # the first try's name is a pair's as before


def test_a_rerun_with_the_same_folder_runs_only_the_missing_tries(tmp_path):
    first = run_eval(ITEMS, ["think"], model_factory=Tries(), registry=REGISTRY, out_dir=tmp_path, k=2)
    assert len(first.records) == 8
    lines = (tmp_path / RESULTS_FILE).read_text().splitlines()
    (tmp_path / RESULTS_FILE).write_text("\n".join(lines[:-3]) + "\n")  # three tries lost
    tries = Tries()
    again = run_eval(ITEMS, ["think"], model_factory=tries, registry=REGISTRY, out_dir=tmp_path, k=2)
    assert sum(tries.seen.values()) == 3 and len(again.records) == 8


def test_an_item_counts_in_pass_hat_k_once_all_its_tries_finished():
    records = [{"id": "a", "mode": "react", "try": t, "em": 1.0, "f1": 1.0, "tokens": 10} for t in (1, 2)]
    records += [{"id": "b", "mode": "react", "try": 1, "em": 1.0, "f1": 1.0, "tokens": 10}]  # still running
    react = summarise(records, ["react"], "custom", k=2)["modes"]["react"]
    assert (react["pass_hat_k"], react["pass_hat_k_items"], react["pass_at_1"]) == (1.0, 1, 1.0)


def test_tokens_per_correct_is_marked_when_some_tokens_are_estimated():
    records = [{"id": i, "mode": "think", "em": 1.0, "f1": 1.0, "tokens": 100, "tokens_estimated": i == "b"}
               for i in "ab"]
    assert row_of(summarise(records, ["think"], "custom"), "Think-only (CoT)")["Tokens per correct"] == "~100"
    assert row_of(summarise(records[:1], ["think"], "custom"), "Think-only (CoT)")["Tokens per correct"] == 100


def test_old_records_without_a_try_are_each_their_items_first():
    records = [{"id": "a", "mode": "think", "em": 1.0, "f1": 1.0}, {"id": "b", "mode": "think", "em": 0.0, "f1": 0}]
    think = summarise(records, ["think"], "custom")["modes"]["think"]
    assert (think["k"], think["pass_at_1"], think["pass_hat_k"], think["correct"]) == (1, 0.5, 0.5, 1)


# --- cost per correct answer ------------------------------------------------------------------------


def arithmetic(tmp_path, rows) -> list[Item]:
    path = tmp_path / "sums.jsonl"
    path.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in rows), encoding="utf-8")
    return load_dataset(str(path))


ROWS = [("What is 17 * 23?", "391"), ("What is 12 * 12?", "144"), ("What is 1000 - 1?", "999"),
        ("What is 6 * 7?", "41")]  # the last answer is wrong on purpose: no mode can get it right


def run_on_stub(tmp_path, price):
    """Think-only (the toy cannot compute without tools: never right) and ReAct (right on 3 of 4) over HTTP."""
    with StubLLMServer(toy_policy, models=("stub-model",), price=price) as server:
        settings = resolve_model(LLMSettings.from_env({"LLM_BASE_URL": server.url}))  # reads the listing's price
        return run_eval(arithmetic(tmp_path, ROWS), ["think", "react"], model_factory=default_model_factory(settings),
                        registry=REGISTRY, concurrency=2, out_dir=tmp_path / "out", k=2)


def test_cost_per_correct_answer_is_the_priced_tokens_over_the_correct_answers(tmp_path):
    result = run_on_stub(tmp_path, price=(2.0, 8.0))
    price = pricing.Price(2.0, 8.0)
    react_records = [r for r in result.records if r["mode"] == "react"]
    correct = sum(1 for r in react_records if r["em"] == 1.0)
    assert correct == 6 and not any(r["tokens_estimated"] for r in react_records)  # 3 of 4 items, twice each
    expected = sum(price.cost(r["prompt_tokens"], r["completion_tokens"]) for r in react_records) / correct
    react, think = result.summary["modes"]["react"], result.summary["modes"]["think"]
    assert react["cost_per_correct_usd"] == expected  # exactly: every try's tokens, right or wrong, over 6
    assert react["tokens_per_correct"] == sum(r["tokens"] for r in react_records) / correct
    assert row_of(result.summary, "ReAct")["Cost per correct"] == pricing.cost_text(expected)
    assert think["correct"] == 0 and think["cost_per_correct_usd"] is None and think["cost_usd"] > 0
    no_answer = row_of(result.summary, "Think-only (CoT)")
    assert no_answer["Cost per correct"] == no_answer["Tokens per correct"] == NO_FIGURE == "—"
    headers = reliability_table(result.summary)[0]
    assert headers.index("Cost per correct") + 1 == headers.index("Tokens per correct")  # never one column


def test_without_a_price_it_is_tokens_per_correct_answer(tmp_path):
    result = run_on_stub(tmp_path, price=None)
    react_records = [r for r in result.records if r["mode"] == "react"]
    headers, rows = reliability_table(result.summary)
    assert "Cost per correct" not in headers and not any("$" in str(cell) for row in rows for cell in row)
    assert row_of(result.summary, "ReAct")["Tokens per correct"] == round(sum(r["tokens"] for r in react_records) / 6)
    assert row_of(result.summary, "Think-only (CoT)")["Tokens per correct"] == "—"
    assert "cost_per_correct_usd" not in result.summary["modes"]["react"]
