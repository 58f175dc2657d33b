"""Act-only and ReAct: the same loops (text protocol or native tool calls), without or with thoughts.

Each passes its own spec's ``prompt`` to the loop, so the loops name no mode. ``runner`` (an
option of both) lets a fork replay recorded observations through the very same loop. ``notes``
(not an option: no caller outside the modes passes it) are messages another mode adds after the
question, as Reflexion does with its reflections (see :func:`agents.modes.base.opening`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from agents.events import Event
from agents.llm.base import ChatModel
from agents.modes.base import RunConfig, ToolRunner
from agents.modes.registry import ModeSpec, register
from agents.modes.text_protocol import text_loop
from agents.modes.tool_protocol import tools_loop
from tools.registry import ToolRegistry


def act_only(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig, *,
             runner: ToolRunner | None = None, notes: Sequence[str] = ()) -> Iterator[Event]:
    """Actions and observations only: the prompt asks for no thoughts, and any written are dropped."""
    return _loop(ACT, question, model, registry, config, thoughts=False, runner=runner, notes=notes)


def react(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig, *,
          runner: ToolRunner | None = None, notes: Sequence[str] = ()) -> Iterator[Event]:
    """Thought → Action → Observation, as in Yao et al. (2023)."""
    return _loop(REACT, question, model, registry, config, thoughts=True, runner=runner, notes=notes)


def _loop(spec: ModeSpec, question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig, *,
          thoughts: bool, runner: ToolRunner | None, notes: Sequence[str]) -> Iterator[Event]:
    loop = tools_loop if config.protocol == "tools" else text_loop
    return loop(question, model, registry, config, thoughts=thoughts, prompt=spec.prompt or spec.id, runner=runner,
                notes=notes)


ACT = register(ModeSpec("act", "Act-only", act_only, placement="base", label="Act", paper_row="Act", prompt="act",
                        uses_tools=True, options=("runner",), order=20))
REACT = register(ModeSpec("react", "ReAct", react, placement="base", label="ReAct", paper_row="ReAct", prompt="react",
                          uses_tools=True, options=("runner",), order=30))
