"""The paper's hybrids against ScriptedModel: CoT-SC voting, ReAct → CoT-SC and CoT-SC → ReAct fallbacks."""

from __future__ import annotations

import pytest

from agents.evaluation.scoring import vote_key
from agents.events import FinalAnswer, LLMError, Thought
from agents.llm.base import LLMFailure
from agents.llm.scripted import ScriptedModel
from agents.modes import RunConfig
from agents.modes.hybrids import SC_TEMPERATURE, cot_sc, cot_sc_react, react_cot_sc
from agents.modes.registry import get_mode, mode_ids, run_mode
from agents.trace import Trace
from tools.registry import ToolRegistry, tool


@tool
def calculate(expression: str) -> str:
    """Add integers written as a+b."""
    return str(sum(int(x) for x in expression.replace(" ", "").split("+")))


REGISTRY = ToolRegistry([calculate])
Q = "What is 2+3?"


def cot(answer: str) -> str:
    return f"Let me think.\nFinal Answer: {answer}"


def run(fn, model: ScriptedModel, **cfg) -> Trace:
    trace = Trace(fn.__name__, Q)
    for event in fn(Q, model, REGISTRY, RunConfig(**cfg)):
        trace.add(event)
    model.assert_done()  # no call more or fewer than scripted
    return trace


def test_cot_sc_majority_over_normalised_answers_at_sampling_temperature():
    model = ScriptedModel([cot("Paris"), cot("Lyon"), cot("paris."), cot("The Paris"), cot("Rome")])
    trace = run(lambda *a: cot_sc(*a, n=5), model)
    assert trace.answer == "Paris" and not trace.forced and trace.error is None
    assert len(trace.of(FinalAnswer)) == 1  # samples' answers became thoughts
    assert all(r.temperature == SC_TEMPERATURE for r in model.requests)
    summary = trace.of(Thought)[-1].text
    assert "'Paris' ×3" in summary and "'Lyon' ×1" in summary and "3/5" in summary
    assert trace.llm_calls == 5  # tokens of every sample are counted


def test_cot_sc_ties_go_to_the_first_answer_and_failed_samples_are_missing_votes():
    model = ScriptedModel([LLMFailure("rate limited"), cot("B"), cot("A"), cot("A"), cot("B")])
    trace = run(lambda *a: cot_sc(*a, n=5), model)
    assert trace.answer == "B" and trace.error is None
    assert "Sample 1/5 gave no answer (rate limited)." in [t.text for t in trace.of(Thought)]
    assert "1 gave no answer" in trace.of(Thought)[-1].text


def test_cot_sc_with_no_answers_is_an_error():
    model = ScriptedModel([LLMFailure("down")] * 3)
    trace = run(lambda *a: cot_sc(*a, n=3), model)
    assert trace.answer is None and "none of the 3" in trace.error


def test_cot_sc_votes_with_the_datasets_key():
    model = ScriptedModel([cot("Supported"), cot("REFUTES"), cot("true")])
    trace = run(lambda *a: cot_sc(*a, n=3, key=lambda a: vote_key("fever", a)), model)
    assert trace.answer == "Supported"  # 'Supported' and 'true' are one vote: SUPPORTS ×2


def test_react_cot_sc_keeps_a_real_react_answer():
    model = ScriptedModel(["Thought: add.\nAction: calculate\nAction Input: 2+3", "Thought: done.\nFinal Answer: 5"])
    trace = run(react_cot_sc, model)
    assert trace.answer == "5" and not trace.forced and trace.tool_calls == 1


def test_react_cot_sc_falls_back_when_react_is_forced():
    model = ScriptedModel([
        "Thought: add.\nAction: calculate\nAction Input: 2+3",  # the only step (max_steps=1)
        "Final Answer: maybe 5",  # forced answer
        cot("5"), cot("5"), cot("6"),
    ])
    trace = run(lambda *a: react_cot_sc(*a, n=3), model, max_steps=1)
    assert trace.answer == "5" and not trace.forced and len(trace.of(FinalAnswer)) == 1
    assert any("was forced" in t.text and "Falling back to CoT-SC" in t.text for t in trace.of(Thought))
    assert [r.temperature for r in model.requests[2:]] == [SC_TEMPERATURE] * 3
    assert trace.tool_calls == 1 and trace.llm_calls == 5


def test_react_cot_sc_falls_back_when_react_fails():
    model = ScriptedModel([LLMFailure("502 from provider"), cot("5")])
    trace = run(lambda *a: react_cot_sc(*a, n=1), model)
    assert trace.answer == "5" and trace.error is None
    assert any("502 from provider" in t.text for t in trace.of(Thought))


def test_cot_sc_react_trusts_a_clear_majority_without_calling_react():
    model = ScriptedModel([cot("5"), cot("5"), cot("4"), cot("5"), cot("7")])
    trace = run(lambda *a: cot_sc_react(*a, n=5), model)  # ScriptedModel fails on any extra call
    assert trace.answer == "5" and trace.tool_calls == 0


def test_cot_sc_react_exactly_half_is_enough():
    model = ScriptedModel([cot("5"), cot("4"), cot("5"), cot("3")])
    assert run(lambda *a: cot_sc_react(*a, n=4), model).answer == "5"  # 2 votes is not fewer than 4/2


def test_cot_sc_react_backs_off_to_react_below_half():
    model = ScriptedModel([
        cot("4"), cot("5"), cot("6"), cot("4"), cot("7"),  # top answer '4' has 2 < 2.5 votes
        "Thought: compute.\nAction: calculate\nAction Input: 2+3", "Thought: ok.\nFinal Answer: 5",
    ])
    trace = run(lambda *a: cot_sc_react(*a, n=5), model)
    assert trace.answer == "5" and trace.tool_calls == 1 and len(trace.of(FinalAnswer)) == 1
    assert any("Only 2/5 samples agree" in t.text for t in trace.of(Thought))
    assert model.requests[-1].temperature == RunConfig().temperature  # ReAct runs at the configured temperature


def test_cot_sc_react_keeps_the_majority_when_react_fails():
    model = ScriptedModel([cot("4"), cot("5"), cot("6"), LLMFailure("timeout")])
    trace = run(lambda *a: cot_sc_react(*a, n=3), model)
    assert trace.answer == "4" and trace.forced and trace.error is None


def test_the_registry_runs_hybrids_with_their_options_and_rejects_unknown_modes():
    assert mode_ids("more")[:2] == ("react_cot_sc", "cot_sc_react") and mode_ids("benchmark")[0] == "cot_sc"
    model = ScriptedModel([cot("5"), cot("5")])
    events = list(run_mode("cot_sc", Q, model, REGISTRY, RunConfig(), sc_n=2, vote_key=str.lower))
    assert [e.text for e in events if isinstance(e, FinalAnswer)] == ["5"]
    model = ScriptedModel(["Final Answer: 5"])
    events = list(run_mode("think", Q, model, REGISTRY, RunConfig(), sc_n=2, vote_key=str.lower))  # ignored
    assert isinstance(events[-1], FinalAnswer)
    with pytest.raises(ValueError, match="unknown mode 'tot'; expected one of think, act, react"):
        run_mode("tot", Q, model, REGISTRY, RunConfig())
    with pytest.raises(ValueError, match="at least 1"):
        run_mode("cot_sc", Q, model, REGISTRY, RunConfig(), sc_n=0)


def test_hybrids_have_the_mode_signature_with_default_n():
    model = ScriptedModel([cot("5")] * 5)
    events = list(get_mode("cot_sc_react").run(Q, model, REGISTRY, RunConfig()))
    assert not any(isinstance(e, LLMError) for e in events) and model.unused == 0


def test_cot_sc_react_falls_back_to_react_when_its_samples_do_not_answer():
    """Five "I don't know"s are no majority: the hybrid backs off to ReAct, which computes the answer."""
    model = ScriptedModel([cot("I don't know.")] * 5 + [
        "Thought: compute it.\nAction: calculate\nAction Input: 2+3", "Thought: done.\nFinal Answer: 5"])
    trace = run(lambda *a: cot_sc_react(*a, n=5), model)
    assert trace.answer == "5" and not trace.forced and trace.error is None
    assert "None of the 5 samples gave an answer: backing off to ReAct." in [t.text for t in trace.of(Thought)]
    assert "Sample 1/5 gave no answer (it said \"I don't know.\")." in [t.text for t in trace.of(Thought)]


def test_cot_sc_alone_keeps_saying_it_does_not_know_rather_than_failing():
    trace = run(lambda *a: cot_sc(*a, n=3), ScriptedModel([cot("I don't know.")] * 3))
    assert trace.answer == "I don't know." and trace.error is None


def test_cot_sc_and_its_hybrids_count_the_same_samples_as_the_same_steps():
    """Each chain of thought is a step in CoT-SC alone and in both hybrids, as Think-only's one chain is."""
    alone = run(lambda *a: cot_sc(*a, n=5), ScriptedModel([cot("5")] * 5))
    trace = Trace("cot_sc", Q, list(alone.events))
    hybrid = run(lambda *a: cot_sc_react(*a, n=5), ScriptedModel([cot("5")] * 5))
    hybrid = Trace("cot_sc_react", Q, list(hybrid.events))
    assert trace.step_count == hybrid.step_count == 5
    fallback = run(lambda *a: react_cot_sc(*a, n=5), ScriptedModel(
        ["Thought: compute.\nAction: calculate\nAction Input: 2+3", "Final Answer: 5", *[cot("5")] * 5]),
        max_steps=1)  # the step budget forces ReAct's answer: CoT-SC takes over
    assert Trace("react_cot_sc", Q, list(fallback.events)).step_count == 1 + 5  # one ReAct round, five samples
