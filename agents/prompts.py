"""Prompt templates (files in ``prompts/``) rendered from the tool registry.

Templates use ``string.Template`` (``$tools``) so JSON braces in them need no escaping, and
the tool list is generated from the registry, so adding a tool needs no prompt edit.
:func:`render_prompt` returns exactly what is sent, for the UI's "Prompts" view.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from string import Template

from agents.settings import DEFAULT_MAX_STEPS
from tools.registry import ToolRegistry

PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"
MODES = ("think", "act", "react")
PROTOCOLS = ("text", "tools")


@functools.cache
def template(name: str) -> Template:
    """Load ``prompts/<name>.md`` once."""
    return Template((PROMPT_DIR / f"{name}.md").read_text(encoding="utf-8").strip())


def tool_list(registry: ToolRegistry) -> str:
    """One line per tool: name, parameters, and the first paragraph of its docstring."""
    lines = []
    for t in registry.tools:
        params = ", ".join(t.param_names)
        lines.append(f"- {t.name}({params}): {t.summary}")
    return "\n".join(lines) or "- (no tools are enabled)"


def system_prompt(mode: str, registry: ToolRegistry, *, protocol: str = "text", max_steps: int = DEFAULT_MAX_STEPS) -> str:
    """The system message for ``mode`` under ``protocol`` ("text": the paper's format; "tools": native calls)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    name = mode if mode == "think" or protocol == "text" else f"{mode}_tools"
    return template(name).safe_substitute(
        tools=tool_list(registry), tool_names=", ".join(registry.names) or "(none)", max_steps=max_steps
    )


def question_message(question: str) -> str:
    return f"Question: {question.strip()}"


def observation_message(output: str) -> str:
    return f"Observation: {output}"


def forced_answer_message() -> str:
    return template("forced_answer").template


def repeat_call_message(tool: str, previous: str) -> str:
    return template("repeat_call").safe_substitute(tool=tool, previous=previous)


def render_prompt(
    mode: str, registry: ToolRegistry, *, protocol: str = "text", max_steps: int = DEFAULT_MAX_STEPS, question: str = "<question>"
) -> str:
    """The first request of a run as readable text: system message, tool schemas (native protocol), question."""
    parts = [f"[system]\n{system_prompt(mode, registry, protocol=protocol, max_steps=max_steps)}"]
    if protocol == "tools" and mode != "think":
        schemas = json.dumps(registry.schemas(), indent=1, ensure_ascii=False)
        parts.append(f"[tools — sent as the request's `tools` parameter]\n{schemas}")
    parts.append(f"[user]\n{question_message(question)}")
    return "\n\n".join(parts)
