"""Prompt templates (files in ``prompts/``) rendered from the tool registry.

Templates use ``string.Template`` (``$tools``) so JSON braces in them need no escaping, and
the tool list is generated from the registry, so adding a tool needs no prompt edit.
A mode names its template in its :class:`~agents.modes.registry.ModeSpec` (``prompt``);
``prompts/<name>_tools.md``, when present, is that template's native-tool-call variant.
:func:`render_prompt` returns exactly what is sent, for the UI's "Prompts" view. This module
knows templates, not modes, so the modes can import it.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from string import Template

from agents.settings import DEFAULT_MAX_STEPS
from tools.registry import ToolRegistry
from tools.sandbox_policy import ALLOWED_MODULES

PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"


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


_PY_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "object": "dict", "array": "list"}


def tool_functions(registry: ToolRegistry) -> str:
    """The tools a sandboxed program may call, as Python signatures with their docstrings (CodeAct's prompt)."""
    from tools.sandbox_session import callable_tools  # the sandbox's client (~90 ms): CodeAct's prompt alone needs it

    blocks = []
    for t in callable_tools(registry).tools:
        required = set(t.parameters.get("required", []))
        params = [f"{name}: {_PY_TYPES.get(spec.get('type', 'string'), 'str')}"
                  + ("" if name in required else " = None")
                  for name, spec in t.parameters.get("properties", {}).items()]
        lines = t.description.replace('"""', "'''").split("\n")
        doc = "\n".join([lines[0], *(f"    {line}" if line.strip() else "" for line in lines[1:])])
        blocks.append(f'def {t.name}({", ".join(params)}) -> str:\n    """{doc}\n    """')
    return "\n\n".join(blocks) or "# (no tools are enabled: plain Python only)"


def module_list() -> str:
    """The modules a sandboxed program may import, for prompts."""
    return ", ".join(sorted(ALLOWED_MODULES))


@functools.cache
def template_for(name: str, protocol: str = "text") -> str:
    """The template a prompt ``name`` uses under ``protocol``: its ``_tools`` variant for native calls, if any.

    Cached like :func:`template` (the files do not change while the app runs), so a run costs no ``stat``.
    """
    if not (PROMPT_DIR / f"{name}.md").is_file():
        known = sorted(p.stem for p in PROMPT_DIR.glob("*.md") if not p.stem.endswith("_tools"))
        raise ValueError(f"unknown prompt {name!r}; expected one of {known}")
    if protocol == "tools" and (PROMPT_DIR / f"{name}_tools.md").is_file():
        return f"{name}_tools"
    return name


def system_prompt(name: str, registry: ToolRegistry, *, protocol: str = "text",
                  max_steps: int = DEFAULT_MAX_STEPS) -> str:
    """The system message of prompt ``name`` (a mode's, e.g. "react") under ``protocol``
    ("text": the paper's format; "tools": native calls)."""
    text = template(template_for(name, protocol))
    code = "$tool_functions" in text.template  # CodeAct's template: the tools as functions, the importable modules
    extra = {"tool_functions": tool_functions(registry), "modules": module_list()} if code else {}
    return text.safe_substitute(
        tools=tool_list(registry), tool_names=", ".join(registry.names) or "(none)", max_steps=max_steps, **extra
    )


def question_message(question: str) -> str:
    return f"Question: {question.strip()}"


def observation_message(output: str) -> str:
    return f"Observation: {output}"


def forced_answer_message() -> str:
    return template("forced_answer").template


def answer_again_message() -> str:
    """Think-only fork: after the (edited) reasoning, ask for the answer that follows from it."""
    return template("answer_again").template


def repeat_call_message(tool: str, previous: str) -> str:
    return template("repeat_call").safe_substitute(tool=tool, previous=previous)


def template_view(name: str) -> str:
    """A template as the Prompts view shows it: its file name, and each ``$field`` as ``<field>``."""
    text = re.sub(r"\$\{?(\w+)\}?", r"<\1>", template(name).template)
    return f"[{name}.md]\n{text}"


def render_prompt(
    name: str, registry: ToolRegistry, *, protocol: str = "text", max_steps: int = DEFAULT_MAX_STEPS,
    question: str = "<question>", uses_tools: bool = True,
) -> str:
    """The first request of a run as readable text: system message, tool schemas (native protocol), question.

    ``name`` is the mode's prompt and ``uses_tools`` whether it is sent the tools (both from its
    :class:`~agents.modes.registry.ModeSpec`).
    """
    parts = [f"[system]\n{system_prompt(name, registry, protocol=protocol, max_steps=max_steps)}"]
    if protocol == "tools" and uses_tools:
        schemas = json.dumps(registry.schemas(), indent=1, ensure_ascii=False)
        parts.append(f"[tools — sent as the request's `tools` parameter]\n{schemas}")
    parts.append(f"[user]\n{question_message(question)}")
    return "\n\n".join(parts)
