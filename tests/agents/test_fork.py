"""Fork: the rebuilt conversation equals the original byte for byte; an edit reaches the model and is recorded."""

from __future__ import annotations

import json
import time

import pytest

from agents.events import FinalAnswer, Forked, Observation, Paused, Usage
from agents.fork import fork, start_fork
from agents.llm.scripted import ScriptedModel, ScriptedReply
from agents.modes import RunConfig, act_only, react, think_only
from agents.trace import Trace
from tools.registry import ToolRegistry, tool


@tool
def calculate(expression: str) -> str:
    """Add integers written as a+b."""
    return str(sum(int(x) for x in expression.replace(" ", "").split("+")))


@tool
def lookup(query: str) -> str:
    """Where a river flows."""
    return f"The {query} flows into the North Sea."


REGISTRY = ToolRegistry([calculate, lookup])
MODES = {"act": act_only, "react": react}

TEXT_SCRIPT = [
    "Thought: add first.\nAction: calculate\nAction Input: 1+1",
    "I will just think about it.",  # a parse error: the nudge is part of the conversation
    "Thought: again.\nAction: calculate\nAction Input: 1+1",  # a repeat: answered from memory
    "Thought: the river.\nAction: lookup\nAction Input: Rhine\nObservation: hallucinated",  # cut client-side
    "Thought: done.\nFinal Answer: the North Sea",
]
TOOLS_SCRIPT = [
    ScriptedReply("I add and look up.",
                  tool_calls=(("calculate", {"expression": "1+1"}), ("lookup", '{"query":  "Rhine"}'))),
    ScriptedReply("Again.", tool_calls=(("calculate", {"expression": "1+1"}),)),
    ScriptedReply("", tool_calls=(("lookup", {"query": "Elbe"}),)),
    ScriptedReply("Final Answer: the North Sea"),
]
SCRIPTS = {"text": TEXT_SCRIPT, "tools": TOOLS_SCRIPT}


def run(mode: str, protocol: str, steps: list) -> tuple[Trace, ScriptedModel]:
    model = ScriptedModel(list(steps))
    trace = Trace(mode, "Where does the Rhine flow?")
    for event in MODES[mode](trace.question, model, REGISTRY, RunConfig(protocol=protocol, max_steps=6)):
        trace.add(event)
    model.assert_done()
    return trace, model


def run_fork(trace: Trace, step: int, text: str, steps: list, protocol: str) -> tuple[Trace, ScriptedModel]:
    model = ScriptedModel(list(steps))
    forked = Trace(trace.mode, trace.question)
    for event in fork(trace, step, text, model, REGISTRY, RunConfig(protocol=protocol, max_steps=6)):
        forked.add(event)
    return forked, model


def same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def calls_before(trace: Trace, step: int) -> int:
    """How many model calls the original made up to and including the reply holding observation ``step``."""
    seen, calls = -1, 0
    for _, event in trace.events:
        if isinstance(event, Usage):
            if seen >= step:
                return calls
            calls += 1
        elif isinstance(event, Observation):
            seen += 1
    return calls


@pytest.mark.parametrize("protocol", ["text", "tools"])
@pytest.mark.parametrize("mode", ["act", "react"])
def test_fork_without_edit_rebuilds_the_messages_byte_for_byte(mode, protocol):
    script = SCRIPTS[protocol]
    original, model = run(mode, protocol, script)
    for step in range(len(original.of(Observation))):
        k = calls_before(original, step)
        forked, live = run_fork(original, step, original.of(Observation)[step].output, script[k:], protocol)
        live.assert_done()
        assert len(live.requests) == len(model.requests) - k
        for sent, again in zip(model.requests[k:], live.requests, strict=True):
            assert same(sent.messages, again.messages) and sent.stop == again.stop and same(sent.tools, again.tools)
        assert forked.answer == original.answer == "the North Sea"
        assert forked.of(Forked) == [Forked(step, original.of(Observation)[step].output,
                                            original.of(Observation)[step].output)]


@pytest.mark.parametrize("protocol", ["text", "tools"])
@pytest.mark.parametrize("mode", ["act", "react"])
def test_an_edited_observation_reaches_the_model_and_the_fork_is_recorded(mode, protocol):
    original, _ = run(mode, protocol, SCRIPTS[protocol])
    step = len(original.of(Observation)) - 1  # the last lookup
    edited = "The Rhine flows into the Baltic Sea."
    forked, live = run_fork(original, step, edited, ["Final Answer: the Baltic Sea"], protocol)
    live.assert_done()
    last = live.requests[0].messages[-1]
    assert edited in last["content"] and ("tool_call_id" in last) == (protocol == "tools")
    assert forked.answer == "the Baltic Sea" and original.answer == "the North Sea"
    assert forked.of(Forked) == [Forked(step, original.of(Observation)[step].output, edited)]
    assert forked.of(Observation)[step].output == edited
    assert "edited by the teacher" in forked.to_markdown()

    # Exported and loaded again, the fork can itself be forked: here without an edit, at the same step.
    loaded = Trace.from_dict(json.loads(forked.to_json()))
    again, live2 = run_fork(loaded, step, edited, ["Final Answer: the Baltic Sea"], protocol)
    assert same(live2.requests[0].messages, live.requests[0].messages)
    assert again.answer == "the Baltic Sea" and len(again.of(Forked)) == 2


def test_a_repeat_after_the_fork_is_answered_from_the_edited_memory():
    original, _ = run("react", "text", TEXT_SCRIPT)
    repeat = "Thought: once more.\nAction: calculate\nAction Input: 1+1"
    forked, live = run_fork(original, 0, "11", [repeat, "Final Answer: 11"], "text")
    assert "11" in live.requests[1].messages[-1]["content"]  # "you already called it: 11"
    assert forked.of(Observation)[-1].is_error


def test_think_only_fork_asks_for_the_answer_after_the_edited_reasoning():
    model = ScriptedModel(["Thought: 17 × 23 = 391, plus 5.\nFinal Answer: 396"])
    trace = Trace("think", "17 × 23 + 5?")
    for event in think_only(trace.question, model, REGISTRY, RunConfig()):
        trace.add(event)
    live = ScriptedModel(["Final Answer: 400"])
    forked = Trace("think", trace.question)
    for event in fork(trace, 0, "17 × 23 = 395, plus 5.", live, REGISTRY, RunConfig()):
        forked.add(event)
    live.assert_done()
    messages = live.requests[0].messages
    assert same(messages[:2], model.requests[0].messages)
    assert messages[2] == {"role": "assistant", "content": "17 × 23 = 395, plus 5."} and messages[3]["role"] == "user"
    assert forked.answer == "400" and not forked.forced
    assert forked.of(Forked) == [Forked(0, "17 × 23 = 391, plus 5.", "17 × 23 = 395, plus 5.")]


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: Trace("cot_sc", t.question, t.events), "hybrid"),
    (lambda t: Trace.from_dict({**t.to_dict(), "events": [
        {k: v for k, v in e.items() if k not in ("reply", "tool_calls")} for e in t.to_dict()["events"]]}),
     "saved before"),
])
def test_what_cannot_be_forked_says_why_before_any_call(change, message):
    original, _ = run("react", "text", TEXT_SCRIPT)
    with pytest.raises(ValueError, match=message):
        fork(change(original), 0, "x", ScriptedModel([]), REGISTRY, RunConfig())


def test_bad_step_or_protocol_is_a_value_error():
    original, _ = run("react", "text", TEXT_SCRIPT)
    with pytest.raises(ValueError, match="no observation 9"):
        fork(original, 8, "x", ScriptedModel([]), REGISTRY, RunConfig())
    with pytest.raises(ValueError, match="same protocol"):
        fork(original, 0, "x", ScriptedModel([]), REGISTRY, RunConfig(protocol="tools"))
    with pytest.raises(ValueError, match="max_steps"):
        fork(original, 2, "x", ScriptedModel([]), REGISTRY, RunConfig(max_steps=2))
    assert original.of(FinalAnswer)


def test_start_fork_is_a_run_to_poll_step_and_close():
    """The UI's way in: a started one-mode ComparisonRun, stepping from the first live step on."""
    original, _ = run("react", "text", TEXT_SCRIPT)
    live = ScriptedModel(["Thought: check.\nAction: calculate\nAction Input: 2+2", "Final Answer: 4"])
    forked = Trace("react", original.question)
    handle = start_fork(original, 0, "3", registry=REGISTRY, config=RunConfig(max_steps=6),
                        model_factory=lambda: live, stepping=True)
    try:
        deadline = time.monotonic() + 10
        while not handle.waiting_for_step and time.monotonic() < deadline:
            if (item := handle.poll(timeout=0.02)) is not None:
                forked.add(item[1])
        assert handle.paused == ["react"] and len(live.requests) == 1
        while (item := handle.poll(timeout=0.02)) is not None:
            forked.add(item[1])
        assert forked.of(Paused) == [Paused(2)]  # numbered in the conversation: the replayed step counts
        handle.resume()
        while (item := handle.poll(timeout=5)) is not None:
            forked.add(item[1])
    finally:
        handle.close()
    live.assert_done()
    assert forked.answer == "4" and forked.of(Forked)[0].edited == "3"
    assert live.requests[0].messages[-1] == {"role": "user", "content": "Observation: 3"}


def test_an_edited_tool_error_is_no_longer_an_error_and_a_bad_step_type_is_refused():
    broken = ["Action: calculate\nAction Input: one+1", "Final Answer: 2"]
    original, _ = run("act", "text", broken)
    assert original.of(Observation)[0].is_error
    forked, _ = run_fork(original, 0, "2", ["Final Answer: 2"], "text")
    assert not forked.of(Observation)[0].is_error and forked.of(Observation)[0].output == "2"
    for bad in ("0", True, 0.5):
        with pytest.raises(ValueError, match="whole number"):
            fork(original, bad, "x", ScriptedModel([]), REGISTRY, RunConfig())


@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_over_http_the_answer_follows_the_edited_observation(protocol):
    """The real client against the stub server, whose toy model answers with whatever the calculator said."""
    from agents.comparison import compare
    from agents.llm.hf import HFInferenceModel
    from agents.llm.settings import LLMSettings
    from agents.llm.stub_server import StubLLMServer
    from tools.calculator import calculate as real_calculate

    registry, config = ToolRegistry([real_calculate]), RunConfig(protocol=protocol)
    with StubLLMServer() as server:
        settings = LLMSettings(base_url=server.url, model="stub", timeout_s=10)
        factory = lambda: HFInferenceModel(settings)  # noqa: E731
        original = compare("What is 17 * 23 + 5?", ["react"], model_factory=factory, registry=registry,
                           config=config)["react"]
        assert "396" in original.answer
        loaded = Trace.from_dict(json.loads(original.to_json()))  # as a teacher would, from an export
        handle = start_fork(loaded, 0, "400", registry=registry, config=config, model_factory=factory)
        forked = Trace("react", loaded.question)
        try:
            while (item := handle.poll(timeout=10)) is not None:
                forked.add(item[1])
        finally:
            handle.close()
        sent = server.requests[-1].body["messages"]
    assert "400" in forked.answer and forked.error is None and forked.of(Forked)[0].original == "396"
    assert sent[-1]["content"] in ("Observation: 400", "400")
    assert forked.llm_calls == original.llm_calls  # the replayed call keeps its recorded usage; one live call


def test_every_mode_a_fork_is_offered_for_replays_under_its_fork_id():
    """forkable_modes() and forked_mode() read the same rule (ModeSpec.forkable): an offered fork always replays."""
    from agents.fork import forkable_modes
    from agents.modes.registry import fork_id, forked_mode, list_modes

    for spec in list_modes():
        assert (forked_mode(fork_id(spec.id, 1)) == (spec.id, 2)) == spec.forkable, spec.id
    assert {s.id for s in forkable_modes()} == {s.id for s in list_modes() if s.forkable} >= {"think", "act", "react"}


def codeact_step(thought: str, program: str) -> str:
    return f"Thought: {thought}\n<code>\n{program}\n</code>"


CODEACT_SCRIPT = [
    codeact_step("add with the tool.", "x = int(calculate('1+1'))\nprint(x)"),
    codeact_step("ten times it.", "print(x * 10)"),
    "Thought: done.\nFinal Answer: 20",
]


def test_codeact_forks_at_a_programs_output_and_its_session_keeps_the_earlier_variables():
    """A CodeAct fork edits what a program printed; the programs before the edit run again, unseen, so a live
    program after it still finds their variables, while the model reads the teacher's text."""
    from agents.modes.codeact import codeact

    model = ScriptedModel(list(CODEACT_SCRIPT))
    original = Trace("codeact", "What is ten times 1+1?")
    for event in codeact(original.question, model, REGISTRY, RunConfig(max_steps=4)):
        original.add(event)
    model.assert_done()
    assert [s.observation for s in original.steps] == ["2", "20"] and original.answer == "20"
    live = ScriptedModel([codeact_step("ten times the edited value.", "print(x * 10)"), "Final Answer: 20"])
    forked = Trace("codeact", original.question)
    for event in fork(original, 0, "3", live, REGISTRY, RunConfig(max_steps=4)):
        forked.add(event)
    live.assert_done()
    sent = live.requests[0].messages
    assert sent[:3] == model.requests[1].messages[:3] and sent[3]["content"].endswith("3")  # the edit, as sent
    assert forked.of(Forked) == [Forked(0, "2", "3")]
    assert [s.observation for s in forked.steps] == ["3", "20"]  # x = 2 lived on in the rebuilt session
    assert forked.answer == "20" and forked.error is None
    with pytest.raises(ValueError, match="no observation 3"):
        fork(original, 2, "x", ScriptedModel([]), REGISTRY, RunConfig(max_steps=4))  # a call inside is no step
