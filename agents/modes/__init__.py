"""The three reasoning modes, as generators of events.

``think_only`` (chain of thought, no tools), ``act_only`` (actions and observations, no
thoughts) and ``react`` (thought → action → observation). Act and ReAct run over either
protocol — "text" (the paper's format, any model) or "tools" (native function calling) —
and yield the same events either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from agents.events import Event
from agents.llm.base import ChatModel
from agents.modes.base import RunConfig, Stopped
from agents.modes.text_protocol import text_loop
from agents.modes.think import think_only
from agents.modes.tool_protocol import tools_loop
from tools.registry import ToolRegistry

__all__ = ["MODES", "RunConfig", "Stopped", "act_only", "react", "run_mode", "think_only"]


def act_only(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig) -> Iterator[Event]:
    """Actions and observations only: the prompt asks for no thoughts, and any written are dropped."""
    loop = tools_loop if config.protocol == "tools" else text_loop
    return loop(question, model, registry, config, thoughts=False)


def react(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig) -> Iterator[Event]:
    """Thought → Action → Observation, as in Yao et al. (2023)."""
    loop = tools_loop if config.protocol == "tools" else text_loop
    return loop(question, model, registry, config, thoughts=True)


ModeFn = Callable[[str, ChatModel, ToolRegistry, RunConfig], Iterator[Event]]
MODES: dict[str, ModeFn] = {"think": think_only, "act": act_only, "react": react}


def run_mode(mode: str, question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig) -> Iterator[Event]:
    """Dispatch by name ("think" | "act" | "react")."""
    try:
        fn = MODES[mode]
    except KeyError:
        raise ValueError(f"unknown mode {mode!r}; expected one of {sorted(MODES)}") from None
    return fn(question, model, registry, config)
