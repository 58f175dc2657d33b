"""The agreement sentence says what is true: agreement on forced answers, or on an answer every mode got wrong, is
called that, never "All answers agree"."""

from __future__ import annotations

import pytest

from agents.agreement import agreement, expected_line
from agents.events import FinalAnswer, Usage
from agents.trace import Trace


def traced(mode: str, answer: str, forced: bool = False) -> Trace:
    t = Trace(mode, "What is 17 * 23 + 5?")
    t.add(Usage(10, 5, 0.1), 0.1)
    t.add(FinalAnswer(answer, forced=forced), 0.2)
    return t


def run(*answers: tuple[str, str, bool]) -> dict[str, Trace]:
    return {mode: traced(mode, text, forced) for mode, text, forced in answers}


@pytest.mark.parametrize(("answers", "correct", "line"), [
    ([("think", "396", False), ("act", "396", False), ("react", "396", False)], None, "✔ All answers agree."),
    ([("think", "396", False), ("act", "396", False), ("react", "396", False)],
     {"think": True, "act": True, "react": True}, "✔ All answers agree."),
    ([("think", "409", True), ("act", "409", True), ("react", "409", True)],
     {"think": False, "act": False, "react": False}, "✗ All three forced to the same wrong answer."),
    ([("think", "409", True), ("act", "409", True), ("react", "409", True)], None,
     "⚠ All three forced to the same answer: none finished on its own."),
    ([("think", "409", False), ("act", "409", False)], {"think": False, "act": False},
     "✗ Both gave the same wrong answer."),
    ([("think", "409", True), ("act", "409", False), ("react", "409", False)],
     {"think": False, "act": False, "react": False},
     "✗ All three gave the same wrong answer (Think-only's was forced)."),
    ([("think", "396", True), ("act", "396", False), ("react", "396", False)], None,
     "⚖ The answers agree, but Think-only's was forced."),
    ([("think", "400", False), ("act", "409", True), ("react", "409", True)],
     {"think": False, "act": False, "react": False},
     "⚖ Think-only differs; Act-only and ReAct agree (both wrong, both forced)."),
    ([("think", "I don't know", False), ("act", "409", True), ("react", "409", True)], None,
     "⚠ The 2 that answered forced to the same answer: none finished on its own (Think-only: no answer)."),
])
def test_the_sentence_qualifies_agreement_on_forced_or_wrong_answers(answers, correct, line):
    assert agreement(run(*answers), correct) == line


def test_the_expected_answer_line_counts_the_right_ones():
    assert expected_line(0, 3) == "0 of 3 right"
