"""A scripted run whose modes part ways, for the step-aligned map's browser tests and its picture in docs/.

A stand-in encyclopedia (a tool, deterministic and offline) and a stub-server responder (:func:`script`) that plays
each mode as a model would: Think-only reasons from memory (and misremembers), Act-only looks things up twice,
ReAct looks up, then computes. Their answers make claims of every mark. A question with ``(eight steps)`` in it
makes Act-only and ReAct each take four steps of their own (eight rows). Not collected by pytest (no ``test_``
prefix); imported by its package name so a run worker imports the tool too.
"""

from __future__ import annotations

import re
from typing import Any

from agents.llm.stub_server import StubReply
from tests.app.fault_kit import mode_of
from tools.calculator import calculate
from tools.registry import ToolRegistry, tool

QUESTION = "How tall is the Eiffel Tower in feet, and who built it?"
LONG = "(eight steps)"
ENTRIES = {
    "eiffel tower": "The Eiffel Tower is a wrought-iron lattice tower in Paris, built by Gustave Eiffel's company and "
                    "completed in 1889. It is 330 metres (1,083 ft) tall.",
    "paris": "Paris is the capital of France, on the Seine.",
    "france": "France is a country in Western Europe.",
    "seine": "The Seine flows through Paris into the English Channel.",
    "louvre": "The Louvre is a museum in Paris.",
}


@tool(timeout_s=2, verb="looked it up")
def encyclopedia(topic: str) -> str:
    """Look a topic up in a small offline encyclopedia (a stand-in for Wikipedia in the tests)."""
    return ENTRIES.get(" ".join(topic.casefold().split()), f"No entry for {topic}.")


def map_registry() -> ToolRegistry:
    return ToolRegistry([encyclopedia, calculate])


THINK = ("Thought: The Eiffel Tower is about 300 metres tall. A metre is about 3.3 feet, so that is about 990 feet. "
         "It was built by Alexandre Eiffel for the World's Fair of 1900.\n"
         "Final Answer: About 990 feet; Alexandre Eiffel built it for the 1900 World's Fair.")
ACT = ["Action: encyclopedia\nAction Input: Eiffel Tower",
       "Action: encyclopedia\nAction Input: Gustave Eiffel",
       "Final Answer: 1,083 ft; built by Gustave Eiffel's company in Paris."]
REACT = ["Thought: I should look the tower up.\nAction: encyclopedia\nAction Input: Eiffel Tower",
         "Thought: It is 330 metres; in feet that is 330 × 3.28084.\nAction: calculate\nAction Input: 330 * 3.28084",
         "Thought: The calculator converted it, and the entry names the builder.\n"
         "Final Answer: 1082.6772 feet (the entry rounds it to 1,083 ft); Gustave Eiffel's company built it, "
         "completed in 1889."]
ACT_LONG = [f"Action: encyclopedia\nAction Input: {t}" for t in ("Paris", "France", "Seine", "Louvre")]
REACT_LONG = [f"Thought: Step {n}.\nAction: calculate\nAction Input: {n} * 330" for n in range(1, 5)]


def script(body: dict[str, Any]) -> StubReply:
    """Each mode's next reply, by how many observations its conversation holds."""
    messages = body.get("messages") or []
    mode = mode_of(body)
    if mode == "think":
        return StubReply(text=THINK)
    steps = sum(1 for m in messages[1:] if m.get("role") == "user" and str(m.get("content") or "").startswith(
        "Observation"))
    question = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    plan = (ACT if mode == "act" else REACT) if LONG not in question else (
        [*(ACT_LONG if mode == "act" else REACT_LONG), ACT[-1] if mode == "act" else REACT[-1]])
    return StubReply(text=plan[min(steps, len(plan) - 1)])


def claims_shown(html: str) -> dict[str, str]:
    """The marked claims in a map's HTML: their text → mark."""
    return {re.sub(r"<.*", "", m.group(2)): m.group(1)
            for m in re.finditer(r'<span class="claim (\w+)" tabindex="0"[^>]*>([^<]+)', html)}
