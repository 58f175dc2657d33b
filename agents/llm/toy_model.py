"""The toy model: a tiny deterministic policy the stand-in servers answer with, for demos and end-to-end tests.

It answers arithmetic questions with the calculator in whatever protocol the request uses, plays
Reflexion's self-check and reflection, and (:func:`talkative`) can reason at length for the bench.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from agents.llm.stub_replies import Responder, StubReply

# Arithmetic as written in a question: numbers joined by operators ("17 * 23 + 5", "(2 + 3) × 4"); a lone
# number ("13 weeks", "the 30th") is not something the toy can compute.
_NUMBER = r"[-(]*\d+(?:\.\d+)?\)*"
_ARITH = re.compile(rf"{_NUMBER}(?:\s*[-+*/×÷^]\s*{_NUMBER})+")
UNKNOWN = "I don't know"
WHY_NOT = "I am a toy model: I can only do arithmetic with the calculator, and this is not an arithmetic expression."


def toy_policy(body: dict[str, Any]) -> StubReply:
    """A tiny deterministic 'model' for demos and end-to-end tests.

    It follows whatever protocol the request uses: with ``tools=`` it makes a native
    ``calculate`` call for the arithmetic in the question; with the text protocol it writes
    ``Action: calculate``; under CodeAct's prompt it writes a program that prints
    ``calculate(...)``; once it sees an observation it answers with it (CodeAct: ``final_answer``).
    Without tools it can only guess, as a model doing mental arithmetic might. It never knows the
    answer in advance: the number comes from the calculator's observation. Anything but an arithmetic
    expression gets its honest "I don't know". Asked to check an attempt (Reflexion's self-check) it
    trusts one that used a tool; asked to reflect on a failed one, it plans to compute.
    """
    messages = body.get("messages") or []
    reflexion = _reflexion_reply(str((messages[-1] if messages else {}).get("content") or ""))
    if reflexion is not None:
        return StubReply(text=reflexion)
    system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")
    question = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    last = messages[-1] if messages else {}
    expression = max((m.group(0) for m in _ARITH.finditer(question)), key=len, default="").strip(" .?")
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
    if not expression:
        return StubReply(text=f"Thought: {WHY_NOT}\nFinal Answer: {UNKNOWN}.")
    guess = f"roughly {expression}, I cannot compute it exactly"
    return StubReply(text=f"Thought: Without tools I can only estimate.\nFinal Answer: {guess}")


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

