"""Reflexion against ScriptedModel: every branch of trial → verdict → reflection, and the loops' one hook (notes)."""

from __future__ import annotations

import json

import pytest

from agents import prompts
from agents.events import Evaluation, FinalAnswer, LLMError, Reflection, Trial
from agents.fork import fork, forkable_modes
from agents.llm.base import LLMFailure
from agents.llm.scripted import Request, ScriptedModel, ScriptedReply
from agents.modes import RunConfig, react
from agents.modes.reflexion import MEMORY, memory_note, read_check, reflexion
from agents.modes.registry import ModeSpec, get_mode, registered, run_mode
from agents.modes.text_protocol import text_loop
from agents.modes.tool_protocol import tools_loop
from agents.trace import Trace
from tools.registry import ToolRegistry, tool


@tool
def calculate(expression: str) -> str:
    """Add integers written as a+b."""
    return str(sum(int(x) for x in expression.replace(" ", "").split("+")))


REGISTRY = ToolRegistry([calculate])
Q = "What is the capital of France?"
ADD = "Thought: add them.\nAction: calculate\nAction Input: 1+2"


def run(model: ScriptedModel, question: str = Q, **options) -> Trace:
    config = RunConfig(**options.pop("config", {}))
    trace = Trace("reflexion", question)
    for event in reflexion(question, model, REGISTRY, config, **options):
        trace.add(event)
    model.assert_done()  # no call more or fewer than scripted
    return trace


def verdicts(trace: Trace) -> list[tuple[int, bool, str]]:
    return [(t["n"], t["correct"], t["by"]) for t in trace.trials]


def sent(request: Request) -> str:
    return json.dumps(request.messages, ensure_ascii=False)


# --- graded against the expected answer (the paper's exact match) ------------------------------------------


def test_a_correct_first_trial_is_graded_by_exact_match_without_a_reflection():
    model = ScriptedModel([ADD, "Thought: done.\nFinal Answer: 3"])
    trace = run(model, "What is 1+2?", expected="3")
    assert trace.answer == "3" and not trace.forced and trace.error is None
    assert trace.of(Trial) == [Trial(1, 3)] and not trace.of(Reflection)
    (verdict,) = trace.of(Evaluation)
    assert verdict == Evaluation(True, "expected", verdict.reason, "3")
    assert verdict.label == "graded against the expected answer"
    assert len(trace.of(FinalAnswer)) == 1 and trace.llm_calls == 2 and len(trace.steps) == 1
    # trial 1 is plain ReAct: its first request is ReAct's, byte for byte
    plain = ScriptedModel([ADD, "Final Answer: 3"])
    list(react("What is 1+2?", plain, REGISTRY, RunConfig()))
    assert model.requests[0].messages == plain.requests[0].messages


def test_a_wrong_trial_then_a_right_one_the_reflection_reaches_the_second_trial():
    reflection = "I guessed Lyon without looking anything up. Next time I will check which city is the capital."
    model = ScriptedModel(["Thought: I know this.\nFinal Answer: Lyon", reflection, "Final Answer: Paris"])
    trace = run(model, expected="Paris")
    assert verdicts(trace) == [(1, False, "expected"), (2, True, "expected")]
    assert trace.of(Reflection) == [Reflection(reflection)] and trace.trials[0]["reflection"] == reflection
    assert trace.trials[0]["answer"] == "Lyon" and trace.answer == "Paris"
    assert [e.text for e in trace.of(FinalAnswer)] == ["Paris"]  # a trial's answer is held back; the run has one
    assert trace.llm_calls == 3  # two trials and the reflection: every call counted
    reflect, second = model.requests[1], model.requests[2]
    assert "Paris" not in sent(reflect)  # the model never sees the expected answer
    assert "Final Answer: Lyon" in reflect.messages[-1]["content"] and "INCORRECT" in reflect.messages[-1]["content"]
    assert second.messages[:2] == model.requests[0].messages[:2]  # the same ReAct prompt and question
    assert second.messages[2] == {"role": "user", "content": memory_note([reflection])}
    assert reflection in second.messages[2]["content"] and len(second.messages) == 3


def test_all_trials_wrong_the_memory_keeps_the_last_three_reflections():
    steps: list = []
    for n in range(1, 6):
        steps.append(f"Final Answer: wrong {n}")
        if n < 5:
            steps.append(f"Reflection: plan number {n}.")
    model = ScriptedModel(steps)
    trace = run(model, expected="Paris", trials=5)
    assert verdicts(trace) == [(n, False, "expected") for n in range(1, 6)]
    assert trace.answer == "wrong 5" and trace.error is None
    assert [r.text for r in trace.of(Reflection)] == [f"plan number {n}." for n in range(1, 5)]  # label tidied
    assert trace.trials[-1]["reflection"] is None  # no trial after the last: no reflection call
    assert trace.llm_calls == 9
    trial_requests = [r for r in model.requests if r.stop]  # ReAct calls stop at "Observation:"; reflections do not
    assert len(trial_requests) == 5 and len(trial_requests[0].messages) == 2
    fourth, fifth = trial_requests[3].messages[2]["content"], trial_requests[4].messages[2]["content"]
    assert MEMORY == 3
    assert [f"plan number {n}." in fourth for n in range(1, 5)] == [True, True, True, False]
    assert [f"plan number {n}." in fifth for n in range(1, 5)] == [False, True, True, True]
    markdown = trace.to_markdown()
    assert "Trial 5 of 5" in markdown and "graded against the expected answer" in markdown
    assert "**Reflection:** plan number 4." in markdown and "5 trials ·" in markdown


def test_a_forced_answer_is_graded_and_the_reflection_is_told_the_steps_ran_out():
    model = ScriptedModel([ADD, "Final Answer: 4", "Use fewer steps.", ADD, "Final Answer: 3"])
    trace = run(model, "What is 1+2?", expected="3", trials=2, config={"max_steps": 1})
    assert verdicts(trace) == [(1, False, "expected"), (2, True, "expected")]
    assert trace.answer == "3" and trace.forced  # the last trial's answer, forced too
    assert "ran out of steps" in model.requests[2].messages[-1]["content"]
    assert len(trace.steps) == 2 and trace.tool_calls == 2


# --- without an expected answer: the model's own check ------------------------------------------------------


def test_self_check_yes_stops_after_one_trial():
    model = ScriptedModel([ADD, "Final Answer: 3", "Correct: yes\nWhy: the calculator added 1 and 2."])
    trace = run(model, "What is 1+2?")
    (verdict,) = trace.of(Evaluation)
    assert verdict == Evaluation(True, "self", "the calculator added 1 and 2.", "3")
    assert verdict.label == "the model's own judgement"
    assert trace.answer == "3" and trace.llm_calls == 3 and not trace.of(Reflection)
    check = model.requests[2].messages[-1]["content"]
    assert "Answer given: 3" in check and "Observation: 3" in check and model.requests[2].stop is None


def test_self_check_no_leads_to_a_reflection_and_another_trial():
    model = ScriptedModel(["Final Answer: Lyon", "Correct: no\nWhy: Lyon is not the capital.",
                           "I answered from memory. Next time I will search.", "Final Answer: Paris",
                           "Correct: yes\nWhy: Paris is the capital."])
    trace = run(model, trials=2)
    assert verdicts(trace) == [(1, False, "self"), (2, True, "self")]
    reflection_prompt = model.requests[2].messages[-1]["content"]
    assert "Its own check judged the answer wrong: Lyon is not the capital." in reflection_prompt
    assert "I answered from memory" in model.requests[3].messages[2]["content"]
    assert trace.answer == "Paris" and trace.llm_calls == 5
    assert "the model's own judgement" in trace.to_markdown()


@pytest.mark.parametrize(("reply", "correct", "why"), [
    ("Correct: yes\nWhy: it adds up.", True, "it adds up."),
    ("**Correct:** No\n**Why:** wrong city.", False, "wrong city."),
    ("Yes.", True, "it says the answer is right"),
    ("I am not sure about this one.", False, "its check gave no clear yes or no: I am not sure about this one."),
])
def test_reading_the_check_only_a_clear_yes_confirms(reply, correct, why):
    assert read_check(reply) == (correct, why)


# --- failures ---------------------------------------------------------------------------------------------


def test_a_model_error_mid_trial_ends_the_run_with_that_error():
    model = ScriptedModel(["Final Answer: Lyon", "Search next time.", LLMFailure("the server closed the connection")])
    trace = run(model, expected="Paris")
    assert trace.of(Trial) == [Trial(1, 3), Trial(2, 3)] and verdicts(trace)[0] == (1, False, "expected")
    assert trace.answer is None and trace.error == "the server closed the connection"
    assert not trace.of(FinalAnswer) and trace.llm_calls == 2


def test_a_failed_check_or_reflection_call_ends_the_run_too():
    trace = run(ScriptedModel(["Final Answer: Lyon", LLMFailure("rate limited")]))
    assert trace.error == "rate limited" and trace.answer is None and not trace.of(Evaluation)
    trace = run(ScriptedModel(["Final Answer: Lyon", LLMFailure("rate limited")]), expected="Paris")
    assert trace.error == "rate limited" and not trace.of(Reflection) and len(trace.of(Evaluation)) == 1


def test_options_are_checked_and_passed_by_the_registry():
    spec = get_mode("reflexion")
    assert (spec.placement, set(spec.options), spec.uses_tools) == ("more", {"trials", "expected"}, True)
    assert [(o.name, o.low, o.high, o.default) for o in spec.run_options] == [("trials", 1, 10, 3)]
    assert spec not in forkable_modes()
    for bad in (0, 11, 2.5, True):
        with pytest.raises(ValueError, match="from 1 to 10"):
            list(reflexion(Q, ScriptedModel([]), REGISTRY, RunConfig(), trials=bad))
    model = ScriptedModel(["Final Answer: Paris"])
    events = list(run_mode("reflexion", Q, model, REGISTRY, RunConfig(), trials=1, expected="  paris ", sc_n=3))
    assert [e for e in events if isinstance(e, Evaluation)][0].correct and isinstance(events[-1], FinalAnswer)


def test_a_reflexion_trace_round_trips_and_cannot_be_forked():
    trace = run(ScriptedModel([ADD, "Final Answer: 4", "Add again.", "Final Answer: 3"]), "What is 1+2?",
                expected="3", trials=2)
    again = Trace.from_dict(json.loads(trace.to_json()))
    assert again.events == trace.events and again.to_dict() == trace.to_dict()
    assert again.summary()["trials"][0] == {"n": 1, "answer": "4", "correct": False, "by": "expected",
                                            "reason": "not the same number as the expected answer",
                                            "reflection": "Add again."}
    with pytest.raises(ValueError, match=r"^only the modes .* can be forked; 'reflexion' is a hybrid of several runs"):
        fork(trace, 0, "5", ScriptedModel([]), REGISTRY, RunConfig())


# --- the hook: notes, honoured alike by both protocols --------------------------------------------------------


@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_both_loops_place_notes_after_the_question(protocol):
    loop = tools_loop if protocol == "tools" else text_loop
    config = RunConfig(protocol=protocol)
    plain, noted = ScriptedModel(["Final Answer: 3"]), ScriptedModel(["Final Answer: 3"])
    list(loop("What is 1+2?", plain, REGISTRY, config, thoughts=True, prompt="react"))
    list(loop("What is 1+2?", noted, REGISTRY, config, thoughts=True, prompt="react", notes=["Note A", "  ", "Note B"]))
    base = plain.requests[0].messages
    assert base == [{"role": "system", "content": prompts.system_prompt("react", REGISTRY, protocol=protocol)},
                    {"role": "user", "content": "Question: What is 1+2?"}]
    assert noted.requests[0].messages == [*base, {"role": "user", "content": "Note A"},
                                          {"role": "user", "content": "Note B"}]  # a blank note is left out
    assert noted.requests[0].tools == plain.requests[0].tools


def test_reflexion_over_native_tool_calls_gives_the_note_to_the_next_trial():
    call = ScriptedReply("I add.", tool_calls=(("calculate", {"expression": "1+1"}),))
    model = ScriptedModel([call, "Final Answer: 2", "I added the wrong numbers; add 1 and 2.", call,
                           ScriptedReply("", tool_calls=(("calculate", {"expression": "1+2"}),)), "Final Answer: 3"])
    trace = run(model, "What is 1+2?", expected="3", config={"protocol": "tools"})
    assert verdicts(trace) == [(1, False, "expected"), (2, True, "expected")] and trace.answer == "3"
    second = model.requests[3]
    assert second.tools and second.messages[2]["content"] == memory_note(["I added the wrong numbers; add 1 and 2."])
    assert "Action: calculate[" in model.requests[2].messages[-1]["content"]  # the transcript shows the native calls
    assert trace.tool_calls == 3 and trace.llm_calls == 6


@pytest.fixture
def noted_mode():
    """A forkable ReAct that always adds the same note: the fork calls it again, so the note is rebuilt."""

    def noted(question, model, registry, config, *, runner=None):
        return react(question, model, registry, config, runner=runner, notes=["Use the calculator for sums."])

    with registered(ModeSpec("noted_toy", "Noted toy", noted, prompt="react", uses_tools=True,
                             options=("runner",))) as spec:
        yield spec


@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_a_fork_of_a_run_with_a_note_rebuilds_its_messages_byte_for_byte(noted_mode, protocol):
    first = ADD if protocol == "text" else ScriptedReply("I add.", tool_calls=(("calculate", {"expression": "1+2"}),))
    config = RunConfig(protocol=protocol, max_steps=3)
    model = ScriptedModel([first, "Final Answer: 3"])
    trace = Trace(noted_mode.id, "What is 1+2?")
    for event in noted_mode.run(trace.question, model, REGISTRY, config):
        trace.add(event)
    live = ScriptedModel(["Final Answer: 3"])
    forked = Trace(trace.mode, trace.question)
    for event in fork(trace, 0, "3", live, REGISTRY, config):
        forked.add(event)
    live.assert_done()
    assert live.requests[0].messages == model.requests[1].messages  # the note included
    assert model.requests[0].messages[2] == {"role": "user", "content": "Use the calculator for sums."}
    assert forked.answer == "3"


def test_the_first_error_line_of_a_failed_trial_is_the_runs():
    model = ScriptedModel([LLMFailure("No model is configured.")])
    trace = run(model)
    assert trace.error == "No model is configured." and trace.of(LLMError)[-1].message == trace.error
    assert trace.of(Trial) == [Trial(1, 3)]


def test_an_answer_that_echoes_the_reflections_is_no_answer_and_the_run_never_ends_on_musing():
    reflection = "I guessed Lyon without looking anything up. Next time I will check which city is the capital."
    musing = ("Final Answer: You've already answered the question correctly, but I'll add a bit more detail. "
              f"Reflections: - {reflection}")
    model = ScriptedModel(["Final Answer: Lyon", reflection, musing])
    trace = run(model, expected="Paris", trials=2)
    assert verdicts(trace) == [(1, False, "expected"), (2, False, "expected")]
    assert trace.trials[1]["answer"] is None and trace.of(Evaluation)[1].reason == "no answer to grade"
    assert trace.answer == "" and "Reflections" not in (trace.answer or "")
