"""The paper's scoring, and nothing cleverer: SQuAD EM/F1, FEVER labels, GSM8K's last number.

Open answers (HotpotQA, the hand-written set, a user's file) use the SQuAD normalisation and
HotpotQA's token F1 exactly as the ReAct code base does (``hotpotqa`` ``f1_score``, including its
rule that yes/no answers score F1 only on an exact match), so our EM is comparable to Table 1.
FEVER is an exact label match after mapping free text to a label; GSM8K compares the last
number in the answer with the gold number within a small tolerance.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from agents.answers import NUMBER_TOLERANCE, exact_match, f1_score, normalize_answer

SCORERS = ("squad", "fever", "number")
SUPPORTS, REFUTES, NEI = "SUPPORTS", "REFUTES", "NOT ENOUGH INFO"
FEVER_LABELS = (SUPPORTS, REFUTES, NEI)


@dataclass(frozen=True)
class Score:
    """One prediction scored: ``em`` and ``f1`` in 0–1, and what was parsed (label or number) for the record."""

    em: float
    f1: float
    parsed: str | None = None


# --- SQuAD / HotpotQA ------------------------------------------------------------------------------




def score_open(prediction: str | None, gold: str, aliases: Iterable[str] = ()) -> Score:
    """EM and F1, each the maximum over the gold answer and its accepted aliases."""
    golds = [gold, *aliases]
    return Score(max(exact_match(prediction, g) for g in golds), max(f1_score(prediction, g) for g in golds))


# --- FEVER -----------------------------------------------------------------------------------------

# Checked in this order at each position; the earliest match in the text wins, so
# "REFUTES — the claim that it is supported is false" is REFUTES, and "not supported" is
# read as a whole (it means the evidence falls short: NOT ENOUGH INFO) before "supported".
_FEVER_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (NEI, re.compile(
        r"\bnot enough (?:info|information|evidence)\b|\bnei\b|\binsufficient\b|\bunverifiable\b"
        r"|\bnot verifiable\b|\bcannot be (?:verified|determined|confirmed)\b|\bcan ?not (?:verify|determine|tell)\b"
        r"|\bcant (?:verify|determine|tell|say)\b|\bundetermined\b|\bunknown\b|\bnot support\w*|\bunsupported\b"
        r"|\bneither\b")),
    (REFUTES, re.compile(r"\brefut\w*|\bfalse\b|\bincorrect\b|\bcontradict\w*|\bnot true\b|\buntrue\b|\bwrong\b")),
    (SUPPORTS, re.compile(r"\bsupport\w*|\btrue\b|\bcorrect\b|\bverified\b|\bconfirm\w*")),
)


def fever_label(text: str | None) -> str | None:
    """Map a free-text answer to SUPPORTS / REFUTES / NOT ENOUGH INFO, or None when it names none.

    Handles the labels in any case ("Supported", "refutes", "NOT_ENOUGH_INFO", "NEI"), the
    plain words (true / false / insufficient information) and a bare yes or no.
    """
    norm = " ".join(re.sub(r"[^a-z0-9 ]", " ", (text or "").lower().replace("'", "")).split())
    if not norm:
        return None
    found = [(m.start(), rank, label) for rank, (label, pattern) in enumerate(_FEVER_PATTERNS)
             if (m := pattern.search(norm))]
    if found:
        return min(found)[2]
    first = norm.split()[0]
    return {"yes": SUPPORTS, "no": REFUTES}.get(first)


def score_fever(prediction: str | None, gold: str) -> Score:
    """Accuracy as the paper computes it: the mapped label equals the gold label."""
    label = fever_label(prediction)
    hit = float(label is not None and label == fever_label(gold))
    return Score(hit, hit, label)


# --- GSM8K -----------------------------------------------------------------------------------------

# A number: optional sign (not a hyphen inside a word or range), digits with optional thousands
# commas, optional decimals; or a simple fraction a/b. "1/2" is read as 0.5 because models write
# fractions and GSM8K's gold answers are exact; "10/12/2020" is not a fraction (a date).
_NUMBER = re.compile(
    r"(?<![\w/.])(?P<sign>-)?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:/(?P<den>\d+)(?![\d/]))?(?![\d/])"
)
_MINUS = str.maketrans({"−": "-", "–": "-"})


def extract_last_number(text: str | None) -> Fraction | None:
    """The last number in ``text`` ("$1,234.50" → 1234.5, "-3" → -3, "1/2" → 0.5), or None.

    Exact (a :class:`~fractions.Fraction`, equal to the float it reads as) so 2**64 and 2**64 + 1
    do not collapse into one float.
    """
    matches = list(_NUMBER.finditer((text or "").translate(_MINUS)))
    if not matches:
        return None
    m = matches[-1]
    value = Fraction(m["num"].replace(",", ""))
    if m["den"] is not None:
        if int(m["den"]) == 0:
            return None
        value /= int(m["den"])
    return -value if m["sign"] else value


def numbers_match(prediction: Fraction | None, gold: Fraction | None, tolerance: float = NUMBER_TOLERANCE) -> bool:
    """Equal within an absolute ``tolerance`` (so "18.00" and "18" match, "18.5" and "18" do not)."""
    return prediction is not None and gold is not None and abs(prediction - gold) <= Fraction(tolerance)


def format_number(value: Fraction) -> str:
    """An exact integer as digits, anything else as a short decimal."""
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.10g}"


def score_number(prediction: str | None, gold: str, aliases: Iterable[str] = ()) -> Score:
    """GSM8K: the answer's last number equals the gold number (aliases may also match exactly)."""
    value = extract_last_number(prediction)
    hit = numbers_match(value, extract_last_number(gold)) or any(exact_match(prediction, a) for a in aliases)
    return Score(float(hit), float(hit), None if value is None else format_number(value))


def score(scorer: str, prediction: str | None, gold: str, aliases: Iterable[str] = ()) -> Score:
    """Dispatch by scorer name ("squad" | "fever" | "number")."""
    if scorer == "squad":
        return score_open(prediction, gold, aliases)
    if scorer == "fever":
        return score_fever(prediction, gold)
    if scorer == "number":
        return score_number(prediction, gold, aliases)
    raise ValueError(f"unknown scorer {scorer!r}; expected one of {SCORERS}")


def vote_key(scorer: str, answer: str | None) -> str:
    """What two answers must share to count as the same vote in self-consistency."""
    if scorer == "fever":
        return fever_label(answer) or normalize_answer(answer)
    if scorer == "number":
        value = extract_last_number(answer)
        return format_number(value) if value is not None else normalize_answer(answer)
    return normalize_answer(answer)
