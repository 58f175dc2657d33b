"""The toy model's Think-only (no calculator) states a wrong estimate with a number, as a model doing mental
arithmetic would, so "watch Think-only get close but wrong" is what a class sees."""

from __future__ import annotations

import pytest

from agents.correctness import judge
from agents.llm.toy_model import UNKNOWN, estimate, toy_policy

THINK_PROMPT = "Think step by step, then write Final Answer: <answer>"


def think(question: str) -> str:
    body = {"messages": [{"role": "system", "content": THINK_PROMPT},
                         {"role": "user", "content": f"Question: {question}"}]}
    return toy_policy(body).text


@pytest.mark.parametrize(("question", "answer", "said"), [
    ("What is 17 * 23 + 5?", "396", "about 400"),
    ("What is 3.7% of 48,250?", "1785.25", "about 1,800"),
    ("How many seconds are there in 13 weeks?", "7862400", "about 7,900,000"),
    ("What is 2 + 2?", "4", "about 4.1"),  # rounding would be exact: nudged, still an estimate
    ("What is 100 * 10?", "1000", "about 1,100"),
])
def test_the_estimate_has_a_number_close_to_the_answer_but_wrong(question, answer, said):
    text = think(question)
    final = text.split("Final Answer:")[1].strip()
    assert final == said
    verdict = judge(final, answer, question)
    assert not verdict.correct and verdict.parsed is not None, verdict  # a number, and not the right one


def test_what_it_cannot_compute_it_does_not_pretend_to_know():
    assert estimate("1/0") is None
    assert think("Who wrote Pride and Prejudice?").endswith(f"Final Answer: {UNKNOWN}.")
