"""A stand-in model's policy for the stepping tests: calculator steps, one per reply, then the answer."""

from __future__ import annotations

from collections.abc import Callable

from agents.llm.stub_replies import Responder, StubReply


def calculator_steps(steps: int, answer: str, action_input: Callable[[int], str],
                     guess: str | None = None) -> Responder:
    """``steps`` replies each calling the calculator with ``action_input(step)`` (steps counted from the
    observations so far, from 0), then ``Final Answer: <answer>``. With ``guess``, a mode without tools (no
    "Action Input" in its system prompt) answers ``guess`` at once."""

    def respond(body: dict) -> StubReply:
        messages = body.get("messages") or []
        system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")
        seen = sum(str(m.get("content") or "").count("Observation") for m in messages if m.get("role") == "user")
        if guess is not None and "Action Input" not in system:
            return StubReply(text=f"Thought: Without tools I guess.\nFinal Answer: {guess}")
        if seen >= steps:
            return StubReply(text=f"Thought: Done.\nFinal Answer: {answer}")
        return StubReply(text=f"Thought: Step {seen + 1}.\nAction: calculate\nAction Input: {action_input(seen)}")

    return respond
