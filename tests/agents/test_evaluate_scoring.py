"""The paper's scoring against hand-checked cases: SQuAD EM/F1, FEVER labels, GSM8K numbers."""

from __future__ import annotations

from fractions import Fraction

import pytest

from agents.evaluation.scoring import (
    NEI,
    REFUTES,
    SUPPORTS,
    exact_match,
    extract_last_number,
    f1_score,
    fever_label,
    normalize_answer,
    score,
    score_open,
    vote_key,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("The Beatles", "beatles"),
    ("  a   Tale of  Two Cities ", "tale of two cities"),
    ("An apple, the pear.", "apple pear"),
    ("U.S.A.", "usa"),
    ("Bong Joon-ho", "bong joonho"),
    ("THEATRE", "theatre"),  # 'the' only as a whole word
    ("anthem", "anthem"),
    ("", ""),
    (None, ""),
    ("\tNew\nYork\n", "new york"),
    ("“quoted”", "“quoted”"),  # SQuAD strips ASCII punctuation only, as the paper's code does
])
def test_squad_normalisation(text, expected):
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(("prediction", "gold", "em"), [
    ("the Eiffel Tower", "Eiffel Tower", 1.0),
    ("eiffel tower.", "The Eiffel Tower", 1.0),
    ("Eiffel", "Eiffel Tower", 0.0),
    ("1,000", "1000", 1.0),  # the comma is punctuation
    ("", "x", 0.0),
    (None, "x", 0.0),
])
def test_exact_match(prediction, gold, em):
    assert exact_match(prediction, gold) == em


def test_f1_partial_overlap_by_hand():
    # pred tokens: [barack, obama, jr]; gold: [barack, hussein, obama] -> 2 common
    # precision 2/3, recall 2/3 -> F1 2/3
    assert f1_score("Barack Obama Jr.", "Barack Hussein Obama") == pytest.approx(2 / 3)
    # pred [paris] vs gold [paris, france]: p=1, r=1/2 -> F1 2/3
    assert f1_score("Paris", "Paris, France") == pytest.approx(2 / 3)
    # repeated tokens count once per occurrence: [new, new, york] vs [new, york]: common 2, p=2/3, r=1 -> 0.8
    assert f1_score("new new york", "New York") == pytest.approx(0.8)
    assert f1_score("completely different", "Eiffel Tower") == 0.0
    assert f1_score("The Eiffel Tower", "eiffel tower") == 1.0


def test_yes_no_answers_score_f1_only_on_exact_match():
    assert f1_score("yes", "yes") == 1.0
    assert f1_score("yes", "no") == 0.0
    assert f1_score("no", "no way") == 0.0  # HotpotQA's rule, though 'no' overlaps
    assert f1_score("yes they are", "yes") == 0.0
    assert exact_match("Yes.", "yes") == 1.0


def test_aliases_take_the_best_score():
    s = score_open("Nixon", "Richard Nixon", ["Nixon", "Richard M. Nixon"])
    assert (s.em, s.f1) == (1.0, 1.0)
    s = score_open("President Nixon", "Richard Nixon", ["Nixon"])
    assert s.em == 0.0 and s.f1 == pytest.approx(2 / 3)  # vs 'nixon': p=1/2, r=1


@pytest.mark.parametrize(("text", "label"), [
    ("SUPPORTS", SUPPORTS), ("supports", SUPPORTS), ("Supported", SUPPORTS), ("SUPPORTED.", SUPPORTS),
    ("true", SUPPORTS), ("True — the claim holds.", SUPPORTS), ("Yes", SUPPORTS), ("correct", SUPPORTS),
    ("REFUTES", REFUTES), ("refuted", REFUTES), ("false", REFUTES), ("False.", REFUTES), ("no", REFUTES),
    ("incorrect", REFUTES), ("not true", REFUTES), ("The evidence contradicts it", REFUTES),
    ("NOT ENOUGH INFO", NEI), ("not enough info", NEI), ("Not enough information", NEI), ("NEI", NEI),
    ("NOT_ENOUGH_INFO", NEI), ("insufficient information", NEI), ("Insufficient evidence.", NEI),
    ("It cannot be determined", NEI), ("can't tell", NEI), ("unverifiable", NEI),
    ("neither supported nor refuted", NEI), ("The claim is not supported", NEI),
    ("REFUTES: the claim that it is supported is false", REFUTES),  # the first label named wins
    ("SUPPORTS (it is not false)", SUPPORTS),
    ("banana", None), ("", None), (None, None),
])
def test_fever_label_mapping(text, label):
    assert fever_label(text) == label


def test_fever_score_is_label_accuracy():
    assert score("fever", "Supported", "SUPPORTS").em == 1.0
    assert score("fever", "Supported", "SUPPORTS").parsed == SUPPORTS
    assert score("fever", "false", "SUPPORTS").em == 0.0
    assert score("fever", "I don't know what to say", "NOT ENOUGH INFO").em == 0.0
    s = score("fever", "not enough info", "NOT ENOUGH INFO")
    assert (s.em, s.f1) == (1.0, 1.0)


@pytest.mark.parametrize(("text", "number"), [
    ("18", 18),
    ("She makes $18 every day.", 18),
    ("$1,234.50", Fraction("1234.50")),
    ("1,234,567", 1234567),
    ("The total is 3.75 dollars", Fraction("3.75")),
    ("-5", -5),
    ("It dropped to −7 degrees", -7),  # unicode minus
    ("from 3-5 apples, answer 8", 8),
    ("between 3-5", 5),  # a range's hyphen is not a minus sign
    ("1/2", Fraction(1, 2)),  # decided: a simple fraction is its value
    ("about 3/4 of it", Fraction(3, 4)),
    ("First 12, then 7, so 19.", 19),
    ("50%", 50),
    ("18.00", 18),
    (".5", Fraction(1, 2)),
    ("2**64 = 18446744073709551616", 18446744073709551616),
    ("no numbers here", None),
    ("", None),
    (None, None),
    ("on 10/12/2020", None),  # a date is not a fraction, nor three numbers
    ("abc123", None),  # digits glued to a word are not an answer
])
def test_extract_last_number(text, number):
    assert extract_last_number(text) == number


def test_gsm8k_numeric_tolerance():
    assert score("number", "The answer is 18.", "18").em == 1.0
    assert score("number", "18.00004", "18").em == 1.0  # within 1e-4
    assert score("number", "18.001", "18").em == 0.0
    assert score("number", "18.5", "18").em == 0.0
    assert score("number", "I think 17, no wait, 18", "18").em == 1.0  # the last number counts
    assert score("number", "18 or maybe 19", "18").em == 0.0
    assert score("number", "18446744073709551617", "18446744073709551616").em == 0.0  # exact, not float
    assert score("number", "1/2", "0.5").em == 1.0
    assert score("number", "no idea", "18").em == 0.0
    assert score("number", "no idea", "18").parsed is None
    assert score("number", "$1,234.50", "1234.5").parsed == "1234.5"


def test_number_scorer_accepts_aliases_exactly():
    assert score("number", "three", "3", ["three"]).em == 1.0
    assert score("number", "three", "3").em == 0.0


def test_unknown_scorer_raises():
    with pytest.raises(ValueError, match="unknown scorer"):
        score("bleu", "a", "b")


def test_vote_keys_group_equivalent_answers():
    assert vote_key("squad", "The Paris.") == vote_key("squad", "paris")
    assert vote_key("fever", "Supported") == vote_key("fever", "true") == SUPPORTS
    assert vote_key("number", "$18.00") == vote_key("number", "18") == "18"
    assert vote_key("number", "no number") == "no number"
