"""A streamed reply's text, token by token (agents/modes/base._Call.add_text): what is shown, when an
invented Observation ends the reply, and which tokens are the answer — whatever the chunking.

The reference is the rule over the whole text received so far (what the streaming code did before it
looked only at the line being written): both must make the same token events and cut at the same place,
at every chunk size.
"""

from __future__ import annotations

import random
import re

import pytest

from agents.events import TokenDelta
from agents.modes.base import _FINAL, STOP, _Call
from agents.parsing import cut_observation

REPLIES = [
    "Thought: I will compute it.\nAction: calculate\nAction Input: 17 * 23 + 5\nObservation: 42\nThought: x",
    "Thought: the Obsidian order.\nObservational studies say so.\nFinal Answer: Obs",
    "Thought: hmm\n  - **Observation 2:** made up\nmore",
    "Thought: " + "long words " * 300 + "\nObservation\nx",
    "Thought: a\r\nObservation: b\r\n",
    "Thought: Final Answer will follow.\nFinal   Answer: 396 and Observation: not a line start",
    "Final Answer: 7\n> Observation: quoted",
    "Thought: Obs",
    "",
]


class Reference:
    """The whole-text rule: cut_observation over all the text received so far, at every chunk."""

    def __init__(self) -> None:
        self.text, self.shown, self.answer_only = "", 0, False

    def add(self, piece: str) -> tuple[list[TokenDelta], bool]:
        self.text += piece
        base = self.text.rfind("\n", 0, len(self.text) - len(piece)) + 1
        tail = cut_observation(self.text[base:], partial=False)
        done, visible = self.text[:base] + tail, self.text[:base] + cut_observation(tail)
        out = []
        if len(visible) > self.shown:
            self.answer_only = self.answer_only or bool(_FINAL.search(visible, max(0, self.shown - 64)))
            out.append(TokenDelta(visible[self.shown :], "answer" if self.answer_only else "thought"))
            self.shown = len(visible)
        ended = len(done) < len(self.text)
        self.text = done
        return out, ended


def reference(text: str, sizes: list[int]) -> tuple[str, list[TokenDelta], bool]:
    ref, deltas, i, ended = Reference(), [], 0, False
    for size in sizes:
        piece, i = text[i : i + size], i + size
        if not piece:
            break
        out, ended = ref.add(piece)
        deltas += out
        if ended:
            break
    return ref.text, deltas, ended


def streamed(text: str, sizes: list[int]) -> tuple[str, list[TokenDelta], bool]:
    call, deltas, i, ended = _Call(), [], 0, False
    for size in sizes:
        piece, i = text[i : i + size], i + size
        if not piece:
            break
        gen = call.add_text(piece, STOP)
        try:
            while True:
                deltas.append(next(gen))
        except StopIteration as stop:
            ended = stop.value
        if ended:
            break
    return call.text, deltas, ended


@pytest.mark.parametrize("text", REPLIES)
@pytest.mark.parametrize("seed", range(12))
def test_streaming_agrees_with_the_whole_text_rule_at_any_chunking(text, seed):
    rng = random.Random(seed)
    sizes = [1] * len(text) if seed == 0 else [rng.randint(1, 12) for _ in range(len(text) + 1)]
    assert streamed(text, sizes) == reference(text, sizes)


def test_a_long_reply_costs_the_same_per_token_as_a_short_one():
    """The line being written is looked at only until it is too long to start an Observation."""
    call = _Call()
    for _ in range(5000):
        list(call.add_text("word ", STOP))
    assert call.settled and call.line == 0 and len(call.text) == 25000
    list(call.add_text("\nObserv", STOP))
    assert not call.settled and call.text.endswith("Observ")
    assert list(call.add_text("ation: 3", STOP)) == [] and re.search(r"word $", call.text)
