"""The correctness column: the paper's scoring of one answer against an expected answer."""

from __future__ import annotations

from fractions import Fraction

import pytest

from agents.correctness import clean_expected, expected_number, judge, number_text, numbers_in


@pytest.mark.parametrize("answer, expected, correct", [
    # numbers: by value, however they are written
    ("396", "396", True),
    ("396.0", "396", True),
    ("= 396", "396", True),
    ("3.96e2", "396", True),
    ("12,345", "12345", True),
    ("12345", "12,345", True),
    ("The answer is 396.", "= 396", True),
    ("17 * 23 + 5 = 396", "396", True),
    ("1,785.25", "1785.25", True),
    ("1785.3", "1785.25", False),
    ("395", "396", False),
    ("about 400", "396", False),
    ("−7", "-7", True),
    ("0.5", "1/2", True),
    ("121,932,631,112,635,269", "121932631112635269", True),
    ("121,932,631,112,635,268", "121932631112635269", False),  # exact: no relative slack on big numbers
    # text: the paper's exact match after SQuAD normalisation
    ("Jane Austen", "Jane Austen", True),
    ("jane austen.", "Jane Austen", True),
    ("The Jane Austen", "Jane Austen", True),
    ("Jane Austen wrote it", "Jane Austen", False),
    ("Charlotte Brontë", "Jane Austen", False),
    # nothing to judge
    ("", "396", False),
    (None, "396", False),
])
def test_judge_table(answer, expected, correct):
    verdict = judge(answer, expected)
    assert verdict.correct is correct
    assert verdict.mark == ("✓" if correct else "✗")


def test_f1_beside_exact_match_for_text():
    verdict = judge("Jane Austen wrote it", "Jane Austen")
    assert verdict.method == "text" and not verdict.correct
    assert verdict.f1 == pytest.approx(2 * (2 / 4) * 1 / (2 / 4 + 1))  # precision 2/4, recall 2/2
    assert judge("Jane Austen", "Jane Austen").f1 == 1.0


def test_numbers_score_f1_as_hit_like_gsm8k():
    assert judge("396", "396").f1 == 1.0 and judge("395", "396").f1 == 0.0
    assert judge("396", "396").method == "number" and judge("396", "396").parsed == "396"


def test_numbers_the_question_contains_are_not_the_answer():
    question = "How many prime numbers are there below 10,000?"
    assert judge("There are 1,229 primes below 10,000.", "1229", question).correct
    assert not judge("There are 1,229 primes below 10,000.", "1229").correct  # without the question: the last number
    assert judge("13 weeks = 7,862,400 seconds", "7862400", "How many seconds are there in 13 weeks?").correct
    # the expected number itself may appear in the question
    assert judge("5", "5", "What is 5 * 1?").correct


def test_reading_numbers():
    assert numbers_in("F(30) = 832,040; 1/2 and 3.96e2, not 10/12/2020") == [
        30, 832040, Fraction(1, 2), 396]
    assert expected_number("= 396") == 396 and expected_number("396.") == 396
    assert expected_number("Jane Austen") is None and expected_number("396 seconds") is None


def test_clean_expected():
    assert clean_expected("  Jane   Austen \n") == "Jane Austen"
    assert clean_expected("   ") is None and clean_expected(None) is None and clean_expected(396) is None


def test_a_number_past_any_answer_is_data_not_a_number():
    """A dump of digits or a huge exponent is never read as a number: no text makes the scoring build a huge
    value (``1e999999999`` would cost seconds), and nothing downstream writes a value too long for ``str``."""
    huge = ["1e999999999", "2" * 5000, "1.5e" + "9" * 5000, "3/" + "7" * 5000, "1" * 4000 + ".5"]
    for text in huge:
        assert numbers_in(f"the output was {text}, then 7") == [7]
        assert not judge(text, "7").correct
    assert numbers_in("1e300 and " + "9" * 300) == [10 ** 300, int("9" * 300)]


def test_a_large_value_still_has_one_written_form():
    assert number_text(Fraction(10 ** 299) + Fraction(1, 2)) == "1e+299"
    assert number_text(Fraction(10 ** 299)) == "1" + "0" * 299
    assert number_text(Fraction(10 ** 600, 7)) == "1.428571429e+599"  # past a float's range

