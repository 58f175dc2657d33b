"""Page assembly after (and under) the panels: the metrics line, the comparison table and its agreement sentence
(what agrees is the engine's: ``agents/agreement.py``, which the CLI prints too).

Pure functions of finished or running traces, shared by live runs, replays and exports.
"""

from __future__ import annotations

from collections.abc import Mapping

from agents.agreement import agreement, answers_agree, gave_answer, normalize_answer  # noqa: F401 - the table's API
from agents.grounding import MARKS, claims_of, counts
from agents.llm.pricing import cost_text
from agents.modes.registry import mode_title
from agents.parsing import has_format_labels
from agents.trace import Trace, metrics_line
from ui.core.safe_text import escape_html, plain

NO_FORCED_ANSWER = "(no answer: forced after the step limit)"
NBSP = "\u00a0"  # inside a number's cell ("1254 / 46", "0.4 s"), so a narrow column never breaks the number


def metrics_markdown(trace: Trace | None, *, running: bool = False) -> str:
    """The line under a panel (Markdown): steps, calls, tokens, seconds and flags; live while running."""
    if trace is None:
        return "_not run_"
    return ("● " if running else "") + plain(metrics_line(trace))


def answer_text(text: str | None) -> str | None:
    """An answer as the page shows it: None when there is none to show (an old recording's forced answer that
    is the raw ``Thought:`` / ``Action:`` reply counts as none)."""
    return text if text and text.strip() and not has_format_labels(text) else None


Claims = Mapping[str, Mapping[str, int]]  # per mode, how many of its answer's claims are backed, given, unbacked


def claim_counts(traces: Mapping[str, Trace], claims: Claims | None = None) -> dict[str, dict[str, int]]:
    """Each mode's claim counts: ``claims`` where it has the mode (the map's, which knows a follow-up's earlier
    turns), else read from the trace (``agents.grounding.claims_of``)."""
    return {m: dict((claims or {}).get(m) or counts(claims_of(t))) for m, t in traces.items()}


def comparison_rows(traces: dict[str, Trace], claims: Claims | None = None) -> list[dict]:
    """One row per mode: the export's ``comparison.rows`` (keys are only ever added: ``trials`` is the number
    of Reflexion trials, None for a mode without trials; ``steps`` counts Think-only's one reasoning step;
    ``cost_usd`` is an estimate from the tokens, None when no price is known; ``claims`` counts the answer's
    claims by grounding mark, :func:`claim_counts`)."""
    marks = claim_counts(traces, claims)
    rows = []
    for mode, t in traces.items():
        mine = t.answer if gave_answer(t.answer) else None
        others = [mode_title(o) for o, u in traces.items()
                  if o != mode and mine and gave_answer(u.answer) and answers_agree(mine, u.answer)]
        rows.append({
            "mode": mode,
            "answer": t.answer,
            "forced": t.forced,
            "error": t.error,
            "steps": t.step_count,
            "trials": len(t.trials) or None,
            "llm_calls": t.llm_calls,
            "tool_calls": t.tool_calls,
            "prompt_tokens": t.prompt_tokens,
            "completion_tokens": t.completion_tokens,
            "tokens_estimated": t.tokens_estimated,
            "elapsed_s": round(t.elapsed_s, 2),
            "waiting_s": round(t.waiting_s, 2),  # of elapsed_s, spent waiting for the model server
            "cost_usd": t.cost,  # tokens × price; None without a price (agents.llm.pricing)
            "agrees_with": others,
            "claims": marks[mode],
        })
    return rows


def _cell(text: str | None, limit: int = 160) -> str:
    t = " ".join((text or "").split())
    t = t if len(t) <= limit else t[: limit - 1] + "…"
    return escape_html(t).replace("|", "\\|")


def answer_cell(trace: Trace) -> str:
    """The Answer cell: the answer (flagged when forced), the error, or what stands for no answer."""
    answer = _cell(answer_text(trace.answer))
    if answer:
        return answer + (" _(forced)_" if trace.forced else "")
    if trace.error:
        return f"⚠ {_cell(trace.error)}"
    return NO_FORCED_ANSWER if trace.forced else "—"


def number_cell(text: str) -> str:
    """A cell holding numbers: its spaces made non-breaking, so "1254 / 46" or "0.4 s" stays on one line."""
    return text.replace(" ", NBSP)


def claims_cell(counted: Mapping[str, int]) -> str:
    """"3 backed · 1 given · 1 unbacked" (the grounding marks of an answer's claims), "—" without claims."""
    return " · ".join(f"{counted[m]}{NBSP}{m}" for m in MARKS if counted.get(m)) or "—"


def comparison_markdown(traces: dict[str, Trace], correct: Mapping[str, bool] | None = None,
                        claims: Claims | None = None) -> str:
    """The after-run table: answer, steps (and Reflexion's trials), tool calls, tokens (and their cost when a price
    is known), the mode's own time (waiting for the model server left out), agreement (``correct``: each mode's
    verdict, when an answer is expected), and the grounding marks of the answer's claims."""
    if not traces:
        return ""
    rows = comparison_rows(traces, claims)
    trials = any(row["trials"] for row in rows)
    priced = any(row["cost_usd"] is not None for row in rows)
    head = ("| Mode | Answer | Steps |" + (" Trials |" if trials else "") + " Tool calls | Tokens in / out |"
            + (" Cost |" if priced else "") + " Time | Agrees with | Claims |\n|---|---|---:|"
            + ("---:|" if trials else "") + "---:|---:|" + ("---:|" if priced else "") + "---:|---|---|")
    lines = [head]
    for row, trace in zip(rows, traces.values(), strict=True):
        est = "~" if row["tokens_estimated"] else ""
        tried = f" {row['trials'] or ''} |" if trials else ""
        tokens = number_cell(f"{est}{row['prompt_tokens']} / {est}{row['completion_tokens']}")
        seconds = number_cell(f"{trace.own_s:.1f} s")
        cost = f" {number_cell(cost_text(row['cost_usd'], row['tokens_estimated']) or '—')} |" if priced else ""
        lines.append(
            f"| **{mode_title(row['mode'])}** | {answer_cell(trace)} | {row['steps']} |{tried} {row['tool_calls']} | "
            f"{tokens} |{cost} {seconds} | {', '.join(row['agrees_with']) or '—'} | {claims_cell(row['claims'])} |"
        )
    return "\n".join(lines) + f"\n\n**{agreement(traces, correct)}**"
