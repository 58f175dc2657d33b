"""The evidence test in the engine: each kind of change on a backed claim of a scripted run, and the four
verdicts, with scripted models that follow the observation, ignore it, say a third value or look it up again."""

from __future__ import annotations

import re

import pytest

from agents.events import Forked, Observation
from agents.evidence import EvidenceError, judge, plan_change, test_evidence, verdict_line
from agents.llm.scripted import Request, ScriptedModel
from agents.modes import RunConfig, react
from agents.trace import Trace
from tools.registry import ToolRegistry, tool

FACTS = {
    "hall": "The Grand Hall seats 396 people on two floors.",
    "bridge": "The Forth Bridge was designed by John Fowler; Benjamin Baker worked with him.",
    "landing": "Apollo 11 landed on the Moon on 20 July 1969.",
    "tower": "The Eiffel Tower opened in 1889 for the World's Fair.",
}
ANSWERS = {"hall": "396", "bridge": "John Fowler", "landing": "20 July 1969", "tower": "1889"}
CONFIG = RunConfig(protocol="text", max_steps=4)


@tool
def lookup(query: str) -> str:
    """A fact about a place."""
    return FACTS.get(query.strip(), "Nothing found.")


REGISTRY = ToolRegistry([lookup])


def original(topic: str) -> Trace:
    """A finished ReAct run that looks ``topic`` up once and answers from what it read."""
    model = ScriptedModel([f"Thought: look it up.\nAction: lookup\nAction Input: {topic}",
                           f"Thought: it says so.\nFinal Answer: {ANSWERS[topic]}"])
    trace = Trace("react", f"What does the record say about the {topic}?")
    for event in react(trace.question, model, REGISTRY, CONFIG):
        trace.add(event)
    trace.finish()
    model.assert_done()
    return trace


def last_observation(request: Request) -> str:
    text = next(m["content"] for m in reversed(request.messages) if "Observation" in str(m.get("content")))
    return str(text).rsplit("Observation:", 1)[-1]


READ = {"hall": r"\d+", "tower": r"\d{4}", "landing": r"\d+ July \d{4}",
        "bridge": r"(?<=designed by )[A-Z]\w+ [A-Z]\w+"}


def follows(topic: str):
    """A model that answers from the observation it was given (the claim's words, read off it)."""
    def reply(request: Request) -> str:
        return "Final Answer: " + re.search(READ[topic], last_observation(request)).group()
    return reply


@pytest.mark.parametrize(("topic", "kind", "old", "new"), [
    ("hall", "number", "396", "515"),
    ("tower", "year", "1889", "1896"),
    ("landing", "date", "20 July 1969", "20 July 1972"),
    ("bridge", "name", "John Fowler", "Forth Bridge"),
])
def test_each_kind_of_change_is_stated_and_the_rerun_sees_it(topic, kind, old, new):
    trace = original(topic)
    change = plan_change(trace)
    assert (change.kind, change.old, change.new, change.step) == (kind, old, new, 0)
    assert change.edited == FACTS[topic].replace(old, new)
    assert f"{old} → {new}" in change.line()
    _, rerun, verdict = test_evidence(trace, ScriptedModel([follows(topic)]), REGISTRY, CONFIG)
    edited = [e for _, e in rerun.events if isinstance(e, Observation)]
    assert edited[0].output == change.edited  # the rerun's panel shows the changed observation
    assert any(isinstance(e, Forked) and e.edited == change.edited for _, e in rerun.events)
    assert verdict.outcome == "followed"
    assert verdict.line == f"the answer followed the evidence ({ANSWERS[topic]} → {new})"


def test_a_model_that_answers_from_its_prompt_ignores_the_evidence():
    _, _, verdict = test_evidence(original("hall"), ScriptedModel(["Final Answer: 396"]), REGISTRY, CONFIG)
    assert (verdict.outcome, verdict.line) == ("ignored", "the answer ignored the changed evidence (still 396)")


def test_a_third_value_is_a_change_not_to_the_evidence():
    _, _, verdict = test_evidence(original("hall"), ScriptedModel(["Final Answer: 410"]), REGISTRY, CONFIG)
    assert verdict.line == "the answer changed, but not to the evidence (396 → 410)"
    assert verdict.answer == "410"


def test_a_mode_that_repeats_the_call_looked_it_up_again():
    model = ScriptedModel(["Thought: that looks wrong.\nAction: lookup\nAction Input: hall",
                           "Final Answer: 396"])
    _, _, verdict = test_evidence(original("hall"), model, REGISTRY, CONFIG)
    assert (verdict.outcome, verdict.line) == ("looked_up", "the mode looked it up again")


def test_a_claim_can_be_named_and_an_unknown_one_is_one_line():
    trace = original("bridge")
    assert plan_change(trace, "john  fowler").old == "John Fowler"
    with pytest.raises(EvidenceError, match="no backed claim 'Gustave Eiffel'"):
        plan_change(trace, "Gustave Eiffel")


def test_an_answer_without_a_backed_claim_is_refused_in_one_line():
    model = ScriptedModel(["Thought: I know it.\nFinal Answer: 17"])
    trace = Trace("react", "How many?")
    for event in react(trace.question, model, REGISTRY, CONFIG):
        trace.add(event)
    with pytest.raises(EvidenceError, match="no claim of this answer is backed"):
        plan_change(trace)
    trace = Trace("react", "How many?")
    with pytest.raises(EvidenceError, match="no answer"):
        plan_change(trace)


def test_the_exports_block_reads_as_one_line():
    change = plan_change(original("hall"))
    rerun = Trace("react", "q")
    verdict = judge(change, rerun)  # no answer at all: not the evidence
    assert verdict.line == "the answer changed, but not to the evidence (396 → no answer)"
    block = {"change": change.to_dict(), "verdict": verdict.to_dict()}
    assert verdict_line(block) == f"Evidence test: 396 → 515 — {verdict.line}"
    assert verdict_line(None) == verdict_line({"change": "x"}) == ""


def test_a_name_with_no_other_name_in_the_run_takes_one_of_the_questions_kind():
    FACTS["ruler"] = "Queen Victoria ruled for 63 years."
    ANSWERS["ruler"] = "Queen Victoria"
    try:
        trace = original("ruler")
        trace.question = "Who ruled, says the record about the ruler?"
        change = plan_change(trace)
    finally:
        del FACTS["ruler"], ANSWERS["ruler"]
    assert (change.kind, change.old, change.new) == ("name", "Queen Victoria", "Ada Lovelace")
    assert change.edited == "Ada Lovelace ruled for 63 years."


@pytest.mark.parametrize(("written", "moved"), [("8,849", "11,504"), ("2.5", "3.2"), ("0", "5"), ("12", "16")])
def test_a_number_keeps_its_form(written, moved):
    from agents.evidence import _moved_number

    assert _moved_number(written) == moved


def test_a_bad_block_reads_as_one_line():
    from agents.evidence import Change, Verdict

    change = plan_change(original("hall"))
    assert Change.from_dict(change.to_dict()) == change
    for bad in (None, {**change.to_dict(), "kind": "quote"}, {**change.to_dict(), "step": -1}):
        with pytest.raises(EvidenceError):
            Change.from_dict(bad)
    with pytest.raises(EvidenceError, match="one of followed"):
        Verdict.from_dict({"outcome": "maybe", "line": "x"})
