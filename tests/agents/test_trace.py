"""Trace: derived metrics, exact JSON round trip (replay depends on it), markdown; and mode isolation."""

from __future__ import annotations

import json
import threading

import pytest

from agents.comparison import compare, run_comparison, validate_question
from agents.events import (
    Action,
    FinalAnswer,
    Forked,
    LLMError,
    Observation,
    ParseError,
    Paused,
    Resumed,
    Thought,
    TokenDelta,
    Usage,
    event_from_dict,
    event_to_dict,
)
from agents.llm.base import LLMFailure
from agents.llm.scripted import ScriptedModel
from agents.trace import Trace, metrics_line
from tools.registry import ToolRegistry, tool

EVENTS = [
    TokenDelta("Thought: look", "thought"),
    TokenDelta("hidden", "reasoning"),
    Usage(100, 20, 0.5),
    Thought("look it up"),
    Action("wikipedia_search", "Paris", "look it up"),
    Observation("wikipedia_search", "Paris is the capital of France.", False, 0.25, True),
    ParseError("Your reply had no Action", "garbage"),
    Usage(150, 10, 0.4, estimated=True),
    Action("calculate", {"expression": "2+2"}),
    Observation("calculate", "4", False, 0.001),
    Usage(160, 5, 0.3),
    FinalAnswer("Paris", forced=True),
]


def make_trace() -> Trace:
    trace = Trace("react", "Capital of France?")
    for i, event in enumerate(EVENTS):
        trace.add(event, t=i * 0.1)
    return trace


def test_derived_metrics():
    trace = make_trace()
    assert trace.answer == "Paris" and trace.forced and trace.error is None
    assert trace.llm_calls == 3 and trace.tool_calls == 2 and trace.parse_errors == 1
    assert (trace.prompt_tokens, trace.completion_tokens) == (410, 35) and trace.tokens_estimated
    steps = trace.steps
    assert [s.action for s in steps] == ["wikipedia_search", "calculate"]
    assert steps[0].thought == "look it up" and steps[0].cached and steps[1].input == {"expression": "2+2"}
    assert trace.elapsed_s == pytest.approx(1.1)
    line = metrics_line(trace)
    assert "2 steps" in line and "3 LLM calls" in line and "~410 in" in line and "forced answer" in line
    assert "1 format retry" in line


def test_json_round_trip_is_exact():
    trace = make_trace()
    data = json.loads(trace.to_json())
    again = Trace.from_dict(data)
    assert again.events == trace.events and again.to_dict() == trace.to_dict()
    assert data["summary"]["steps"][0] == {"thought": "look it up", "action": "wikipedia_search", "input": "Paris",
                                           "observation": "Paris is the capital of France.", "elapsed_s": 0.25}


def test_every_event_kind_round_trips():
    from agents.events import (
        EVENT_TYPES,
        Evaluation,
        Forked,
        Paused,
        Reflection,
        Resumed,
        Retry,
        Trial,
        Truncated,
        Waited,
        Waiting,
    )

    extra = [LLMError("boom"), LLMError("cut", "interrupted"), Waiting(), Retry("again"), Truncated("limit"),
             Waiting("the server closed this reply", "turn", learned=True),
             Waiting("retry 2 in 4.0 s", "backoff", seconds=4.0), Waiting("runs again", "turn", rerun=True,
                                                                        reason="busy"),
             Waited(3.25, "turn"), FinalAnswer("4", forced=True, why="the same reply twice"),
             Paused(2), Resumed(12.5), Forked(1, "the Rhine flows into the North Sea", "the Baltic"),
             Usage(5, 3, 0.1, reply="Thought: x\nAction: search", tool_calls=(("call_1", "search", '{"q": 1}'),)),
             Trial(2, 3), Evaluation(False, "expected", "not an exact match", "Paris"), Evaluation(True, "self"),
             Reflection("I should have searched for the river first.")]
    assert {e.kind for e in [*EVENTS, *extra]} == set(EVENT_TYPES)
    for event in [*EVENTS, *extra]:
        assert event_from_dict(json.loads(json.dumps(event_to_dict(event)))) == event
    with pytest.raises(ValueError):
        event_from_dict({"kind": "nope"})


def test_old_exports_load_and_new_fields_round_trip():
    """An export written before forking (no reply fields) still loads; a new one keeps them exactly."""
    old = {"kind": "usage", "prompt_tokens": 3, "completion_tokens": 2, "elapsed_s": 0.1, "estimated": False}
    assert event_from_dict(old) == Usage(3, 2, 0.1) and event_from_dict(old).reply is None
    trace = make_trace()
    trace.add(Usage(1, 1, 0.1, reply="", tool_calls=(("c1", "calculator", "{}"),)))
    trace.add(Paused(1))
    trace.add(Forked(0, "old", "new"))
    again = Trace.from_dict(json.loads(trace.to_json()))
    assert again.events == trace.events and again.to_dict() == trace.to_dict()
    assert "edited by the teacher" in again.to_markdown() and "Paused after step 1" in again.to_markdown()


def test_the_model_that_answered_is_written_only_when_a_server_named_it():
    """``Usage.model``: absent from the JSON of a run whose server named no model (its export keeps its shape),
    kept exactly when set; the trace's ``answered_by`` is the last named one."""
    assert "model" not in event_to_dict(Usage(1, 2, 0.1))
    named = Usage(1, 2, 0.1, model="qwen2.5:7b")
    assert event_to_dict(named)["model"] == "qwen2.5:7b" and event_from_dict(event_to_dict(named)) == named
    assert event_from_dict({"kind": "usage", "model": 42}).model is None  # a file's odd value names nothing
    trace = make_trace()
    assert trace.answered_by is None and '"model"' not in trace.to_json()
    trace.add(named)
    trace.add(Usage(1, 1, 0.1))
    again = Trace.from_dict(json.loads(trace.to_json()))
    assert again.events == trace.events and again.to_dict() == trace.to_dict() and again.answered_by == "qwen2.5:7b"


def test_codeact_flags_are_written_only_when_set_and_count_honestly():
    """A program (code) is a step, not a tool call; the calls it made (nested) are the tool calls."""
    assert event_to_dict(Action("calculate", "1")) == {"kind": "action", "tool": "calculate", "input": "1",
                                                       "thought": ""}
    assert event_from_dict({"kind": "observation", "tool": "t", "output": "o", "nested": "yes"}).nested is False
    trace = Trace("codeact", "q")
    for event in (Thought("Add."), Action("python", "print(calculate('1+1'))", "Add.", code=True),
                  Action("calculate", {"expression": "1+1"}, nested=True), Observation("calculate", "2", nested=True),
                  Action("calculate", {"expression": "1+2"}, nested=True),  # still waiting when the program ended
                  Observation("python", "2"), Action("calculate", "3"), Observation("calculate", "3")):
        trace.add(event)
    again = Trace.from_dict(json.loads(trace.to_json()))
    assert again.events == trace.events and again.to_dict() == trace.to_dict()
    assert trace.tool_calls == 2 and len(trace.steps) == 2
    program, plain = trace.steps
    assert (program.action, program.observation, [c.action for c in program.calls]) == ("python", "2", ["calculate"])
    assert plain.calls == () and "calls" not in plain.to_dict()


def test_time_spent_paused_is_left_out():
    trace = Trace("react", "q")
    trace.add(Paused(1))
    trace.add(Resumed(600.0))  # ten minutes of class discussion
    trace.finish()
    assert trace.elapsed_s < 1.0 and "0.0 s" in metrics_line(trace)


def test_markdown_shows_steps_and_answer():
    md = make_trace().to_markdown()
    assert "### ReAct" in md and "**Action 1:** `wikipedia_search`" in md
    assert "(cached)" in md and "**Final answer (forced):** Paris" in md and "hidden" not in md


def test_error_trace():
    trace = Trace("think", "q")
    trace.add(LLMError("rate-limited"))
    assert trace.error == "rate-limited" and trace.answer is None and "error" in metrics_line(trace)


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def test_one_failing_mode_leaves_the_others_running():
    replies = {"think": ["Final Answer: a"], "act": [LLMFailure("provider down")],
               "react": ["Action: echo\nAction Input: hi", "Final Answer: hi"]}
    made: list[ScriptedModel] = []
    lock = threading.Lock()

    def factory():
        with lock:  # one scripted model per run, in the order threads ask; route by the system prompt
            model = _RoutingModel(replies)
            made.append(model)
            return model

    traces = compare("q", model_factory=factory, registry=ToolRegistry([echo]))
    assert traces["think"].answer == "a" and traces["react"].answer == "hi"
    assert traces["act"].error == "provider down" and traces["act"].answer is None
    assert all(m.closed for m in made)


def test_factory_failure_and_internal_bug_are_contained():
    def factory():
        raise LLMFailure("No model is configured.")

    traces = compare("q", ["think", "react"], model_factory=factory, registry=ToolRegistry([]))
    assert all(t.error == "No model is configured." for t in traces.values())

    def buggy():
        return ScriptedModel([lambda request: 1 / 0])

    traces = compare("q", ["think"], model_factory=buggy, registry=ToolRegistry([]))
    assert traces["think"].error.startswith("internal error in think: ZeroDivisionError")


def test_bad_modes_and_questions():
    with pytest.raises(ValueError):
        list(run_comparison("q", ["nope"], model_factory=lambda: ScriptedModel([])))
    assert validate_question("  ") == "Please type a question first."
    assert "2,000" in validate_question("x" * 2001) and validate_question("ok?") is None


class _RoutingModel(ScriptedModel):
    """A ScriptedModel that picks its script from the mode's system prompt on the first call."""

    def __init__(self, replies: dict[str, list]) -> None:
        super().__init__(steps=[])
        self._replies = replies

    def stream(self, messages, **kwargs):
        if not self.steps:
            system = messages[0]["content"]
            mode = "think" if "without any tools" in system else ("act" if "no Thought" in system else "react")
            self.steps = list(self._replies[mode])
        return super().stream(messages, **kwargs)


def test_a_retry_that_succeeds_clears_the_error_but_keeps_the_cost():
    from agents.events import Retry

    trace = Trace("think", "q")
    for event in (Usage(10, 4, 0.1, estimated=True), LLMError("cut off", "interrupted"), Retry("again"),
                  Usage(10, 6, 0.1), FinalAnswer("4")):
        trace.add(event)
    assert trace.error is None and trace.answer == "4" and trace.llm_calls == 2 and trace.completion_tokens == 10
    again = Trace.from_dict(json.loads(trace.to_json()))
    assert again.events == trace.events and again.error is None


def test_think_only_counts_its_one_reasoning_step():
    from agents.llm.scripted import ScriptedModel
    from agents.modes import RunConfig, think_only
    from tools.registry import ToolRegistry

    trace = Trace("think", "What is 2+2?")
    for event in think_only("What is 2+2?", ScriptedModel(["2 and 2 make 4.\nFinal Answer: 4"]), ToolRegistry([]),
                            RunConfig()):
        trace.add(event)
    assert trace.steps == [] and trace.step_count == 1  # no Action → Observation round, one chain of thought
    assert metrics_line(trace).startswith("1 step · 1 LLM call · 0 tool calls")
    assert Trace("think").step_count == 0  # not run yet: nothing counted
    assert Trace("react", events=[(0.0, FinalAnswer("4"))]).step_count == 0  # a tool mode counts its rounds only
