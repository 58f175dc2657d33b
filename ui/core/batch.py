"""Several tool calls of one native reply, run at once, shown as one step (:class:`Batch`, used by the Panel).

The reply's :class:`~agents.events.Usage` lists its calls in call order; they then arrive as Action →
Observation pairs in the order they finished (``agents/modes/tool_protocol.run_calls``). The step is one line,
"⚙ Action 3: 3 tool calls at once", listing the calls; each call is numbered by its place in the reply
("Call 3.2"), whenever it finishes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import gradio as gr

from agents.events import Action, Usage
from agents.modes.base import parse_arguments
from tools.registry import normalize_name
from ui.core.safe_text import plain

RUNNING = " · running…"


@dataclass
class Batch:
    """The calls of step ``step`` not yet finished; ``header`` is the step's line."""

    step: int
    calls: list[tuple[str, str]]  # (tool name, input as JSON) in call order
    header: gr.ChatMessage
    left: list[int] = field(default_factory=list)
    current: str = ""  # the number of the call whose observation comes next

    @staticmethod
    def title(step: int, calls: int) -> str:
        return f"⚙ Action {step}: {calls} tool calls at once"

    @staticmethod
    def listing(usage: Usage) -> str:
        return "\n".join(f"{i}. `{plain(name)}` ← {plain(' '.join((arguments or '{}').split()))}"
                         for i, (_, name, arguments) in enumerate(usage.tool_calls, 1))

    @classmethod
    def of(cls, usage: Usage, step: int, header: gr.ChatMessage) -> Batch:
        calls = [(normalize_name(name), _key(parse_arguments(args))) for _, name, args in usage.tool_calls]
        return cls(step, calls, header, list(range(len(calls))))

    def number(self, action: Action) -> str:
        """The finished call's number in its step (its place in the reply); the first open one if none matches."""
        wanted = (normalize_name(action.tool), _key(action.input))
        at = next((i for i in self.left if self.calls[i] == wanted), self.left[0] if self.left else len(self.calls))
        if at in self.left:
            self.left.remove(at)
        self.current = f"{self.step}.{at + 1}"
        return self.current

    @staticmethod
    def keep_below(batch: Batch | None, messages: list[gr.ChatMessage]) -> None:
        """A Thought came after the reply's usage: the step's line (if a step is open) goes below it, as a single
        action's would."""
        if batch is not None and len(batch.left) == len(batch.calls) and batch.header in messages:
            messages.remove(batch.header)
            messages.append(batch.header)

    def close(self, why: str = "") -> bool:
        """End the step's spinner once every call is in (or with ``why`` when the run ended first); True: closed."""
        if self.left and not why:
            return False
        self.header.metadata["title"] = self.header.metadata["title"].replace(RUNNING, why)
        self.header.metadata["status"] = "done"
        return True


def _key(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str) if isinstance(value, dict) else str(value)
