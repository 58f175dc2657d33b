"""The toy model: a tiny deterministic policy the stand-in servers answer with, for demos and end-to-end tests.

It answers arithmetic questions with the calculator in whatever protocol the request uses (written
arithmetic, "3.7% of 48,250", "seconds in 13 weeks": :func:`toy_expression`), plays
Reflexion's self-check and reflection, and (:func:`talkative`) can reason at length for the bench.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from agents.llm.stub_replies import Responder, StubReply
from tools.calculator import evaluate
from tools.registry import ToolFailure

# Arithmetic as written in a question: numbers joined by operators ("17 * 23 + 5", "(2 + 3) × 4"); a lone
# number ("the 30th", "below 10,000") is not something the toy can compute.
_NUMBER = r"[-(]*\d+(?:\.\d+)?\)*"
_ARITH = re.compile(rf"{_NUMBER}(?:\s*[-+*/×÷^]\s*{_NUMBER})+")
# Two question shapes the toy turns into an expression for the calculator (it knows how to write them, not the
# result): a percentage ("3.7% of 48,250", rounded when asked) and a chain of time units ("seconds in 13 weeks").
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%\s*of\s*(\d[\d,]*(?:\.\d+)?)")
_ROUNDED = re.compile(r"rounded to (\d+|one|two|three) decimal", re.I)
_UNITS = re.compile(r"how many (second|minute|hour|day)s? (?:are there )?in (\d+) (minute|hour|day|week)s?", re.I)
_NEXT_UNIT = {"week": (7, "day"), "day": (24, "hour"), "hour": (60, "minute"), "minute": (60, "second")}
_DIGITS = {"one": "1", "two": "2", "three": "3"}
UNKNOWN = "I don't know"
WHY_NOT = "I am a toy model: I can only do arithmetic with the calculator, and this is not an arithmetic expression."


def toy_policy(body: dict[str, Any]) -> StubReply:
    """A tiny deterministic 'model' for demos and end-to-end tests.

    It follows whatever protocol the request uses: with ``tools=`` it makes a native
    ``calculate`` call for the arithmetic in the question; with the text protocol it writes
    ``Action: calculate``; under CodeAct's prompt it writes a program that prints
    ``calculate(...)``; once it sees an observation it answers with it (CodeAct: ``final_answer``).
    Without tools it states a wrong estimate with a number, as a model doing mental arithmetic might
    (:func:`estimate`). It never knows the
    answer in advance: the number comes from the calculator's observation. Anything but an arithmetic
    expression gets its honest "I don't know". Asked to check an attempt (Reflexion's self-check) it
    trusts one that used a tool; asked to reflect on a failed one, it plans to compute.
    """
    messages = body.get("messages") or []
    reflexion = _reflexion_reply(str((messages[-1] if messages else {}).get("content") or ""))
    if reflexion is not None:
        return StubReply(text=reflexion)
    system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")
    question = _question_of(messages)
    last = messages[-1] if messages else {}
    expression = toy_expression(question)
    wants_thoughts = "Thought" in system
    if body.get("tools"):
        if last.get("role") == "tool":
            return StubReply(text=f"The calculator says {last.get('content')}.")
        if expression:
            return StubReply(text="I should compute this exactly." if wants_thoughts else "",
                             tool_calls=[("calculate", {"expression": expression})])
        return StubReply(text=f"{UNKNOWN}. {WHY_NOT}")
    observation = _last_observation(last)
    if "final_answer(" in system and "<code>" in system:
        return _toy_program(expression, observation)
    if "Action Input" in system:
        thought = "Thought: The calculator answered.\n" if wants_thoughts else ""
        if observation is not None:
            return StubReply(text=f"{thought}Final Answer: {observation}")
        if expression:
            thought = "Thought: I need to compute this exactly.\n" if wants_thoughts else ""
            return StubReply(text=f"{thought}Action: calculate\nAction Input: {expression}\nObservation: 42")
        thought = f"Thought: {WHY_NOT}\n" if wants_thoughts else ""
        return StubReply(text=f"{thought}Final Answer: {UNKNOWN}.")
    if not expression or (guess := estimate(expression)) is None:
        return StubReply(text=f"Thought: {WHY_NOT}\nFinal Answer: {UNKNOWN}.")
    return StubReply(text=f"Thought: Without a calculator I can only estimate: {expression} comes to about {guess}."
                          f"\nFinal Answer: about {guess}")


def estimate(expression: str) -> str | None:
    """A wrong estimate, as a model without a calculator makes one: the value rounded to two significant figures,
    nudged when that happens to be exact ("about 400" for 17 * 23 + 5 = 396); None when it cannot be computed."""
    try:
        value = float(evaluate(expression))
    except (ToolFailure, TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(value):
        return None
    if value == 0:
        return "1"
    power = math.floor(math.log10(abs(value))) - 1  # the second significant figure
    rough = round(value / 10**power) * 10**power
    rough = rough + 10**power if math.isclose(rough, value) else rough
    return f"{rough:,.{max(0, -power)}f}"


def _question_of(messages: list[dict[str, Any]]) -> str:
    """The question being asked: the last ``Question:`` message (a follow-up's earlier turns come before it),
    else the first user message."""
    users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    return next((u for u in reversed(users) if u.startswith("Question:")), users[0] if users else "")


def toy_expression(question: str) -> str:
    """The calculator expression the toy writes for ``question``: its arithmetic as written, a percentage, or a
    unit chain; "" when the question is none of these."""
    written = max((m.group(0) for m in _ARITH.finditer(question)), key=len, default="").strip(" .?")
    if written:
        return written
    if percent := _PERCENT.search(question):
        share, whole = percent.group(1), percent.group(2).replace(",", "")
        expression = f"{whole} * {share} / 100"
        if rounded := _ROUNDED.search(question):
            return f"round({expression}, {_DIGITS.get(rounded.group(1).lower(), rounded.group(1))})"
        return expression
    if units := _UNITS.search(question):
        target, count, unit = units.group(1).lower(), units.group(2), units.group(3).lower()
        factors = [count]
        while unit != target and unit in _NEXT_UNIT:
            factor, unit = _NEXT_UNIT[unit]
            factors.append(str(factor))
        return " * ".join(factors) if unit == target and len(factors) > 1 else ""
    return ""


def _toy_program(expression: str, observation: str | None) -> StubReply:
    """CodeAct's toy step: print the calculator's result, then give what was printed to final_answer."""
    if observation is not None:
        return StubReply(text="Thought: The program printed the result.\n"
                              f"<code>\nfinal_answer({observation!r})\n</code>")
    if expression:
        return StubReply(text=f"Thought: I will compute this with the calculator.\n<code>\n"
                              f"result = calculate({expression!r})\nprint(result)\n</code>")
    return StubReply(text=f'Thought: {WHY_NOT}\n<code>\nfinal_answer("{UNKNOWN}.")\n</code>')


_FILLER = ("so the question asks for a number that I can work out step by step, first the product and then the sum, "
           "and although the arithmetic looks simple a careful reader checks each partial result before going on, "
           "because a model that hurries often drops a digit or carries the wrong value into the next line").split()


def talkative(words: int, policy: Responder = toy_policy) -> Responder:
    """``policy`` with ``words`` more words in every thought, as a model that reasons at length writes them
    (the bench's long replies). The thought stays one paragraph; actions and answers are unchanged."""
    padding = " ".join(_FILLER[i % len(_FILLER)] for i in range(words))

    def respond(body: dict[str, Any]) -> StubReply:
        reply = policy(body)
        messages = body.get("messages") or [{}]
        forbids = "no Thought" in str(messages[0].get("content") or "")  # Act-only's prompt
        if not words or forbids or not reply.text:
            return reply
        if "Thought:" in reply.text:
            text = re.sub(r"(Thought:[^\n]*)", lambda m: f"{m.group(1)} {padding}.", reply.text, count=1)
        else:  # a native tool call's thought, or a plain reply
            text = f"{reply.text} {padding}."
        return dataclasses.replace(reply, text=text)

    return respond


def _reflexion_reply(prompt: str) -> str | None:
    """The toy's reply to Reflexion's self-check or reflection prompt (``prompts/reflexion*.md``), else None."""
    if "Correct: yes or no" in prompt:
        used_tool = "\nObservation:" in prompt
        return ("Correct: yes\nWhy: the calculator computed it." if used_tool else
                "Correct: no\nWhy: nothing was computed with a tool.")
    if "Previous attempt:" in prompt:
        return ("The last attempt failed. Next time, compute the expression with the calculator and give "
                "exactly its result as the answer.")
    return None


def _last_observation(message: dict[str, Any]) -> str | None:
    content = str(message.get("content") or "")
    match = re.search(r"Observation[^:\n]*:\s*(.*)", content, re.S)
    if message.get("role") == "user" and match:
        return match.group(1).strip() or None
    return None

