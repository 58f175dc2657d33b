"""Page assembly after (and under) the panels: the metrics line, the comparison table, the agreement sentence.

Pure functions of finished or running traces, shared by live runs, replays and exports.
"""

from __future__ import annotations

import re
import string

from agents.modes.registry import mode_title
from agents.trace import Trace, metrics_line
from ui.core.safe_text import escape_html, plain


def metrics_markdown(trace: Trace | None, *, running: bool = False) -> str:
    """The line under a panel (Markdown): steps, calls, tokens, seconds and flags; live while running."""
    if trace is None:
        return "_not run_"
    return ("● " if running else "") + plain(metrics_line(trace))


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def normalize_answer(text: str | None) -> str:
    """SQuAD-style, for the agreement column: lower case, no punctuation, no articles, single spaces.

    Unlike the paper's scorer (``agents.evaluation.scoring.normalize_answer``, which must stay exactly
    the paper's), it keeps ``.`` and ``-`` inside numbers, so "3.5" and "35" do not count as agreeing.
    """
    t = (text or "").lower().replace(",", "")
    t = "".join(c if c not in string.punctuation or c in ".-" else " " for c in t)
    t = re.sub(r"(?<!\d)[.-]|[.-](?!\d)", " ", t)
    return " ".join(_ARTICLES.sub(" ", t).split())


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


def agreement(traces: dict[str, Trace]) -> str:
    """One sentence: which modes' answers agree."""
    answered = {m: t.answer for m, t in traces.items() if t.answer}
    names = {m: mode_title(m) for m in traces}
    if len(traces) < 2:
        return "Only one mode was run: nothing to compare."
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
    if len(groups) == 1:
        return ("✔ All answers agree" if not missing else "✔ The answers given agree") + tail + "."
    if all(len(g) == 1 for g in groups):
        return "✗ The answers all differ" + tail + "."
    parts = [" and ".join(names[m] for m in g) + (" agree" if len(g) > 1 else " differs") for g in groups]
    return "⚖ " + "; ".join(parts) + tail + "."


def comparison_rows(traces: dict[str, Trace]) -> list[dict]:
    rows = []
    for mode, t in traces.items():
        others = [mode_title(o) for o, u in traces.items()
                  if o != mode and t.answer and answers_agree(t.answer, u.answer)]
        rows.append({
            "mode": mode,
            "answer": t.answer,
            "forced": t.forced,
            "error": t.error,
            "steps": len(t.steps),
            "llm_calls": t.llm_calls,
            "tool_calls": t.tool_calls,
            "prompt_tokens": t.prompt_tokens,
            "completion_tokens": t.completion_tokens,
            "tokens_estimated": t.tokens_estimated,
            "elapsed_s": round(t.elapsed_s, 2),
            "agrees_with": others,
        })
    return rows


def _cell(text: str | None, limit: int = 160) -> str:
    t = " ".join((text or "").split())
    t = t if len(t) <= limit else t[: limit - 1] + "…"
    return escape_html(t).replace("|", "\\|")


def comparison_markdown(traces: dict[str, Trace]) -> str:
    """The after-run table: answer, steps, tool calls, tokens, time, agreement."""
    if not traces:
        return ""
    head = ("| Mode | Answer | Steps | Tool calls | Tokens in / out | Time | Agrees with |\n"
            "|---|---|---:|---:|---:|---:|---|")
    lines = [head]
    for row in comparison_rows(traces):
        answer = _cell(row["answer"]) or (f"⚠ {_cell(row['error'])}" if row["error"] else "—")
        if row["forced"]:
            answer += " _(forced)_"
        est = "~" if row["tokens_estimated"] else ""
        lines.append(
            f"| **{mode_title(row['mode'])}** | {answer} | {row['steps']} | {row['tool_calls']} | "
            f"{est}{row['prompt_tokens']} / {est}{row['completion_tokens']} | {row['elapsed_s']:.1f} s | "
            f"{', '.join(row['agrees_with']) or '—'} |"
        )
    return "\n".join(lines) + f"\n\n**{agreement(traces)}**"
