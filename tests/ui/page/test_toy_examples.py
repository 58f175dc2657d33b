"""Every example, run through the built-in toy model (the app's backend when nothing is configured), in both
protocols: an example marked ``toy=True`` is answered correctly by Act and ReAct (through the calculator) while
Think-only, without tools, only estimates; every other example gets "I don't know" from all three. The page's
marks and "what to watch" lines (ui/page/parts.py) say exactly this, so they rest on what the toy really does."""

from __future__ import annotations

import re

import pytest

from agents.comparison import compare
from agents.correctness import judge
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from agents.llm.toy_model import UNKNOWN, toy_expression, toy_policy
from agents.modes import RunConfig
from ui.page.examples import CATEGORIES, EXAMPLES, toy_category


@pytest.fixture(scope="module")
def toy():
    with StubLLMServer(toy_policy) as server:
        settings = LLMSettings(base_url=server.url, model="toy", timeout_s=10)
        yield lambda: HFInferenceModel(settings)


@pytest.mark.parametrize("protocol", ["text", "tools"])
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.label for e in EXAMPLES])
def test_each_example_is_answered_by_the_toy_exactly_when_it_is_marked_so(toy, registry, example, protocol):
    traces = compare(example.question, model_factory=toy, registry=registry, config=RunConfig(protocol=protocol))
    answers = {mode: trace.answer or "" for mode, trace in traces.items()}
    if example.toy:
        assert example.answer, f"{example.label}: an example the toy answers needs an expected answer to check"
        for mode in ("act", "react"):
            assert judge(answers[mode], example.answer, example.question).correct, (mode, answers[mode])
            assert [s.action for s in traces[mode].steps] == ["calculate"]
        assert not judge(answers["think"], example.answer, example.question).correct  # it can only estimate
        assert re.fullmatch(r"about -?[\d,]+(\.\d+)?", answers["think"]), answers["think"]  # a wrong number
    else:
        assert all(a.startswith(UNKNOWN) for a in answers.values()), answers


def test_the_toy_answers_a_whole_tab_which_is_the_first_such_tab():
    category = toy_category()
    assert category is not None and category.id == "arithmetic"
    assert all(e.toy for e in EXAMPLES if e.category == category.id)
    earlier = CATEGORIES[:CATEGORIES.index(category)]
    assert not any(all(e.toy for e in EXAMPLES if e.category == c.id) for c in earlier)


def test_the_toy_writes_expressions_not_answers():
    assert toy_expression("What is 17 * 23 + 5?") == "17 * 23 + 5"
    assert toy_expression("What is 3.7% of 48,250, rounded to two decimals?") == "round(48250 * 3.7 / 100, 2)"
    assert toy_expression("What is 5% of 200?") == "200 * 5 / 100"
    assert toy_expression("How many seconds are there in 13 weeks?") == "13 * 7 * 24 * 60 * 60"
    assert toy_expression("How many hours in 2 days?") == "2 * 24"
    for question in ("How many weeks are there in 3 seconds?", "What is the 30th Fibonacci number?",
                     "How many prime numbers are there below 10,000?", "Who wrote 'Pride and Prejudice'?"):
        assert toy_expression(question) == "", question
