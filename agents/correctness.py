"""Is a mode's answer right? The paper's scoring against an expected answer, for one question.

``judge(answer, expected)`` gives a :class:`Verdict`: correct (✓) or not (✗), with the paper's
token F1 beside it. Text answers use the paper's scorer exactly (SQuAD normalisation, exact match,
HotpotQA's F1 — ``agents.answers``, which the benchmark's scoring also uses). A numeric expected
answer ("396", "12,345", "= 396", "3.96e2") is matched by value within the benchmark's tolerance, GSM8K-style: the last
number the answer states counts, so "17 * 23 + 5 = 396" is right and "3.96 × 10²" would need to
be written as a number. Numbers the question already contains are not taken as the answer
("There are 1,229 primes below 10,000" answers 1229, not 10,000) when the question is given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from agents.answers import NUMBER_TOLERANCE, exact_match, f1_score

CORRECT, WRONG = "✓", "✗"

# A number as people and models write it: optional sign, digits with optional thousands separators
# (comma, thin or no-break space, underscore), decimals, an exponent ("3.96e2"), or a fraction "1/2".
_NUMBER = re.compile(
    r"(?<![\w./])(?P<sign>[-+])?(?P<num>\d{1,3}(?:[,\u202f\u00a0_]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<exp>[eE][-+]?\d+)?(?:/(?P<den>\d+))?(?![\w/])"
)
_SIGNS = str.maketrans({"−": "-", "–": "-"})
# Past these, a run of digits is data (a dump, a power printed whole), never an answer: it is not read as a
# number, so no text can make the scoring build a huge value ("1e999999999" costs seconds and memory).
_MAX_DIGITS, _MAX_EXPONENT = 300, 300
# What may surround the single number of a numeric expected answer: "= 396", "≈ 1785.25", "396."
_NUMERIC_ONLY = re.compile(r"^\s*[=≈~]?\s*(?P<n>\S+?)\s*\.?\s*$")


@dataclass(frozen=True)
class Verdict:
    """One answer judged: ``correct`` (exact match, or the same number), ``f1`` in 0–1, and how."""

    correct: bool
    f1: float
    em: float
    method: str  # "number" (compared by value) or "text" (the paper's exact match)
    parsed: str | None = None  # the number read from the answer, for the record

    @property
    def mark(self) -> str:
        """"✓" or "✗" — exactly those characters (the table, the metrics line and the MCP tool show them)."""
        return CORRECT if self.correct else WRONG

    def to_dict(self) -> dict[str, object]:
        return {"correct": self.correct, "mark": self.mark, "f1": round(self.f1, 4), "em": self.em,
                "method": self.method, "parsed": self.parsed}


def numbers_in(text: str | None) -> list[Fraction]:
    """Every number in ``text``, in order, exactly ("12,345" → 12345, "3.96e2" → 396, "1/2" → 1/2)."""
    return [value for value, _, _ in number_spans(text)]


def number_spans(text: str | None) -> list[tuple[Fraction, int, int]]:
    """Every number in ``text`` with where it is written: ``(value, start, end)``, in order."""
    spans = []
    for m in _NUMBER.finditer((text or "").translate(_SIGNS)):  # the translation keeps every position
        digits = re.sub(r"[,\u202f\u00a0_]", "", m["num"])
        if _too_long(digits, m):
            continue
        try:
            value = Fraction(digits + (m["exp"] or ""))
        except (ValueError, ZeroDivisionError):
            continue
        if m["den"] is not None:
            if int(m["den"]) == 0:
                continue
            value /= int(m["den"])
        spans.append((-value if m["sign"] == "-" else value, m.start(), m.end()))
    return spans


def _too_long(digits: str, m: re.Match[str]) -> bool:
    exponent = (m["exp"] or "e0")[1:].lstrip("+-").lstrip("0") or "0"
    return (len(digits) > _MAX_DIGITS or len(m["den"] or "") > _MAX_DIGITS
            or len(exponent) > 3 or int(exponent) > _MAX_EXPONENT)


def expected_number(expected: str | None) -> Fraction | None:
    """The value of an expected answer that is just one number ("396", "= 396", "12,345.0"), else None."""
    m = _NUMERIC_ONLY.match((expected or "").translate(_SIGNS))
    if m is None:
        return None
    found = numbers_in(m["n"])
    whole = _NUMBER.fullmatch(m["n"])
    return found[0] if whole is not None and len(found) == 1 else None


def _same(a: Fraction, b: Fraction) -> bool:
    return abs(a - b) <= Fraction(NUMBER_TOLERANCE)


def stated_number(answer: str | None, question: str | None = None, expected: Fraction | None = None) -> Fraction | None:
    """The number an answer states: its last one, skipping numbers the question already contains
    (unless that number is the expected one)."""
    given = numbers_in(question) if question else []
    candidates = [n for n in numbers_in(answer)
                  if not any(_same(n, g) for g in given) or (expected is not None and _same(n, expected))]
    return candidates[-1] if candidates else None


def number_text(value: Fraction) -> str:
    """A number's value written one way: "396" for 396, 396.0 and 3.96e2; "0.5" for 1/2."""
    if value.denominator == 1:
        return str(value.numerator)
    try:
        return f"{float(value):.10g}"
    except OverflowError:  # beyond a float's range: the same ten significant digits, by Decimal
        return f"{Decimal(value.numerator) / Decimal(value.denominator):.10g}"


def judge(answer: str | None, expected: str | None, question: str | None = None) -> Verdict:
    """The paper's scoring of one answer: exact match after normalisation, the same number within the
    tolerance for a numeric expected answer, and token F1 beside (1 or 0 for numbers, as for GSM8K)."""
    if not (answer or "").strip() or not (expected or "").strip():
        return Verdict(False, 0.0, 0.0, "text")
    assert expected is not None
    em = exact_match(answer, expected)
    target = expected_number(expected)
    if target is not None:
        value = stated_number(answer, question, target)
        hit = bool(em) or (value is not None and _same(value, target))
        return Verdict(hit, float(hit), em, "number", None if value is None else number_text(value))
    return Verdict(bool(em), f1_score(answer, expected), em, "text")


def clean_expected(expected: object) -> str | None:
    """An expected answer as the app receives it → stripped text, or None when there is none."""
    if not isinstance(expected, str):
        return None
    text = " ".join(expected.split())
    return text or None
