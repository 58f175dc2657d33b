"""The comparison table and the agreement line: real answers only, Reflexion's trials, numbers that never wrap."""

from __future__ import annotations

import pytest

from agents.events import Action, Evaluation, FinalAnswer, Observation, Reflection, Trial, Usage
from agents.trace import Trace
from ui.core.table import NBSP, NO_FORCED_ANSWER, agreement, comparison_markdown, comparison_rows, gave_answer
from ui.core.verdicts import comparison_table

MODES = ("think", "act", "react")


def trace(mode: str, *events) -> Trace:
    t = Trace(mode, "What is 2+2?")
    for i, event in enumerate([Usage(10, 5, 0.1), *events]):
        t.add(event, i * 0.1)
    return t


def row(table: str, title: str) -> list[str]:
    line = next(x for x in table.splitlines() if x.startswith(f"| **{title}**"))
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.mark.parametrize("text", ["I don't know", "I do not know.", "Unknown", "I'm not sure", "", None,
                                  "I cannot answer that.", "Thought: hmm\nAction: calculate\nAction Input: 2+2"])
def test_what_is_not_an_answer(text):
    assert not gave_answer(text)


@pytest.mark.parametrize("text", ["4", "Paris", "I don't know exactly, but the records I found say it was Paris"])
def test_what_is_an_answer(text):
    assert gave_answer(text)


def test_modes_that_all_said_i_dont_know_do_not_agree():
    traces = {m: trace(m, FinalAnswer("I don't know.")) for m in MODES}
    line = agreement(traces)
    assert "No mode answered" in line and "agree" not in line
    assert all(r["agrees_with"] == [] for r in comparison_rows(traces))
    table = comparison_table(traces, "Jane Austen")
    assert "All answers agree" not in table and "0 of 3 right" in table
    nothing = {m: trace(m) for m in MODES}  # no answer at all
    assert "No mode answered" in agreement(nothing)
    half = {"think": trace("think", FinalAnswer("4")), "act": trace("act", FinalAnswer("I don't know")),
            "react": trace("react", FinalAnswer("4"))}
    assert agreement(half) == "✔ The answers given agree (Act-only: no answer)."


def test_a_forced_answer_without_an_answer_and_an_old_raw_one_show_the_placeholder():
    raw = "Thought: add\nAction: calculate\nAction Input: 2+2"  # what an older recording's forced answer held
    traces = {"act": trace("act", FinalAnswer("", forced=True)), "react": trace("react", FinalAnswer(raw, True))}
    table = comparison_markdown(traces)
    assert row(table, "Act-only")[1] == row(table, "ReAct")[1] == NO_FORCED_ANSWER
    assert "Thought:" not in table and "Action:" not in table
    assert comparison_rows(traces)[1]["answer"] == raw  # the export keeps what was recorded


def test_the_trials_column_is_blank_for_modes_without_trials_and_numbers_do_not_wrap():
    reflexion = trace("reflexion", Trial(1, 3), Action("calculate", "2+2"), Observation("calculate", "5"),
                      Evaluation(False, "expected", "not an exact match", "5"), Reflection("Check the sum."),
                      Trial(2, 3), Evaluation(True, "expected", "an exact match", "4"), FinalAnswer("4"))
    traces = {"react": trace("react", FinalAnswer("4")), "reflexion": reflexion}
    table = comparison_markdown(traces)
    assert table.startswith("| Mode | Answer | Steps | Trials | Tool calls |")
    assert row(table, "ReAct")[3] == "" and row(table, "Reflexion")[3] == "2"
    assert [r["trials"] for r in comparison_rows(traces)] == [None, 2]
    assert f"10{NBSP}/{NBSP}5" in table and f"0.8{NBSP}s" in table
    plain = comparison_markdown({"react": trace("react", FinalAnswer("4"))})
    assert "Trials" not in plain  # without Reflexion the table keeps its columns
    judged = comparison_table(traces, "4")
    assert "| Mode | Answer | Correct | F1 | Steps | Trials |" in judged and row(judged, "Reflexion")[5] == "2"
