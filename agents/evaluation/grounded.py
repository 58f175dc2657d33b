"""The benchmark's grounding shares, beside the ReAct paper's error analysis (Yao et al., ICLR 2023, Table 2).

The paper labelled HotpotQA trajectories by hand: 14 % of chain-of-thought's correct answers rested on
hallucinated reasoning or facts, against 6 % of ReAct's; 56 % of CoT's failures were hallucinations, and none of
ReAct's. Here, for each mode, two shares made by string matching instead (``agents/grounding.py``): of its correct
answers, those with an unbacked claim; of its wrong answers, those with one. A pair that gave no answer (an error,
an empty forced answer) is in neither. The figures live in the summary under each mode's ``grounding`` and in a
table of their own (:func:`grounding_table`), so the main table stays as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.evaluation.tables import text_table
from agents.grounding import claims_of, counts
from agents.modes.registry import list_modes, table_title
from agents.trace import Trace

PAPER_SOURCE = "ReAct (Yao et al., ICLR 2023), Table 2: human labels of HotpotQA trajectories, PaLM-540B"
PAPER_SHARES = {"CoT": (0.14, 0.56), "ReAct": (0.06, 0.0)}  # paper row → (correct with, wrong with) hallucinations
NOTE = ("The paper's shares are human labels (hallucinated reasoning or facts); ours are string matches: an answer "
        "with a claim found in neither the question nor any observation its mode received. A paraphrase is not "
        "matched, and a backed claim can still be wrong.")
HEADERS = ["Mode", "Correct answers", "Correct: with an unbacked claim %", "Paper: correct, hallucinated %",
           "Wrong answers", "Wrong: with an unbacked claim %", "Paper: wrong, hallucination %"]


def record_claims(trace: Trace) -> dict[str, int]:
    """A pair's claim counts for its record: ``{"backed": n, "given": n, "unbacked": n}``."""
    return counts(claims_of(trace))


def grounding_stats(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One mode's shares: ``correct`` and ``wrong`` answers counted (records with claim counts and an answer), how
    many of each have an unbacked claim, and the two shares (None when there is none to divide by)."""
    judged = [r for r in records if isinstance(r.get("claims"), dict) and (r.get("prediction") or "").strip()]
    right = [r for r in judged if r.get("em") == 1]
    wrong = [r for r in judged if r.get("em") != 1]
    right_with = sum(1 for r in right if r["claims"].get("unbacked"))
    wrong_with = sum(1 for r in wrong if r["claims"].get("unbacked"))
    return {"correct": len(right), "correct_unbacked": right_with, "wrong": len(wrong), "wrong_unbacked": wrong_with,
            "correct_share": right_with / len(right) if right else None,
            "wrong_share": wrong_with / len(wrong) if wrong else None}


def paper_shares(mode: str) -> tuple[float, float] | None:
    """The paper's (correct, wrong) shares with hallucinations for ``mode``'s row of Table 2 (CoT, ReAct)."""
    row = next((s.paper_row for s in list_modes() if s.id == mode), None)
    return PAPER_SHARES.get(row or "")


def grounding_table(summary: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Headers and one row per mode: its correct and wrong answers, the shares with an unbacked claim in percent,
    and the paper's beside them (None where the paper has none, or the run had no such answer)."""
    rows = []
    for mode, stats in summary["modes"].items():
        g = stats.get("grounding") or grounding_stats([])
        paper = paper_shares(mode)
        rows.append([table_title(mode), g["correct"], _pct(g["correct_share"]), _pct(paper[0] if paper else None),
                     g["wrong"], _pct(g["wrong_share"]), _pct(paper[1] if paper else None)])
    return HEADERS, rows


def format_grounding(summary: dict[str, Any]) -> str:
    """The table for the terminal, with its note and the paper's source."""
    return "\n".join(["Grounding: answers with an unbacked claim", *text_table(*grounding_table(summary)), NOTE,
                      f"Paper: {PAPER_SOURCE}."])


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100 * value, 1)
