"""Verdicts (ui/core/verdicts.py): the correctness column, the metrics lines and the export fields (pure rendering)."""

from __future__ import annotations

from agents.events import Action, FinalAnswer, Observation, Thought, Usage
from agents.trace import Trace
from ui.core import verdicts
from ui.core.table import comparison_markdown

QUESTION = "What is 17 * 23 + 5?"


def trace(mode: str, answer: str | None) -> Trace:
    t = Trace(mode, QUESTION)
    for i, event in enumerate([Thought("compute"), Action("calculate", "17*23+5"),
                               Observation("calculate", "396", 0.01), Usage(10, 5, 0.1)]):
        t.add(event, i * 0.1)
    if answer is not None:
        t.add(FinalAnswer(answer), 0.5)
    return t


def three() -> dict[str, Trace]:
    return {"think": trace("think", "400"), "act": trace("act", "396"), "react": trace("react", "The answer is 396.")}


def test_table_gets_a_correct_and_f1_column_after_answer():
    table = verdicts.comparison_table(three(), "396")
    head, sep, think, act, react = table.split("\n")[:5]
    assert "| Answer | Correct | F1 |" in head
    assert sep.count("|") == head.count("|")
    assert "| 400 | ✗ | 0.00 |" in think
    assert "| 396 | ✓ | 1.00 |" in act
    assert "| ✓ | 1.00 |" in react
    assert "**Expected answer:** 396 — 2 of 3 right." in table


def test_no_expected_answer_leaves_the_table_as_it_was():
    traces = three()
    assert verdicts.comparison_table(traces, None) == comparison_markdown(traces)
    assert verdicts.comparison_table(traces, "   ") == comparison_markdown(traces)


def test_mode_without_answer_is_wrong_and_text_is_escaped():
    traces = {"think": trace("think", None), "react": trace("react", "<b>x</b> | y")}
    table = verdicts.comparison_table(traces, "<i>y</i> | z")
    assert "| ✗ | 0.00 |" in table.split("\n")[2]
    assert "<i>" not in table and "&lt;i>y&lt;/i> \\| z" in table
    rows = [line for line in table.split("\n") if line.startswith("|")]
    assert len({line.count("|") - line.count("\\|") for line in rows}) == 1  # every row has as many cells


def test_metrics_line_carries_the_verdict_once_finished():
    t = trace("act", "396")
    assert verdicts.metrics_with_verdict("1 step", t, "396", running=False) == "1 step · ✓ F1 1.00"
    assert verdicts.metrics_with_verdict("1 step", t, "395", running=False) == "1 step · ✗ F1 0.00"
    assert verdicts.metrics_with_verdict("● 1 step", t, "396", running=True) == "● 1 step"
    assert verdicts.metrics_with_verdict("1 step", t, None, running=False) == "1 step"


def test_export_fields():
    fields = verdicts.export_fields(three(), " 396 ")
    assert fields["expected"] == "396"
    assert fields["verdicts"]["act"]["mark"] == "✓" and fields["verdicts"]["think"]["correct"] is False
    assert verdicts.export_fields(three(), None) == {"expected": None, "verdicts": {}}


def test_expected_problem():
    assert verdicts.expected_problem(None) is None and verdicts.expected_problem("396") is None
    assert "text" in verdicts.expected_problem(396)
    assert "limit" in verdicts.expected_problem("x" * 501)
