"""The pieces of a trace's Markdown transcript (``Trace.to_markdown``): inputs, outputs, quotes, Reflexion lines, and
the metrics line shown under a panel, by the CLI and in the transcript."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from agents.events import Evaluation, Reflection, Trial
from agents.llm import pricing

if TYPE_CHECKING:  # a trace is read here, never made
    from agents.trace import Trace


def reflexion_line(event: Trial | Evaluation | Reflection) -> str:
    """A Reflexion event as a transcript line: the trial's heading, its verdict (and who gave it), a reflection."""
    if isinstance(event, Trial):
        return f"#### Trial {event.n} of {event.of}"
    if isinstance(event, Evaluation):
        answer = "no answer" if event.answer is None else f"answer {quoted(event.answer)}"
        why = f": {event.reason}" if event.reason else ""
        return f"**{'✓ Correct' if event.correct else '✗ Not correct'}** ({answer}; {event.label}){why}"
    return f"**Reflection:** {event.text}"


def quoted(text: str, limit: int = 120) -> str:
    one_line = " ".join(text.split())
    return f"“{one_line[:limit]}{'…' if len(one_line) > limit else ''}”"


def fmt_output(text: str, quote: str) -> str:
    """An observation as a text block after its label; a nested call's result is quoted under its program."""
    block = f"```text\n{text}\n```"
    if quote:
        return "\n>\n" + "\n".join(f"> {line}" for line in block.split("\n"))
    return "\n\n" + block


def fmt_input(value: str | dict) -> str:
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value
    return f"`{text}`" if "\n" not in text else f"\n\n```text\n{text}\n```"


def metrics_line(trace: Trace) -> str:
    """One line of honest numbers for under a panel and the CLI; estimated tokens say so."""
    est = "~" if trace.tokens_estimated else ""
    parts = [
        _count(trace.step_count, "step"),
        _count(trace.llm_calls, "LLM call"),
        _count(trace.tool_calls, "tool call"),
        f"tokens {est}{trace.prompt_tokens} in / {est}{trace.completion_tokens} out",
        seconds_text(trace),
    ]
    if (cost := pricing.cost_text(trace.cost, trace.tokens_estimated)) is not None:
        parts.insert(-1, cost)  # beside the tokens it prices
    if trace.trials:
        parts.insert(0, _count(len(trace.trials), "trial"))
    if trace.forced:
        parts.append("forced answer")
    if trace.parse_errors:
        parts.append(_count(trace.parse_errors, "format retry", "format retries"))
    if trace.truncated_calls:
        parts.append("hit the token limit" + (f" ×{trace.truncated_calls}" if trace.truncated_calls > 1 else ""))
    if trace.error:
        parts.append("error")
    return " · ".join(parts)


def seconds_text(trace: Trace) -> str:
    """"317.0 s, 290.3 s of it waiting for the model server": the wall time, and the waiting apart when there was
    any worth saying (a tenth of a second)."""
    waited = trace.waiting_s
    tail = f", {waited:.1f} s of it waiting for the model server" if waited >= 0.05 else ""
    return f"{trace.elapsed_s:.1f} s{tail}"


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"
