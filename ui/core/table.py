"""Page assembly after (and under) the panels: the metrics line, the comparison table, the agreement sentence.

Pure functions of finished or running traces, shared by live runs, replays and exports.
"""

from __future__ import annotations

import re
import string

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


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# "I don't know" and its kin, normalised (no punctuation, no articles): saying it is not giving an answer
_NON_ANSWER = re.compile(
    r"^(?:(?:i )?(?:(?:really |just )?(?:do not|don t|dont|cannot|can not|can t|am not sure|m not sure|am unable to"
    r"|m unable to|have no idea)(?: really)?(?: (?:know|answer|tell|say|determine|find|be sure))?)|unknown|no answer"
    r"|not sure|unsure|no idea|none|n a|not known|cannot be determined|insufficient information)\b"
)
_NON_ANSWER_WORDS = 8  # longer than this, an answer that opens with "I don't know" goes on to give one


def normalize_answer(text: str | None) -> str:
    """SQuAD-style, for the agreement column: lower case, no punctuation, no articles, single spaces.

    Unlike the paper's scorer (``agents.evaluation.scoring.normalize_answer``, which must stay exactly
    the paper's), it keeps ``.`` and ``-`` inside numbers, so "3.5" and "35" do not count as agreeing.
    """
    t = (text or "").lower().replace(",", "")
    t = "".join(c if c not in string.punctuation or c in ".-" else " " for c in t)
    t = re.sub(r"(?<!\d)[.-]|[.-](?!\d)", " ", t)
    return " ".join(_ARTICLES.sub(" ", t).split())


def gave_answer(text: str | None) -> bool:
    """True for a real answer: not empty, not the raw step format, not "I don't know" (or "unknown", "no idea")."""
    norm = normalize_answer(text)
    if not norm or has_format_labels(text or ""):
        return False
    return not (_NON_ANSWER.match(norm) and len(norm.split()) <= _NON_ANSWER_WORDS)


def answer_text(text: str | None) -> str | None:
    """An answer as the page shows it: None when there is none to show (an old recording's forced answer that
    is the raw ``Thought:`` / ``Action:`` reply counts as none)."""
    return text if text and text.strip() and not has_format_labels(text) else None


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
    """One sentence: which modes' answers agree. Only real answers count: modes that all said "I don't know"
    (or gave no answer) do not agree, no mode answered."""
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
    if len(groups) == 1:
        return ("✔ All answers agree" if not missing else "✔ The answers given agree") + tail + "."
    if all(len(g) == 1 for g in groups):
        return "✗ The answers all differ" + tail + "."
    parts = [" and ".join(names[m] for m in g) + (" agree" if len(g) > 1 else " differs") for g in groups]
    return "⚖ " + "; ".join(parts) + tail + "."


def comparison_rows(traces: dict[str, Trace]) -> list[dict]:
    """One row per mode: the export's ``comparison.rows`` (keys are only ever added: ``trials`` is the number
    of Reflexion trials, None for a mode without trials; ``steps`` counts Think-only's one reasoning step;
    ``cost_usd`` is an estimate from the tokens, None when no price is known)."""
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
            "cost_usd": t.cost,  # tokens × price; None without a price (agents.llm.pricing)
            "agrees_with": others,
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


def comparison_markdown(traces: dict[str, Trace]) -> str:
    """The after-run table: answer, steps (and Reflexion's trials), tool calls, tokens (and their cost when a price
    is known), time, agreement."""
    if not traces:
        return ""
    rows = comparison_rows(traces)
    trials = any(row["trials"] for row in rows)
    priced = any(row["cost_usd"] is not None for row in rows)
    head = ("| Mode | Answer | Steps |" + (" Trials |" if trials else "") + " Tool calls | Tokens in / out |"
            + (" Cost |" if priced else "") + " Time | Agrees with |\n|---|---|---:|" + ("---:|" if trials else "")
            + "---:|---:|" + ("---:|" if priced else "") + "---:|---|")
    lines = [head]
    for row, trace in zip(rows, traces.values(), strict=True):
        est = "~" if row["tokens_estimated"] else ""
        tried = f" {row['trials'] or ''} |" if trials else ""
        tokens = number_cell(f"{est}{row['prompt_tokens']} / {est}{row['completion_tokens']}")
        seconds = number_cell(f"{row['elapsed_s']:.1f} s")
        cost = f" {number_cell(cost_text(row['cost_usd'], row['tokens_estimated']) or '—')} |" if priced else ""
        lines.append(
            f"| **{mode_title(row['mode'])}** | {answer_cell(trace)} | {row['steps']} |{tried} {row['tool_calls']} | "
            f"{tokens} |{cost} {seconds} | {', '.join(row['agrees_with']) or '—'} |"
        )
    return "\n".join(lines) + f"\n\n**{agreement(traces)}**"
