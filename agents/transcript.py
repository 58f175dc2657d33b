"""The pieces of a trace's Markdown transcript (``Trace.to_markdown``): inputs, outputs, quotes, Reflexion lines."""

from __future__ import annotations

import json

from agents.events import Evaluation, Reflection, Trial


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
