"""The right answer on the page: ✓ / ✗ and F1 per mode in the table, the metrics lines and the export.

Pure functions over finished traces and the expected answer (``agents.correctness.judge``), shared
by live runs, replays and exports. With no expected answer everything renders exactly as before.
"""

from __future__ import annotations

import re
from typing import Any

from agents.agreement import expected_line
from agents.correctness import Verdict, clean_expected, judge
from agents.trace import Trace
from ui.core.safe_text import escape_html
from ui.core.table import Claims, comparison_markdown

MAX_EXPECTED_CHARS = 500  # an expected answer is a short answer, not an essay
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def expected_problem(expected: Any) -> str | None:
    """One line when ``expected`` cannot be an expected answer (the API may send anything), else None."""
    if expected is None or isinstance(expected, str) and len(expected) <= MAX_EXPECTED_CHARS:
        return None
    if not isinstance(expected, str):
        return "The expected answer must be text (or left empty)."
    return f"The expected answer is {len(expected):,} characters long; the limit is {MAX_EXPECTED_CHARS}."


def verdicts(traces: dict[str, Trace], expected: str | None, question: str | None = None) -> dict[str, Verdict]:
    """Each mode's answer judged against ``expected``; empty when there is no expected answer."""
    expected = clean_expected(expected)
    if expected is None:
        return {}
    return {mode: judge(t.answer, expected, question or t.question) for mode, t in traces.items()}


def verdict_note(verdict: Verdict) -> str:
    """"✓ F1 1.00" — what the metrics line and the table show for one mode."""
    return f"{verdict.mark} F1 {verdict.f1:.2f}"


def metrics_with_verdict(line: str, trace: Trace, expected: str | None, *, running: bool) -> str:
    """The metrics line under a panel, with ✓ / ✗ and F1 once the mode has finished (if an answer is expected)."""
    expected = clean_expected(expected)
    if running or expected is None or not line or line == "_not run_":
        return line
    return f"{line} · {verdict_note(judge(trace.answer, expected, trace.question))}"


def comparison_table(traces: dict[str, Trace], expected: str | None, question: str | None = None,
                     claims: Claims | None = None) -> str:
    """The after-run table; with an expected answer, a ✓ / ✗ column and an F1 column after "Answer",
    and a last line naming the expected answer and how many modes got it (``claims``: ``comparison_markdown``'s)."""
    judged = verdicts(traces, expected, question)
    table = comparison_markdown(traces, {mode: v.correct for mode, v in judged.items()} if judged else None, claims)
    if not table or not judged:
        return table
    lines = table.split("\n")
    rows = iter(judged.values())
    at = None
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            continue
        cells = _CELL_SPLIT.split(line)
        if at is None:  # the header: put the new columns after "Answer" (or last)
            names = [c.strip() for c in cells]
            at = names.index("Answer") + 1 if "Answer" in names else len(cells) - 1
            new = [" Correct ", " F1 "]
        elif set(line) <= set("|-: "):
            new = [":-:", "---:"]
        else:
            verdict = next(rows, None)
            new = [f" {verdict.mark} ", f" {verdict.f1:.2f} "] if verdict else [" ", " "]
        lines[i] = "|".join([*cells[:at], *new, *cells[at:]])
    right = sum(v.correct for v in judged.values())
    shown = escape_html(clean_expected(expected) or "").replace("|", "\\|")
    return "\n".join(lines) + f"\n\n**Expected answer:** {shown} — {expected_line(right, len(judged))}."


def export_fields(traces: dict[str, Trace], expected: str | None, question: str | None = None) -> dict[str, Any]:
    """What an export adds: ``expected`` (None when none was given) and each mode's verdict."""
    judged = verdicts(traces, expected, question)
    return {"expected": clean_expected(expected), "verdicts": {m: v.to_dict() for m, v in judged.items()}}
