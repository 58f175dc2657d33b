"""Mode ids live in the registry: the loops take their prompt from the mode, a fork reads the spec."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agents import prompts
from agents.events import FinalAnswer, Forked, Observation
from agents.fork import fork, forkable_modes
from agents.llm.scripted import ScriptedModel, ScriptedReply
from agents.modes import RunConfig, react
from agents.modes.registry import ModeSpec, mode_ids, registered
from agents.modes.text_protocol import text_loop
from agents.modes.tool_protocol import tools_loop
from agents.trace import Trace
from tools.registry import ToolRegistry, tool

ROOT = Path(__file__).resolve().parents[2]


@tool
def calculate(expression: str) -> str:
    """Add integers written as a+b."""
    return str(sum(int(x) for x in expression.replace(" ", "").split("+")))


REGISTRY = ToolRegistry([calculate])


@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_the_loops_use_the_prompt_their_mode_names(protocol):
    """With thoughts on and the Act prompt, the system message is the Act prompt (no id guessed from ``thoughts``)."""
    model = ScriptedModel(["Final Answer: 2"])
    config = RunConfig(protocol=protocol, max_steps=3)
    loop = tools_loop if protocol == "tools" else text_loop
    events = list(loop("What is 1+1?", model, REGISTRY, config, thoughts=True, prompt="act"))
    assert [e.text for e in events if isinstance(e, FinalAnswer)] == ["2"]
    expected = prompts.system_prompt("act", REGISTRY, protocol=protocol, max_steps=3)
    assert model.requests[0].messages[0] == {"role": "system", "content": expected}


@pytest.fixture
def toy_tool_mode():
    """A further tool mode (ReAct under another id) that takes a ``runner``, removed again afterwards."""

    def toy(question, model, registry, config, *, runner=None):
        return react(question, model, registry, config, runner=runner)

    spec = ModeSpec("toy_fork", "Toy fork", toy, prompt="react", uses_tools=True, options=("runner",))
    with registered(spec) as spec:
        yield spec


@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_any_mode_that_takes_a_runner_can_be_forked(toy_tool_mode, protocol):
    first = ("Thought: add.\nAction: calculate\nAction Input: 1+1" if protocol == "text"
             else ScriptedReply("I add.", tool_calls=(("calculate", {"expression": "1+1"}),)))
    config = RunConfig(protocol=protocol, max_steps=4)
    trace = Trace(toy_tool_mode.id, "What is 1+1?")
    for event in toy_tool_mode.run(trace.question, ScriptedModel([first, "Final Answer: 2"]), REGISTRY, config):
        trace.add(event)
    assert trace.answer == "2" and toy_tool_mode in forkable_modes()

    live = ScriptedModel(["Final Answer: 3"])
    forked = Trace(trace.mode, trace.question)
    for event in fork(trace, 0, "3", live, REGISTRY, config):
        forked.add(event)
    live.assert_done()
    assert forked.answer == "3" and forked.of(Forked) == [Forked(0, "2", "3")]
    assert "3" in str(live.requests[0].messages[-1]["content"])
    assert "Observation 1 edited" in forked.to_markdown()


def test_a_mode_without_a_runner_or_reasoning_option_is_not_forkable():
    trace = Trace("cot_sc", "What is 1+1?")
    trace.add(Observation("calculate", "2"))
    with pytest.raises(ValueError, match="only the modes think, act, react, codeact can be forked; 'cot_sc'"):
        fork(trace, 0, "3", ScriptedModel([]), REGISTRY, RunConfig())


# Quoted strings equal to a mode id that are not mode ids: the "Act" label prefix of the text protocol, and the
# ``react`` function's name in the package's __all__.
NOT_MODE_IDS = {("agents/parsing.py", "act"), ("agents/modes/__init__.py", "react"),
                ("agents/modes/__init__.py", "act_only")}


def _quoted_ids(path: Path, ids: set[str]) -> list[tuple[int, str]]:
    """Lines where a string literal equal to a mode id stands outside a ``register(...)`` call."""
    tree = ast.parse(path.read_text())
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "register":
            inside |= {id(n) for n in ast.walk(node)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in ids and id(n) not in inside]


def test_mode_ids_are_quoted_only_where_modes_register():
    ids = set(mode_ids("base"))
    files = [ROOT / "app.py", *(p for d in ("agents", "ui", "tools") for p in (ROOT / d).rglob("*.py"))]
    found = [(str(p.relative_to(ROOT)), line, value) for p in files for line, value in _quoted_ids(p, ids)
             if (str(p.relative_to(ROOT)), value) not in NOT_MODE_IDS]
    assert found == []
