"""Reflexion on the page, from a scripted run: one line per trial in its panel, the trials in the table, the
answer a trial's own — and a forced answer that never shows the raw step format."""

from __future__ import annotations

from agents.events import Trial
from agents.llm.scripted import ScriptedModel
from agents.modes import RunConfig
from agents.modes.registry import run_mode
from agents.trace import Trace, metrics_line
from tools.registry import ToolRegistry, tool
from ui.core.render import Panel, to_wire
from ui.core.table import NO_FORCED_ANSWER, comparison_markdown
from ui.core.verdicts import comparison_table

REFLECTION = "I guessed without calculating. Next time I will call the calculator before answering."


@tool
def calculate(expression: str) -> str:
    """Add integers written as a+b."""
    return str(sum(int(x) for x in expression.replace(" ", "").split("+")))


REGISTRY = ToolRegistry([calculate])


def run(mode: str, model: ScriptedModel, **options) -> tuple[Trace, Panel]:
    trace, panel = Trace(mode, "What is 1+2?"), Panel(mode)
    config = RunConfig(**options.pop("config", {}))
    for event in run_mode(mode, "What is 1+2?", model, REGISTRY, config, **options):
        panel.add(trace.add(event))
    trace.finish()
    panel.finish()
    model.assert_done()
    return trace, panel


def test_a_failed_then_passed_trial_reads_as_two_lines_two_trials_and_the_second_answer():
    model = ScriptedModel(["Thought: easy.\nFinal Answer: 4", REFLECTION,
                           "Thought: add them.\nAction: calculate\nAction Input: 1+2", "Final Answer: 3"])
    trace, panel = run("reflexion", model, expected="3")
    top = [m for m in panel.value() if not m.metadata.get("parent_id")]
    lines = [m.metadata.get("title", "") for m in top]
    assert lines[:2] == ["Trial 1 of 3 · ✗ · reflection: I guessed without calculating. Next time I will call the "
                         "calculator before answering.", "Trial 2 of 3 · ✓ · answer: 3"]
    assert len(top) == 3 and top[2].content.startswith("**✔ Final answer**") and top[2].content.endswith("3")
    assert all(m.metadata["status"] == "done" for m in top[:2])  # collapsed: each trial one line
    steps = [m.metadata.get("title", "") for m in panel.value() if m.metadata.get("parent_id") == "trial-2"]
    assert steps[:3] == ["✎ Thought", "⚙ Action 1: calculate", "↳ Observation 1 · calculate"]
    wire = to_wire(panel.value())
    assert wire[0]["metadata"]["id"] == "trial-1" and wire[1]["metadata"]["parent_id"] == "trial-1"
    assert trace.answer == "3" == trace.trials[1]["answer"] and trace.of(Trial) == [Trial(1, 3), Trial(2, 3)]
    table = comparison_table({"reflexion": trace}, "3")
    assert "| Trials |" in table and "| **Reflexion** | 3 | ✓ | 1.00 | 1 | 2 |" in table
    assert metrics_line(trace).startswith("2 trials · 1 step ·")


def test_a_model_that_never_answers_in_format_gets_an_answer_cell_without_the_format():
    raw = "Thought: let me add.\nAction: calculate\nAction Input: {n}+1"
    model = ScriptedModel([raw.format(n=n) for n in range(2)] + [raw.format(n=9)])
    trace, panel = run("react", model, config={"max_steps": 2})
    assert trace.forced and trace.answer == ""
    table = comparison_markdown({"react": trace})
    cell = table.splitlines()[2].split("|")[2].strip()
    assert cell == NO_FORCED_ANSWER and "Thought:" not in table and "Action:" not in table
    assert panel.value()[-1].content.endswith(NO_FORCED_ANSWER)


def test_think_only_metrics_say_one_step():
    trace, _ = run("think", ScriptedModel(["1 and 2 make 3.\nFinal Answer: 3"]))
    assert metrics_line(trace).startswith("1 step ·") and "| **Think-only** | 3 | 1 |" in comparison_markdown(
        {"think": trace})
