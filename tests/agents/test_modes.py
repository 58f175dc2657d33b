"""The three loops against ScriptedModel: every branch of the protocol, no network."""

from __future__ import annotations

import pytest

from agents.events import Action, FinalAnswer, LLMError, Observation, ParseError, Thought, TokenDelta, Usage
from agents.llm.base import LLMFailure
from agents.llm.scripted import ScriptedModel, ScriptedReply, ScriptMismatch
from agents.modes import RunConfig, act_only, react, think_only
from agents.trace import Trace
from tools.registry import ToolRegistry, tool


@tool
def calculate(expression: str) -> str:
    """Add integers written as a+b (a stand-in calculator for loop tests)."""
    return str(sum(int(x) for x in expression.replace(" ", "").split("+")))


@tool
def broken(query: str) -> str:
    """Always fails."""
    raise RuntimeError("backend exploded")


@tool
def long_text(query: str) -> str:
    """Returns a long text."""
    return "x" * 5000


REGISTRY = ToolRegistry([calculate, broken, long_text])


def run(mode, model, question="What is 2+2?", **cfg) -> Trace:
    trace = Trace(mode.__name__, question)
    for event in mode(question, model, REGISTRY, RunConfig(**cfg)):
        trace.add(event)
    model.assert_done()
    return trace


def kinds(trace: Trace) -> list[str]:
    return [e.kind for _, e in trace.events if not isinstance(e, TokenDelta | Usage)]


def test_react_happy_path_sends_stop_and_observation():
    model = ScriptedModel([
        "Thought: I should add.\nAction: calculate\nAction Input: 2+2",
        "Thought: The tool said 4.\nFinal Answer: 4",
    ])
    trace = run(react, model)
    assert kinds(trace) == ["thought", "action", "observation", "thought", "answer"]
    assert trace.answer == "4" and not trace.forced and trace.llm_calls == 2 and trace.tool_calls == 1
    assert trace.steps[0].thought == "I should add." and trace.steps[0].observation == "4"
    first, second = model.requests
    assert first.stop == ["Observation:"] and first.tools is None
    assert first.messages[0]["role"] == "system" and "calculate(expression)" in first.messages[0]["content"]
    assert second.messages[-1] == {"role": "user", "content": "Observation: 4"}


def test_act_strips_thoughts_the_model_writes_anyway():
    model = ScriptedModel(["Thought: sneaky\nAction: calculate\nAction Input: 1+1", "Final Answer: 2"])
    trace = run(act_only, model)
    assert kinds(trace) == ["action", "observation", "answer"]
    assert trace.of(Action)[0].thought == ""
    assert "Thought" not in model.requests[0].messages[0]["content"].split("Rules:")[0].split("format")[1]


def test_parse_error_is_shown_and_corrected():
    model = ScriptedModel(["I think I will just ponder.", "Action: calculate\nAction Input: 3+4", "Final Answer: 7"])
    trace = run(react, model)
    assert kinds(trace)[0] == "parse_error" and trace.parse_errors == 1
    correction = model.requests[1].messages[-1]
    assert correction["role"] == "user" and correction["content"] == trace.of(ParseError)[0].message
    assert "Action Input" in correction["content"]
    assert trace.answer == "7"


def test_hallucinated_observation_is_cut_and_real_tool_runs():
    model = ScriptedModel([
        "Thought: add\nAction: calculate\nAction Input: 2+2\nObservation: 5\nThought: so 5\nFinal Answer: 5",
        "Final Answer: 4",
    ])
    trace = run(react, model)
    assert trace.of(Observation)[0].output == "4" and trace.answer == "4"
    assert "Observation: 5" not in model.requests[1].messages[-2]["content"]
    streamed = "".join(e.text for e in trace.of(TokenDelta))
    assert "Observation" not in streamed


def test_repeats_get_a_note_then_force_the_answer():
    same = "Thought: again\nAction: calculate\nAction Input: 2+2"
    model = ScriptedModel([same, same, same, "Final Answer: 4"])
    trace = run(react, model)
    observations = trace.of(Observation)
    assert observations[0].output == "4"
    assert "already called" in observations[1].output and observations[1].is_error
    assert "third time" in observations[2].output
    assert trace.forced and trace.answer == "4"
    assert "no steps left" in model.requests[-1].messages[-1]["content"]


def test_exhausted_budget_forces_one_final_call():
    model = ScriptedModel([
        "Thought: a\nAction: calculate\nAction Input: 1+1",
        "Thought: b\nAction: calculate\nAction Input: 1+2",
        "I would guess 3.",
    ])
    trace = run(react, model, max_steps=2)
    assert trace.forced and trace.answer == "I would guess 3." and trace.llm_calls == 3
    assert model.requests[-1].tools is None


RAW = "Thought: still adding.\nAction: calculate\nAction Input: 1+3"
MUSING = ("You've already answered the question correctly, but I'll add a bit more detail.\n\n"
          "Reflections: the calculator was right, and I should trust it. " * 3)


@pytest.mark.parametrize(("forced_reply", "answer"), [
    (RAW, ""),  # the model kept to the step format: no answer in it
    ("Thought: done.\nFinal Answer: 4\n\nReflections: I was slow.", "4"),  # the answer it contained
    (MUSING, ""),  # a paragraph of musing is not an answer
    ("```python\nprint(4)\n```", ""),
    ("4", "4"),
])
def test_a_forced_answer_is_the_answer_the_reply_contained_never_the_raw_format(forced_reply, answer):
    model = ScriptedModel(["Thought: a\nAction: calculate\nAction Input: 1+1", forced_reply])
    trace = run(react, model, max_steps=1)
    assert trace.forced and trace.answer == answer
    assert "Thought:" not in trace.answer and "Action:" not in trace.answer


def test_a_model_that_never_answers_in_format_gets_no_raw_answer():
    model = ScriptedModel([RAW.replace("1+3", f"{n}+1") for n in range(3)] + [RAW])
    trace = run(react, model, max_steps=3)
    assert trace.forced and trace.answer == ""


@pytest.mark.parametrize("mode", [act_only, react])
def test_an_identical_failed_reply_is_reprompted_at_most_twice_then_the_answer_is_forced(mode):
    """Two different unreadable replies are each re-prompted; the same one again is not: the answer is forced, and
    it says why (a small model repeats itself until the step budget runs out)."""
    from agents.modes.base import REPEATED_FAILURE

    model = ScriptedModel(["I think it is 4", "maybe 4 then", "maybe  4\nthen", "Final Answer: 4"])
    trace = run(mode, model, max_steps=8)
    assert trace.parse_errors == 2 and trace.llm_calls == 4  # two re-prompts, then the forced ask: not 8 calls
    answer = trace.of(FinalAnswer)[-1]
    assert answer.forced and answer.why == REPEATED_FAILURE and answer.text == "4"
    assert [m["content"] for m in model.requests[-1].messages if m["role"] == "user"][-1].startswith("You have no")


def test_tool_exception_becomes_error_observation():
    model = ScriptedModel(["Action: broken\nAction Input: x", "Final Answer: sorry"])
    trace = run(react, model)
    obs = trace.of(Observation)[0]
    assert obs.is_error and "backend exploded" in obs.output and trace.answer == "sorry"


def test_unknown_tool_lists_available_tools():
    model = ScriptedModel(["Action: teleport\nAction Input: Mars", "Final Answer: no"])
    obs = run(react, model).of(Observation)[0]
    assert obs.is_error and "calculate" in obs.output and "teleport" in obs.output


def test_fuzzy_tool_name_resolves():
    model = ScriptedModel(["Action: Calculate\nAction Input: 5+5", "Final Answer: 10"])
    trace = run(react, model)
    assert trace.of(Observation)[0].output == "10" and trace.of(Observation)[0].tool == "calculate"


def test_long_observation_truncated_with_marker():
    model = ScriptedModel(["Action: long_text\nAction Input: q", "Final Answer: long"])
    out = run(react, model, observation_chars=100).of(Observation)[0].output
    assert out.startswith("x" * 100) and "truncated" in out and len(out) < 200


def test_llm_failure_ends_run_with_one_line():
    model = ScriptedModel(["Action: calculate\nAction Input: 1+1",
                           LLMFailure("rate-limited by the provider after 3 tries")])
    trace = run(react, model)
    assert trace.error == "rate-limited by the provider after 3 tries" and trace.answer is None


def test_empty_reply_after_reasoning_is_explained():
    model = ScriptedModel([ScriptedReply(text="", reasoning="long hidden thinking")])
    trace = run(react, model)
    assert trace.error == "the model returned an empty answer (reasoning used the whole token budget)"
    assert [e.channel for e in trace.of(TokenDelta)] == ["reasoning"]


def test_native_tools_protocol_same_events():
    model = ScriptedModel([
        ScriptedReply(text="I need to add.", tool_calls=(("calculate", {"expression": "20+22"}),)),
        ScriptedReply(text="Final Answer: 42"),
    ])
    trace = run(react, model, protocol="tools")
    assert kinds(trace) == ["thought", "action", "observation", "answer"]
    assert trace.of(Action)[0].input == {"expression": "20+22"} and trace.answer == "42"
    first, second = model.requests
    assert first.stop is None and [t["function"]["name"] for t in first.tools] == ["calculate", "broken", "long_text"]
    assert second.messages[-2]["tool_calls"][0]["function"]["name"] == "calculate"
    assert second.messages[-1] == {"role": "tool", "tool_call_id": "call_0", "content": "42"}


def test_native_act_drops_text_before_calls_and_repairs_sloppy_arguments():
    model = ScriptedModel([
        ScriptedReply(text="chatter", tool_calls=(("calculate", "{'expression': '1+2',}"),)),
        ScriptedReply(text="3"),
    ])
    trace = run(act_only, model, protocol="tools")
    assert kinds(trace) == ["action", "observation", "answer"]
    assert trace.of(Observation)[0].output == "3" and trace.answer == "3"


def test_think_only_answer_after_label():
    model = ScriptedModel(["2 and 2 make 4.\n**Final Answer:** 4"])
    trace = run(think_only, model)
    assert trace.of(Thought)[0].text == "2 and 2 make 4." and trace.answer == "4" and not trace.forced
    assert model.requests[0].tools is None and model.requests[0].stop is None
    channels = [e.channel for e in trace.of(TokenDelta)]
    assert channels[0] == "thought" and channels[-1] == "answer"


def test_think_only_without_label_is_flagged():
    trace = run(think_only, ScriptedModel(["It is probably four."]))
    assert trace.answer == "It is probably four." and trace.forced


def test_think_only_musing_without_label_is_reasoning_not_an_answer():
    musing = ("Let me think about this. First, two things and two more things. " * 6 + "\n\nSo it might be four, or "
              "maybe not, depending on how one counts.")
    trace = run(think_only, ScriptedModel([musing]))
    assert trace.answer == "" and trace.forced and trace.of(Thought)[0].text == musing.strip()
    trace = run(think_only, ScriptedModel(["Thought: I should look it up.\nAction: search\nAction Input: four"]))
    assert trace.answer == "" and trace.forced  # never the raw step format


def test_scripted_model_fails_on_unexpected_and_unused_calls():
    model = ScriptedModel(["Action: calculate\nAction Input: 1+1"])
    with pytest.raises(ScriptMismatch):
        list(react("q", model, REGISTRY, RunConfig()))
    unused = ScriptedModel(["Final Answer: 1", "never used"])
    list(react("q", unused, REGISTRY, RunConfig()))
    with pytest.raises(ScriptMismatch):
        unused.assert_done()


def test_answer_event_types():
    trace = run(react, ScriptedModel(["Final Answer: yes"]))
    assert isinstance(trace.of(FinalAnswer)[0], FinalAnswer) and not trace.of(LLMError)


def test_a_line_starting_with_obs_does_not_end_the_stream():
    model = ScriptedModel(["Thought: the gem is\nObsidian is volcanic glass.\nFinal Answer: obsidian"], chunk_size=3)
    trace = run(react, model)
    assert trace.answer == "obsidian"
    streamed = "".join(e.text for e in trace.of(TokenDelta))
    assert streamed == model.steps[0]


# --- cut replies, the token limit, waiting for the server ------------------------------------


def test_a_reply_cut_midway_is_never_parsed_and_its_tokens_count():
    cut = LLMFailure("the server closed the connection mid-reply after 4 tokens", reason="incomplete", tokens=4)
    model = ScriptedModel([ScriptedReply(text="Final Answer: 39", fail=cut)])
    trace = run(react, model)
    assert trace.answer is None and not trace.of(ParseError) and not trace.of(Action)
    assert [(e.message, e.reason) for e in trace.of(LLMError)] == [(str(cut), "incomplete")]
    usage = trace.of(Usage)
    assert len(usage) == 1 and usage[0].estimated and usage[0].completion_tokens == 4


def test_cut_native_tool_call_deltas_are_never_run():
    cut = LLMFailure("the server closed the connection mid-reply after 3 tokens", reason="incomplete")
    model = ScriptedModel([ScriptedReply(tool_calls=(("calculate", '{"expression": "2+'),), fail=cut)])
    trace = run(act_only, model, protocol="tools")
    assert trace.tool_calls == 0 and not trace.of(Action) and trace.error == str(cut)


def test_a_reply_at_the_token_limit_is_used_but_flagged():
    from agents.events import Truncated

    model = ScriptedModel([ScriptedReply(text="Thought: long.\nFinal Answer: 4", finish_reason="length")])
    trace = run(think_only, model, max_tokens=50)
    assert trace.answer == "4" and [e.message for e in trace.of(Truncated)] == [
        "the reply hit the token limit of 50 tokens and may be cut short"]
    assert model.requests[0].max_tokens == 50


def test_a_call_waiting_for_the_server_says_so_once():
    from agents.events import Waited, Waiting
    from agents.llm.base import Chunk

    class Queued(ScriptedModel):
        def stream(self, messages, **kw):
            yield Chunk(text="Thought: half a reply")  # the server closed it: it is asked for again
            yield Chunk(news=Waiting("waiting for the model server", "turn"))
            yield Chunk(news=Waited(0.5, "turn"))
            yield from super().stream(messages, **kw)

    trace = run(think_only, Queued(["Final Answer: 4"]))
    assert [type(e) for _, e in trace.events if not isinstance(e, TokenDelta)][:2] == [Waiting, Waited]
    assert trace.answer == "4" and trace.llm_calls == 1 and trace.waiting_s == min(0.5, trace.elapsed_s)
    assert "half a reply" not in (trace.of(Usage)[0].reply or "")  # what the closed reply streamed is not the reply
