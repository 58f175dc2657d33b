"""Reflexion's trials in a panel: each trial is one line, "Trial 2 of 3 · ✗ · reflection: …", with its steps, its
verdict and its reflection collapsed under it (a Chatbot message with a title and an ``id``, the trial's messages
carrying it as their ``parent_id``).

Pure text helpers for :class:`ui.core.render.Panel`, which owns the messages. Model text in a title is made plain
(titles render as Markdown) and cut to a short line; the full text stays in the messages under it.
"""

from __future__ import annotations

from agents.events import Evaluation, Trial
from ui.core.safe_text import plain

RUNNING = " · running…"
ANSWER_CHARS = 40  # the trial's answer in its line
REFLECTION_CHARS = 90  # the reflection in its line


def short(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters (an ellipsis when cut), made plain for a title."""
    one = " ".join((text or "").split())
    return plain(one if len(one) <= limit else one[: limit - 1].rstrip() + "…")


def head(title: str) -> str:
    """"Trial 2 of 3" from any of a trial's titles."""
    return title.split(" · ")[0]


def started(event: Trial) -> tuple[str, str]:
    """A trial's line while it runs, and what it holds above its steps."""
    what = ("A plain ReAct run." if event.n == 1 else
            "ReAct again, with the reflections on the failed trials so far in its prompt.")
    return f"Trial {event.n} of {event.of}{RUNNING}", f"_{what}_"


def judged(title: str, event: Evaluation) -> str:
    """The line once the evaluator has spoken: ✓ or ✗, and the trial's answer."""
    answer = f"answer: {short(event.answer, ANSWER_CHARS)}" if (event.answer or "").strip() else "no answer"
    return f"{head(title)} · {'✓' if event.correct else '✗'} · {answer}"


def reflected(title: str, text: str) -> str:
    """The line of a failed trial once reflected upon: the reflection, cut to a short line, instead of the answer."""
    mark = title.split(" · ")[1] if title.count(" · ") else "✗"
    return f"{head(title)} · {mark} · reflection: {short(text, REFLECTION_CHARS)}"


def ended(title: str, why: str) -> str:
    """The line of a trial that ended before its verdict (a model error, a stop)."""
    return title.replace(RUNNING, f" · {why}") if title.endswith(RUNNING) else title
