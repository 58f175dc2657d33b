"""Act-only and ReAct: the same loops (text protocol or native tool calls), without or with thoughts."""

from __future__ import annotations

from collections.abc import Iterator

from agents.events import Event
from agents.llm.base import ChatModel
from agents.modes.base import RunConfig
from agents.modes.registry import ModeSpec, register
from agents.modes.text_protocol import text_loop
from agents.modes.tool_protocol import tools_loop
from tools.registry import ToolRegistry


def act_only(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig) -> Iterator[Event]:
    """Actions and observations only: the prompt asks for no thoughts, and any written are dropped."""
    loop = tools_loop if config.protocol == "tools" else text_loop
    return loop(question, model, registry, config, thoughts=False)


def react(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig) -> Iterator[Event]:
    """Thought → Action → Observation, as in Yao et al. (2023)."""
    loop = tools_loop if config.protocol == "tools" else text_loop
    return loop(question, model, registry, config, thoughts=True)


register(ModeSpec("act", "Act-only", act_only, kind="base", label="Act", paper_row="Act", prompt="act",
                  uses_tools=True, order=20))
register(ModeSpec("react", "ReAct", react, kind="base", label="ReAct", paper_row="ReAct", prompt="react",
                  uses_tools=True, order=30))
