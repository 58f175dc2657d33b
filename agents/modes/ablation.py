"""The placebo ablation of ReAct's worked example (Verma et al., 2024, arXiv 2405.13966): two benchmark modes.

"ReAct (worked example)" is ReAct whose prompt ends with one worked example (``prompts/react_worked.md``);
"ReAct (placebo example)" sends the same prompt with each of the example's thoughts replaced by one neutral
line (``prompts/react_placebo.md``). The two prompts differ in those lines only, and the loop is ReAct's own,
so a gap between their rows is what the example's thoughts are worth to this model on these questions. The
example is in the paper's text format: the Benchmark tab and ``eval`` refuse them under native tool calls before
any call (``registry.protocol_problem``), and a run that reaches one anyway says so in one line and stops.
"""

from __future__ import annotations

from collections.abc import Iterator

from agents.events import Event, LLMError
from agents.llm.base import ChatModel
from agents.modes.base import RunConfig
from agents.modes.registry import ModeSpec, register
from agents.modes.text_protocol import text_loop
from tools.registry import ToolRegistry

SOURCE = ("On the Brittle Foundations of ReAct Prompting (Verma, Bhambri & Kambhampati, 2024, arXiv 2405.13966): "
          "on ALFWorld, examples with placebo thoughts did about as well as ReAct's own")
TEXT_ONLY = ("The worked example is written in the paper's text format: choose the text protocol to run "
             "this ablation.")


def react_worked(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig) -> Iterator[Event]:
    """ReAct with one worked example in its prompt."""
    return _with_example(WORKED, question, model, registry, config)


def react_placebo(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig) -> Iterator[Event]:
    """ReAct with the same example, its thoughts replaced by a neutral line."""
    return _with_example(PLACEBO, question, model, registry, config)


def _with_example(spec: ModeSpec, question: str, model: ChatModel, registry: ToolRegistry,
                  config: RunConfig) -> Iterator[Event]:
    if config.protocol != "text":
        yield LLMError(TEXT_ONLY)
        return
    yield from text_loop(question, model, registry, config, thoughts=True, prompt=spec.prompt or spec.id)


WORKED = register(ModeSpec("react_worked", "ReAct (worked example)", react_worked, placement="benchmark",
                           prompt="react_worked", uses_tools=True, text_only=True, order=110))
PLACEBO = register(ModeSpec("react_placebo", "ReAct (placebo example)", react_placebo, placement="benchmark",
                            prompt="react_placebo", uses_tools=True, text_only=True, order=120))
MODES = (WORKED.id, PLACEBO.id)
