"""Follow-up blocks (agents/followup.py): sealed and opened, refused in one line when changed or foreign, kept
under the turn limit and the token budget; CodeAct's variables and Reflexion's lessons carried to the next turn."""

from __future__ import annotations

import json

import pytest

from agents.comparison import ComparisonRun
from agents.events import Observation
from agents.followup import FollowupError, block_for, follow_up, opened
from agents.llm.scripted import ScriptedModel
from agents.modes import RunConfig
from agents.modes.reflexion import memory_note
from agents.request import RunRequest
from agents.trace import Trace
from tools.registry import ToolRegistry, tool


@tool
def calculate(expression: str) -> str:
    """Add integers written as a+b."""
    return str(sum(int(x) for x in expression.replace(" ", "").split("+")))


REGISTRY = ToolRegistry([calculate])
CONFIG = RunConfig(max_steps=4)


def turn(mode: str, question: str, model: ScriptedModel, previous=None, budget: int = 10_000, **options) -> tuple:
    """One turn of ``mode`` through the engine's run (as a live run makes it); returns its trace and its block."""
    followup, history = follow_up(previous, (mode,), budget) if previous is not None else (None, {})
    request = RunRequest(question, (mode,), max_steps=CONFIG.max_steps, history=history, followup=followup,
                         options=options)
    run = ComparisonRun.of(request, lambda: model, REGISTRY).start()
    trace = Trace(mode, question)
    try:
        while (item := run.poll(10)) is not None:
            trace.add(item[1])
    finally:
        run.close()
    model.assert_done()
    return trace, block_for(previous, question, {mode: trace}, REGISTRY, CONFIG)


def open_block(block: dict, max_turns: int = 5):
    return opened(json.dumps({"followup": block}), max_turns=max_turns)


def test_a_block_opens_and_carries_each_turn_s_questions_and_answers():
    model = ScriptedModel(["Thought: add.\nAction: calculate\nAction Input: 2+3", "Final Answer: 5"])
    _, block = turn("react", "What is 2+3?", model)
    previous = open_block(block)
    assert previous.turn == 1 and previous.turns[0]["question"] == "What is 2+3?"
    assert previous.turns[0]["answers"] == {"react": "5"} and previous.turns[0]["numbers"]["react"]["steps"] == 1
    assert "Observation: 5" in json.dumps(previous.history["react"])


def test_changed_foreign_malformed_and_past_the_limit_are_one_line_each():
    _, block = turn("think", "What is 2+3?", ScriptedModel(["Final Answer: 5"]))
    changed = {**block, "turns": [{"question": "What is 9+9?", "answers": {"think": "18"}}]}
    for bad, words in [(changed, "was changed"), ({"format": "x"}, "no follow-up block"), ("{", "must be JSON"),
                       ("[" * 100_000, "must be JSON"),
                       ({**block, "seal": "0" * 64}, "was changed")]:
        with pytest.raises(FollowupError, match=words) as caught:
            opened(bad if isinstance(bad, str) else {"followup": bad}, max_turns=5)
        assert "\n" not in str(caught.value)
    with pytest.raises(FollowupError, match="reached its 1 turns"):
        open_block(block, max_turns=1)


def test_past_the_budget_the_oldest_observations_are_cut_and_counted():
    long = "Thought: add.\nAction: calculate\nAction Input: 2+3"
    _, block = turn("react", "What is 2+3?", ScriptedModel([long, "Final Answer: 5"]))
    previous = open_block(block)
    padded = {"react": tuple({**m, "content": m["content"] + "\n" + "x" * 4000} if m["content"].startswith(
        "Observation") else m for m in previous.history["react"])}
    from dataclasses import replace

    fat = replace(previous, history=padded)
    followup, history = follow_up(fat, ("react",), 200)
    assert followup.cuts == {"react": 1} and "x" * 100 not in json.dumps(history)
    assert follow_up(fat, ("react",), 100_000)[0].cuts == {}
    assert follow_up(fat, ("think",), 200)[1] == {}  # a mode new to the conversation starts afresh


def test_think_only_s_follow_up_holds_only_its_own_text():
    _, block = turn("think", "What is 2+3?", ScriptedModel(["Thought: easy.\nFinal Answer: 5"]))
    model = ScriptedModel(["Final Answer: 4"])
    turn("think", "And minus one?", model, open_block(block))
    sent = model.requests[0].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert "What is 2+3?" in sent[1]["content"] and "Final Answer: 5" in sent[2]["content"]


def test_codeact_s_variables_are_back_in_the_follow_up():
    program = "Thought: keep it.\n<code>\ntotal = calculate('40+1')\nprint(total)\n</code>"
    _, block = turn("codeact", "Add 40 and 1.", ScriptedModel([program, "Final Answer: 41"]))
    previous = open_block(block)
    assert "total = calculate" in json.dumps(previous.history["codeact"])
    model = ScriptedModel(["Thought: reuse it.\n<code>\nprint(int(total) + 1)\n</code>", "Final Answer: 42"])
    trace, _ = turn("codeact", "And one more?", model, previous)
    outputs = [e.output for e in trace.of(Observation) if not e.nested]
    assert outputs == ["42"], outputs  # `total` from turn 1: its program ran again before turn 2's
    assert "Observation: 41" in json.dumps(model.requests[0].messages)


def test_reflexion_keeps_its_lessons_across_turns():
    lesson = "I answered from memory without computing. Next time I will use the calculator first."
    first = ScriptedModel(["Final Answer: 6", lesson, "Thought: add.\nAction: calculate\nAction Input: 2+3",
                           "Final Answer: 5"])
    trace, block = turn("reflexion", "What is 2+3?", first, expected="5")
    assert trace.answer == "5"
    model = ScriptedModel(["Final Answer: 9"])
    turn("reflexion", "What is 4+5?", model, open_block(block), expected="9")
    sent = json.dumps(model.requests[0].messages)
    assert json.dumps(memory_note([lesson]))[1:-1] in sent  # its first trial starts with what turn 1 learned
    assert "What is 2+3?" in sent


def test_the_earlier_turns_table_has_a_row_per_turn_with_its_figures_and_survives_odd_ones():
    from ui.core.followup import earlier_table

    model = ScriptedModel(["Thought: add.\nAction: calculate\nAction Input: 2+3", "Final Answer: 5"])
    _, block = turn("react", "What is 2+3?", model)
    table = earlier_table(open_block(block), ("react", "think"))
    assert "| 1 | What is 2\\+3? | — | 5 (1 step · " in table and table.rstrip().endswith("**Turn 2**")
    odd = {**block["turns"][0], "numbers": {"react": {"steps": "x", "tokens": None, "seconds": []}}}
    from agents.followup import recorded

    shown = earlier_table(recorded({**block, "turns": [odd]}), ("react",))
    assert "| 1 | What is 2\\+3? | — | 5 |" in shown  # no expected answer: a dash


def test_a_hybrid_carries_its_question_and_answer_and_every_call_sees_them():
    _, block = turn("cot_sc_react", "What is 2+3?", ScriptedModel(["Final Answer: 5"] * 5))
    previous = open_block(block)
    assert previous.history["cot_sc_react"] == ({"role": "user", "content": "Question: What is 2+3?"},
                                                 {"role": "assistant", "content": "Final Answer: 5"})
    model = ScriptedModel(["Final Answer: 6"] * 5)
    turn("cot_sc_react", "And plus one?", model, previous)
    assert model.requests and all("What is 2+3?" in json.dumps(r.messages) for r in model.requests)
