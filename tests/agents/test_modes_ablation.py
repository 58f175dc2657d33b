"""The placebo ablation: "ReAct (worked example)" and "ReAct (placebo example)" differ in the example's thoughts
only, in their prompt files and in what a stand-in server receives from the real client."""

from __future__ import annotations

import difflib

import pytest

from agents import prompts
from agents.comparison import compare, default_model_factory
from agents.evaluation.report import format_summary, summarise
from agents.events import LLMError
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, toy_policy
from agents.modes import RunConfig
from agents.modes.ablation import TEXT_ONLY
from agents.modes.registry import get_mode, list_modes, protocol_problem
from tools.calculator import calculate
from tools.registry import ToolRegistry

REGISTRY = ToolRegistry([calculate])
QUESTION = "What is 17 * 23?"
NEUTRAL = "Thought: I will take the next step."
EXAMPLE_THOUGHTS = (
    "Thought: I need the university where Alan Turing earned his PhD, then the year it was founded.",
    "Thought: Turing earned his PhD at Princeton University. Now I need the year Princeton was founded.",
    "Thought: Princeton was founded in 1746, so that is the year the question asks for.",
)


def changed_lines(a: str, b: str) -> list[tuple[str, str]]:
    """The lines that differ between two texts, paired (a replaced line for a replaced line); anything else fails."""
    pairs = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a.splitlines(), b=b.splitlines(), autojunk=False).get_opcodes():
        if op == "equal":
            continue
        assert op == "replace" and i2 - i1 == j2 - j1, (op, a.splitlines()[i1:i2], b.splitlines()[j1:j2])
        pairs += zip(a.splitlines()[i1:i2], b.splitlines()[j1:j2], strict=True)
    return pairs


def assert_only_the_thoughts_differ(worked: str, placebo: str) -> None:
    assert changed_lines(worked, placebo) == [(t, NEUTRAL) for t in EXAMPLE_THOUGHTS]


def test_the_two_prompt_files_are_react_s_with_one_example_and_differ_in_its_thoughts_only():
    react = prompts.template("react").template
    worked, placebo = prompts.template("react_worked").template, prompts.template("react_placebo").template
    assert worked.startswith(react + "\n\n") and placebo.startswith(react + "\n\n")  # ReAct's prompt, then the example
    assert_only_the_thoughts_differ(worked, placebo)
    assert "Final Answer: 1746" in worked and "Final Answer: 1746" in placebo


def test_both_are_benchmark_modes_with_their_prompt_in_the_prompts_view():
    for mode_id, title in (("react_worked", "ReAct (worked example)"), ("react_placebo", "ReAct (placebo example)")):
        spec = get_mode(mode_id)
        assert (spec.placement, spec.title, spec.prompt, spec.uses_tools) == ("benchmark", title, mode_id, True)
        assert spec in [s for s in list_modes() if s.prompt]  # what the Prompts tab shows: a box each
    rendered = {m: prompts.render_prompt(m, REGISTRY) for m in ("react_worked", "react_placebo")}
    assert_only_the_thoughts_differ(rendered["react_worked"], rendered["react_placebo"])


def test_the_stand_in_server_receives_the_example_s_thoughts_from_one_and_the_neutral_line_from_the_other():
    bodies = {}
    for mode in ("react_worked", "react_placebo"):
        with StubLLMServer(toy_policy) as server:
            settings = LLMSettings(base_url=server.url, model="stub")
            traces = compare(QUESTION, [mode], model_factory=default_model_factory(settings), registry=REGISTRY)
            bodies[mode] = [r.body for r in server.requests]
        assert traces[mode].answer == "391" and traces[mode].tool_calls == 1
    worked, placebo = bodies["react_worked"], bodies["react_placebo"]
    assert len(worked) == len(placebo) == 2  # the calculator call, then the answer
    for sent_worked, sent_placebo in zip(worked, placebo, strict=True):
        system_worked, system_placebo = (b["messages"][0]["content"] for b in (sent_worked, sent_placebo))
        assert all(t in system_worked for t in EXAMPLE_THOUGHTS) and NEUTRAL not in system_worked
        assert not any(t in system_placebo for t in EXAMPLE_THOUGHTS) and system_placebo.count(NEUTRAL) == 3
        assert_only_the_thoughts_differ(system_worked, system_placebo)
        assert system_worked.startswith(prompts.system_prompt("react", REGISTRY) + "\n\n")
        rest = [{**b, "messages": b["messages"][1:]} for b in (sent_worked, sent_placebo)]
        assert rest[0] == rest[1]  # the question, the replies, the observations, every parameter: the same


def test_a_benchmark_of_them_under_native_tool_calls_is_refused_in_one_line():
    both = protocol_problem(["react", "react_worked", "react_placebo"], "tools")
    assert both == ("ReAct (worked example) and ReAct (placebo example) run under the text protocol only (the worked "
                    "example is in the paper's text format): choose the text protocol, or leave them out.")
    assert protocol_problem(["react_worked"], "tools").startswith("ReAct (worked example) runs under")
    assert protocol_problem(["react_worked", "react_placebo"], "text") is None
    assert protocol_problem(["think", "react", "codeact", "unknown"], "tools") is None


def test_under_native_tool_calls_each_says_so_in_one_line_without_a_call():
    with StubLLMServer(toy_policy) as server:
        settings = LLMSettings(base_url=server.url, model="stub")
        traces = compare(QUESTION, ["react_worked", "react_placebo"], model_factory=default_model_factory(settings),
                         registry=REGISTRY, config=RunConfig(protocol="tools"))
        assert server.requests == []
    for trace in traces.values():
        assert [e.message for e in trace.of(LLMError)] == [TEXT_ONLY] and trace.answer is None


@pytest.mark.parametrize("modes", [["react", "react_placebo"], ["react_worked"]])
def test_the_cli_table_cites_the_paper_when_the_ablation_ran(modes):
    records = [{"id": "q", "mode": m, "em": 1.0, "f1": 1.0} for m in modes]
    text = format_summary(summarise(records, modes, "custom"))
    assert "Verma, Bhambri & Kambhampati, 2024, arXiv 2405.13966" in text and "whether it holds here" in text


def test_the_cli_table_names_no_ablation_that_did_not_run():
    records = [{"id": "q", "mode": "react", "em": 1.0, "f1": 1.0}]
    assert "Verma" not in format_summary(summarise(records, ["react"], "custom"))
