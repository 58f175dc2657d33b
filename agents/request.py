"""One run, as it was asked for: :class:`RunRequest`.

Built once, where the input is checked (the page and ``/compare``: ``ui/core/inputs.read_request``; the MCP tool;
the CLI), then handed on as it is: the live view, the run host, a worker process and the comparison all take it.
A new run option is declared in its mode's spec (:class:`~agents.modes.registry.RunOption`) and travels in
``options``, so none of these layers changes for it. Plain data only: it is pickled to a worker process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agents.followup import FollowUp
from agents.modes.base import RunConfig
from agents.settings import DEFAULT_MAX_STEPS, DEFAULT_TEMPERATURE

if TYPE_CHECKING:  # the sandbox is imported by a run that has tools written on the page, not by every importer
    from tools.page_tools import PageTool
    from tools.registry import ToolRegistry


@dataclass(frozen=True)
class RunRequest:
    """What to run and how: the question, the modes, the settings, the modes' own options, stepping or not."""

    question: str
    modes: tuple[str, ...]
    protocol: str = "text"
    max_steps: int = DEFAULT_MAX_STEPS
    temperature: float = DEFAULT_TEMPERATURE
    max_tokens: int | None = None  # per reply; None: LLM_MAX_TOKENS
    tools: tuple[str, ...] | None = None  # the enabled tools' names (None: every tool)
    model: str | None = None  # a model other than the configured one
    expected: str | None = None  # the teacher's expected answer: each mode is marked ✓ / ✗ against it
    options: dict[str, Any] = field(default_factory=dict)  # the modes' RunOptions by name (Reflexion's trials)
    stepping: bool = False  # pause after each step until Next step / Continue
    selection: str = ""  # what the visitor picked, as the status line names it ("All")
    # a follow-up: each mode's earlier turns, the messages after its system prompt (agents/conversation.py)
    history: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    followup: FollowUp | None = None  # the turns this one follows, opened from their sealed block (agents/followup.py)
    page_tools: tuple[PageTool, ...] = ()  # the visitor's tools written on the page that the run enables (checked)

    @property
    def turn(self) -> int:
        """Which turn of its conversation this run is (1: a new question)."""
        return 1 + (self.followup.previous.turn if self.followup is not None else 0)

    def run_registry(self, tools: ToolRegistry) -> ToolRegistry:
        """The run's tools: those of ``tools`` it enables, then its tools written on the page."""
        chosen = tools.subset(self.tools) if self.tools is not None else tools
        if not self.page_tools:
            return chosen
        from tools.page_tools import with_page_tools  # ~70 ms of sandbox modules, for a run with page tools only

        return with_page_tools(chosen, self.page_tools)

    def config(self) -> RunConfig:
        """The settings every mode of the run shares."""
        return RunConfig(protocol=self.protocol, max_steps=self.max_steps, temperature=self.temperature,
                         max_tokens=self.max_tokens)

    def mode_options(self) -> dict[str, Any]:
        """Offered to every mode, which takes those its spec names (Reflexion grades against ``expected``)."""
        return {"expected": self.expected, **self.options}
