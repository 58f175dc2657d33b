"""CodeAct against ScriptedModel: every branch of its loop, with the real sandbox session, no network."""

from __future__ import annotations

import threading

import pytest

from agents import prompts
from agents.events import Action, FinalAnswer, LLMError, Observation, ParseError, Thought
from agents.llm.scripted import ScriptedModel
from agents.modes import RunConfig, Stopped
from agents.modes.codeact import CODE_STOP, RESTARTED, TEXT_ONLY, codeact
from agents.parsing_code import NO_CODE
from agents.trace import Trace
from tools import default_registry
from tools.registry import ToolRegistry, tool

CALLED: list[str] = []


@tool
def calculate(expression: str) -> str:
    """Add integers written as a+b."""
    CALLED.append(expression)
    return str(sum(int(x) for x in expression.replace(" ", "").split("+")))


@tool
def broken(query: str) -> str:
    """Always fails."""
    raise RuntimeError("backend exploded")


REGISTRY = ToolRegistry([calculate, broken])


def code(thought: str, program: str, *, closed: bool = True) -> str:
    return f"Thought: {thought}\n<code>\n{program}\n" + ("</code>" if closed else "")


def run(model: ScriptedModel, question: str = "What is 2+2?", registry: ToolRegistry = REGISTRY, **cfg) -> Trace:
    CALLED.clear()
    trace = Trace("codeact", question)
    for event in codeact(question, model, registry, RunConfig(**cfg)):
        trace.add(event)
    model.assert_done()
    return trace


def shown(trace: Trace) -> list[str]:
    """The trace's structure: kinds, with the code/nested flags."""
    out = []
    for _, e in trace.events:
        if isinstance(e, Action | Observation):
            out.append(f"{e.kind}{':code' if getattr(e, 'code', False) else ''}{':nested' if e.nested else ''}")
        elif isinstance(e, Thought | FinalAnswer | ParseError | LLMError):
            out.append(e.kind)
    return out


def test_a_program_calls_tools_and_each_call_is_nested_under_it():
    model = ScriptedModel([code("Add twice.", "a = calculate('1+1')\nb = calculate(a + '+2')\nprint('b =', b)"),
                           code("Done.", "final_answer(b)")])
    trace = run(model)
    assert shown(trace) == ["thought", "action:code", "action:nested", "observation:nested", "action:nested",
                            "observation:nested", "observation", "thought", "action:code", "observation",
                            "answer"]
    actions = trace.of(Action)
    program = "a = calculate('1+1')\nb = calculate(a + '+2')\nprint('b =', b)"
    assert actions[0] == Action("python", program, "Add twice.",
                                code=True)
    assert actions[1] == Action("calculate", {"expression": "1+1"}, nested=True)
    assert [o.output for o in trace.of(Observation)][:3] == ["2", "4", "b = 4"]
    assert trace.answer == "4" and not trace.forced and CALLED == ["1+1", "2+2"]
    assert (len(trace.steps), trace.llm_calls, trace.tool_calls) == (2, 2, 2)
    assert [c.action for c in trace.steps[0].calls] == ["calculate", "calculate"] and trace.steps[1].calls == ()
    first, second = model.requests
    assert first.stop == CODE_STOP and "def calculate(expression: str) -> str:" in first.messages[0]["content"]
    assert second.messages[-1] == {"role": "user", "content": "Observation: b = 4"}
    assert second.messages[-2]["content"].endswith("</code>")


def test_variables_persist_from_one_step_to_the_next():
    model = ScriptedModel([code("Look it up.", "x = calculate('20+20')", closed=False),  # left open: stop honoured
                           code("Use it.", "final_answer(int(x) + 2)")])
    trace = run(model)
    assert trace.answer == "42"
    assert model.requests[1].messages[-2]["content"].endswith("x = calculate('20+20')\n</code>")
    assert model.requests[1].messages[-1]["content"].startswith("Observation: (The program ran and printed nothing.")


def test_a_code_error_is_the_observation_and_the_model_can_fix_it():
    model = ScriptedModel([code("Divide.", "print('start')\n1 / 0"), code("Fix it.", "final_answer(2 + 2)")])
    trace = run(model)
    failed = trace.of(Observation)[0]
    assert failed.is_error and failed.output.startswith("Output before the error:\nstart\nTraceback")
    assert failed.output.endswith("ZeroDivisionError: division by zero")
    assert model.requests[1].messages[-1]["content"] == f"Observation: {failed.output}" and trace.answer == "4"


def test_a_refused_program_never_runs():
    model = ScriptedModel([code("Peek.", "import os\nprint(os.environ)"), code("Plain.", "final_answer('4')")])
    trace = run(model)
    refused = trace.of(Observation)[0]
    assert refused.is_error and refused.output.startswith("Refused before running (nothing was executed)")
    assert shown(trace)[:3] == ["thought", "action:code", "observation"] and trace.tool_calls == 0


def test_a_tool_error_inside_the_program_shows_twice_nested_and_as_the_programs_error():
    model = ScriptedModel([code("Try it.", "broken('x')"), code("Catch it.", "try:\n    broken('y')\nexcept ToolError "
                                                                       "as e:\n    final_answer(f'no: {e}')")])
    trace = run(model)
    nested, program = trace.of(Observation)[:2]
    assert nested.nested and nested.is_error and "backend exploded" in nested.output
    assert program.is_error and "ToolError: broken failed: RuntimeError: backend exploded" in program.output
    assert trace.answer == "no: broken failed: RuntimeError: backend exploded" and trace.tool_calls == 2


def test_a_reply_without_a_program_gets_the_corrective_reprompt():
    model = ScriptedModel(["I believe it is four.", code("Now in code.", "final_answer(4)")])
    trace = run(model)
    assert shown(trace) == ["parse_error", "thought", "action:code", "observation", "answer"]
    assert model.requests[1].messages[-1] == {"role": "user", "content": NO_CODE}
    assert trace.parse_errors == 1 and trace.answer == "4"


def test_the_same_reply_without_a_program_twice_forces_the_answer_instead_of_a_third_reprompt():
    from agents.modes.base import REPEATED_FAILURE

    model = ScriptedModel(["I believe it is four.", "I believe it is  four.", code("Answer.", "final_answer('4')")])
    trace = run(model, max_steps=6)
    assert trace.parse_errors == 1 and trace.llm_calls == 3 and trace.answer == "4"
    answer = trace.of(FinalAnswer)[-1]
    assert answer.forced and answer.why == REPEATED_FAILURE
    assert "You have no steps left" in model.requests[2].messages[-1]["content"]


def test_a_final_answer_line_without_code_ends_the_run():
    trace = run(ScriptedModel(["Thought: I know this.\nFinal Answer: 4"]))
    assert trace.answer == "4" and shown(trace) == ["answer"]


@pytest.mark.parametrize("last, answer", [("Final Answer: 6", "6"), (code("Answer.", "final_answer('6')"), "6")])
def test_an_exhausted_budget_forces_one_last_answer(last, answer):
    model = ScriptedModel([code("One.", "print(calculate('1+1'))"), code("Two.", "print(calculate('2+2'))"), last])
    trace = run(model, max_steps=2)
    assert trace.answer == answer and trace.forced and trace.llm_calls == 3 and len(trace.steps) == 2
    assert "You have no steps left" in model.requests[2].messages[-1]["content"]


def test_the_native_protocol_is_refused_in_one_line_without_a_model_call():
    model = ScriptedModel([])
    trace = run(model, protocol="tools")
    assert trace.error == TEXT_ONLY and trace.llm_calls == 0 and trace.answer is None


def test_a_step_that_ends_the_sandbox_says_the_next_one_starts_afresh():
    model = ScriptedModel([code("Keep.", "keep = 1"), code("Spin.", "x = 'a' * 2**30"),
                           code("Again.", "print(keep)"), code("Give up.", "final_answer('?')")])
    trace = run(model)
    outputs = [o.output for o in trace.of(Observation)]
    assert outputs[1] == "Memory limit exceeded (512 MB)."
    assert outputs[2].startswith(RESTARTED) and "NameError: name 'keep' is not defined" in outputs[2]


def test_stop_while_a_program_runs_ends_the_mode_quietly():
    cancel = threading.Event()

    @tool
    def press_stop(reason: str) -> str:
        """Presses Stop."""
        cancel.set()
        return "pressed"

    model = ScriptedModel([code("Go.", "press_stop('now')\nimport time\ntime.sleep(30)")])
    events = []
    with pytest.raises(Stopped):
        for event in codeact("q", model, ToolRegistry([press_stop]), RunConfig(cancel=cancel)):
            events.append(event)
    assert [type(e).__name__ for e in events if not e.kind == "token"][-2:] == ["Action", "Observation"]
    assert events[-1].nested  # the call finished; the program's own observation never came


def _sandboxes() -> list[int]:
    """This process's CodeAct sandbox children, by pid."""
    import os

    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, IndexError):
            continue
        if stat[0] != "Z" and int(stat[1]) == os.getpid() and b"--session" in cmdline:
            found.append(int(entry))
    return found


def test_stop_in_a_comparison_run_ends_the_program_and_its_sandbox_at_once():
    import time

    from agents.comparison import ComparisonRun

    model = ScriptedModel([code("Wait.", "import time\ntime.sleep(30)")])
    before = set(_sandboxes())  # an earlier test's session may still be on its way out on a loaded machine
    run = ComparisonRun("q", ["codeact"], model_factory=lambda: model, registry=REGISTRY).start()
    while not isinstance(event := (run.poll(5) or ("", None))[1], Action):
        assert event is not None, "the program never started"
    time.sleep(0.3)
    ours = set(_sandboxes()) - before
    assert len(ours) == 1
    start = time.monotonic()
    run.close()
    assert time.monotonic() - start < 1.0 and not ours & set(_sandboxes())


def test_the_trace_round_trips_and_reads_well():
    model = ScriptedModel([code("Add.", "print(calculate('1+1'))"), code("Done.", "final_answer(2)")])
    trace = run(model)
    again = Trace.from_dict(trace.to_dict())
    assert again.events == trace.events and again.to_dict() == trace.to_dict()
    events = trace.to_dict()["events"]
    assert {"code": True} .items() <= next(e for e in events if e["kind"] == "action").items()
    assert all("nested" not in e and "code" not in e for e in events if e["kind"] == "usage")
    md = trace.to_markdown()
    assert "**Action 1:** `python` ← \n\n```python\nprint(calculate('1+1'))\n```" in md
    assert "> **Call 1.1:** `calculate` ← `{\"expression\": \"1+1\"}`" in md and "> **Result 1.1** _" in md
    summary = trace.summary()
    assert summary["tool_calls"] == 1 and summary["steps"][0]["calls"][0] == {
        "action": "calculate", "input": {"expression": "1+1"}, "observation": "2",
        "elapsed_s": summary["steps"][0]["calls"][0]["elapsed_s"]}
    assert "calls" not in summary["steps"][1]


def test_the_prompt_shows_the_tools_as_functions_and_not_the_repl():
    text = prompts.render_prompt("codeact", default_registry())
    assert "def get_weather(location: str) -> str:" in text and "def python_repl" not in text
    assert "final_answer(" in text and "<code>" in text and "imports only from bisect, collections" in text
    assert "$" not in text.replace("$tool", "")
