"""Which modes' answers agree, said truthfully: the one sentence under the page's table, in the CLI's summary and
in the export, and the votes CoT-SC counts.

Only real answers count ("I don't know" is none); answers that agree only because every one was forced, or that
all miss the expected answer, are said to be so ("all three forced to the same wrong answer"), never "all answers
agree". Pure functions of finished traces (and, when an answer is expected, whether each mode got it).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agents.modes.registry import mode_title
from agents.parsing import has_format_labels

if TYPE_CHECKING:  # the modes vote with gave_answer; a trace is only read here, never made
    from agents.trace import Trace

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# "I don't know" and its kin, normalised (no punctuation, no articles): saying it is not giving an answer
_NON_ANSWER = re.compile(
    r"^(?:(?:i )?(?:(?:really |just )?(?:do not|don t|dont|cannot|can not|can t|am not sure|m not sure|am unable to"
    r"|m unable to|have no idea)(?: really)?(?: (?:know|answer|tell|say|determine|find|be sure))?)|unknown|no answer"
    r"|not sure|unsure|no idea|none|n a|not known|cannot be determined|insufficient information)\b"
)
_NON_ANSWER_WORDS = 8  # longer than this, an answer that opens with "I don't know" goes on to give one
_HOW_MANY = {2: "both", 3: "all three", 4: "all four", 5: "all five", 6: "all six", 7: "all seven"}


def normalize_answer(text: str | None) -> str:
    """SQuAD-style, for agreement: lower case, no punctuation, no articles, single spaces.

    Unlike the paper's scorer (``agents.answers.normalize_answer``, which must stay exactly the paper's), it keeps
    ``.`` and ``-`` inside numbers, so "3.5" and "35" do not count as agreeing, and an answer that is only an
    article ("A", a multiple-choice letter) keeps it.
    """
    t = (text or "").lower().replace(",", "")
    t = "".join(c if c not in string.punctuation or c in ".-" else " " for c in t)
    t = re.sub(r"(?<!\d)[.-]|[.-](?!\d)", " ", t)
    return " ".join(_ARTICLES.sub(" ", t).split()) or " ".join(t.split())


def gave_answer(text: str | None) -> bool:
    """True for a real answer: not empty, not the raw step format, not "I don't know" (or "unknown", "no idea")."""
    norm = normalize_answer(text)
    if not norm or has_format_labels(text or ""):
        return False
    return not (_NON_ANSWER.match(norm) and len(norm.split()) <= _NON_ANSWER_WORDS)


def answers_agree(a: str | None, b: str | None) -> bool:
    """Same normalised text, the same numbers, or a short answer contained word-for-word in the other."""
    na, nb = normalize_answer(a), normalize_answer(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    nums_a, nums_b = set(_NUMBER.findall(na)), set(_NUMBER.findall(nb))
    if nums_a or nums_b:
        return nums_a == nums_b and bool(nums_a)
    short, long_ = sorted((na, nb), key=len)
    return len(short.split()) <= 5 and f" {short} " in f" {long_} "


def agreement(traces: dict[str, Trace], correct: Mapping[str, bool] | None = None) -> str:
    """One sentence: which modes' answers agree. Only real answers count: modes that all said "I don't know"
    (or gave no answer) do not agree, no mode answered. ``correct`` (each mode's verdict, when an answer is
    expected) and the forced answers qualify it: agreement on a wrong or a forced answer is said to be that."""
    answered = {m: t.answer for m, t in traces.items() if gave_answer(t.answer)}
    names = {m: mode_title(m) for m in traces}
    if len(traces) < 2:
        return "Only one mode was run: nothing to compare."
    if not answered:
        return "∅ No mode answered: nothing to compare."
    if len(answered) < 2:
        return "Fewer than two modes produced an answer: nothing to compare."
    groups: list[list[str]] = []
    for m in answered:
        for g in groups:
            if answers_agree(answered[g[0]], answered[m]):
                g.append(m)
                break
        else:
            groups.append([m])
    missing = [names[m] for m in traces if m not in answered]
    tail = f" ({', '.join(missing)}: no answer)" if missing else ""
    forced = {m for m in answered if traces[m].forced}
    wrong = {m for m in answered if correct is not None and m in correct and not correct[m]}
    if len(groups) == 1:
        return _all_agree(groups[0], forced, wrong, names, whole=not missing) + tail + "."
    if all(len(g) == 1 for g in groups):
        return "✗ The answers all differ" + tail + "."
    parts = [" and ".join(names[m] for m in g) + (f" agree{_flags(g, forced, wrong, names)}" if len(g) > 1
                                                   else " differs") for g in groups]
    return "⚖ " + "; ".join(parts) + tail + "."


def _all_agree(group: list[str], forced: set[str], wrong: set[str], names: dict[str, str], *, whole: bool) -> str:
    """The sentence when every answer given is the same: agreement only when it is worth the word."""
    who = _HOW_MANY.get(len(group), f"all {len(group)}") if whole else f"the {len(group)} that answered"
    who = who[:1].upper() + who[1:]
    if set(group) <= wrong:
        return f"✗ {who} {'forced to' if set(group) <= forced else 'gave'} the same wrong answer" + (
            f" ({_possessive(group, forced, names)} forced)" if forced & set(group) and not set(group) <= forced
            else "")
    if set(group) <= forced:
        return f"⚠ {who} forced to the same answer: none finished on its own"
    if forced & set(group):
        return f"⚖ The answers agree, but {_possessive(group, forced, names)} forced"
    return "✔ All answers agree" if whole else "✔ The answers given agree"


def _flags(group: list[str], forced: set[str], wrong: set[str], names: dict[str, str]) -> str:
    """" (both wrong, both forced)": what makes a group's agreement worth less."""
    flags = []
    if set(group) <= wrong:
        flags.append(f"{_HOW_MANY.get(len(group), 'all')} wrong")
    if set(group) <= forced:
        flags.append(f"{_HOW_MANY.get(len(group), 'all')} forced")
    elif forced & set(group):
        flags.append(f"{_possessive(group, forced, names)} forced")
    return f" ({', '.join(flags)})" if flags else ""


def _possessive(group: list[str], forced: set[str], names: dict[str, str]) -> str:
    """"Think-only's was" / "Act-only's and ReAct's were": the forced ones of a group."""
    them = [f"{names[m]}'s" for m in group if m in forced]
    return " and ".join(them) + (" was" if len(them) == 1 else " were")


def expected_line(right: int, judged: int) -> str:
    """"2 of 3 right": how many modes got the expected answer."""
    return f"{right} of {judged} right"
