"""Tools written on the page: a visitor's ``def tool(text: str) -> str``, run inside the sandbox, never in the app.

A :class:`PageTool` is data (name, one-line description, source), checked once by :func:`page_tool` (one line per
problem: :class:`PageToolError`) and turned into a registry :class:`~tools.registry.Tool` by :func:`make_tool`,
whose call runs a small program in :mod:`tools.sandbox` (the policy, then the WASM boundary, with
``python_repl``'s limits): the visitor's function, called with the input text; what it prints and returns is the
observation. Being data, it travels to a run worker as such and is made again there (``agents.hosting``), and an
export carries it (``settings.page_tools``) for a fork to make it again. docs/tools.md, "Tools written on the page".
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
import textwrap
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from tools.registry import Tool, ToolFailure, ToolRegistry, normalize_name
from tools.sandbox import Limits, filters, run_python
from tools.sandbox_policy import ALLOWED_MODULES, check_code

MAX_TOOLS = 3  # per visitor
MAX_SOURCE_BYTES = 4096
MAX_DESCRIPTION = 200
MAX_NAME = 40
MAX_INPUT_CHARS = 4000
LIMITS = Limits()  # python_repl's: ~5 s CPU, 8 s wall, 512 MB, 4,000 characters of output
RESERVED = frozenset({"final_answer", "tool", "text"})  # CodeAct's own names, and the program's
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
MARK = "page_tool"  # the attribute of a page tool's function holding its PageTool


class PageToolError(ValueError):
    """A tool that cannot be added (or made again from a recording): ``str(exc)`` is the one line to show."""


@dataclass(frozen=True)
class PageTool:
    """A tool written on the page, as data: plain strings, so it pickles to a worker and sits in an export."""

    name: str
    description: str
    source: str  # the body of ``def tool(text: str) -> str`` (or the whole definition)

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def page_tool(name: Any, description: Any, source: Any, taken: Iterable[str] = ()) -> PageTool:
    """The tool, checked: a Python name free of ``taken`` (the registry's tools: built in and MCP), a one-line
    description, a body that compiles and (with the sandbox's filters on) passes its policy; else
    :class:`PageToolError` with one line."""
    name = name.strip() if isinstance(name, str) else name
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > MAX_NAME:
        raise PageToolError(f"A tool's name is a Python name of letters, digits and underscores, starting with a "
                            f"letter, at most {MAX_NAME} characters (got {str(name)[:50]!r}).")
    if keyword.iskeyword(name) or hasattr(builtins, name) or name in RESERVED | ALLOWED_MODULES:
        raise PageToolError(f"'{name}' is a name Python or CodeAct already uses: choose another.")
    clash = next((t for t in taken if normalize_name(t) == normalize_name(name)), None)
    if clash is not None:
        raise PageToolError(f"'{name}' would shadow the tool '{clash}': choose another name.")
    if not isinstance(description, str) or not description.strip():
        raise PageToolError("A tool needs a one-line description: it is what the model reads.")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        raise PageToolError(f"The description is {len(description)} characters; at most {MAX_DESCRIPTION}.")
    if not isinstance(source, str) or not source.strip():
        raise PageToolError("The tool needs a body: the code of def tool(text: str) -> str, ending in a return.")
    source = source.replace("\r\n", "\n").strip("\n")
    if len(source.encode("utf-8")) > MAX_SOURCE_BYTES:
        raise PageToolError(f"The body is {len(source.encode('utf-8')):,} bytes; at most {MAX_SOURCE_BYTES:,}.")
    program = definition(source)
    try:
        ast.parse(program)
    except SyntaxError as exc:
        raise PageToolError(f"The body does not compile: {exc.msg} (line {_body_line(source, exc.lineno)}).") from None
    policy, _ = filters(None, None)
    if policy and not (report := check_code(program + call_lines(""))).ok:
        message = re.sub(r"line (\d+):", lambda m: f"line {_body_line(source, int(m[1]))}:", report.message())
        raise PageToolError(f"The sandbox refuses this body: {message}")
    return PageTool(name, description, source)


def definition(source: str) -> str:
    """``def tool(text: str) -> str:`` with ``source`` as its body; a source that is the whole definition as is."""
    body = textwrap.dedent(source)
    if body.lstrip().startswith("def tool("):
        return body + "\n"
    return "def tool(text: str) -> str:\n" + textwrap.indent(body, "    ", lambda _: True) + "\n"


def _body_line(source: str, lineno: int | None) -> int:
    """A line of the program as the visitor numbers the body."""
    whole = textwrap.dedent(source).lstrip().startswith("def tool(")
    return max(1, (lineno or 1) - (0 if whole else 1))


def call_lines(text: str) -> str:
    """The program's end: the tool called with ``text`` (a literal), what it returns printed after what it prints."""
    return f"\n_answer = tool({text!r})\nif _answer is not None:\n    print(_answer)\n"


def program(spec: PageTool, text: str) -> str:
    """The program one call runs in the sandbox."""
    return definition(spec.source) + call_lines(text)


def run_page_tool(spec: PageTool, text: Any) -> str:
    """One call: the program in a fresh sandbox; its output, or a :class:`ToolFailure` with the sandbox's answer."""
    text = "" if text is None else str(text)
    if len(text) > MAX_INPUT_CHARS:
        raise ToolFailure(f"{spec.name}: the input is {len(text):,} characters; at most {MAX_INPUT_CHARS:,}.")
    result = run_python(program(spec, text), LIMITS)
    output = result.output.rstrip("\n")
    if result.ok:
        return output or f"({spec.name} returned nothing.)"
    before = f"Output before the error:\n{output}\n" if output else ""
    raise ToolFailure(f"{before}{result.error or f'The tool failed ({result.status}).'}")


def make_tool(spec: PageTool) -> Tool:
    """The registry tool: one string parameter ``text``, its call a sandboxed program (:func:`run_page_tool`)."""

    def call(text: str) -> str:
        return run_page_tool(spec, text)

    call.__name__ = call.__qualname__ = spec.name
    setattr(call, MARK, spec)
    return Tool(name=spec.name, description=spec.description,
                parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                fn=call, timeout_s=LIMITS.wall_s + 5, summary=spec.description)


def spec_of(t: Tool) -> PageTool | None:
    """The :class:`PageTool` a registry tool was made from (None for any other tool)."""
    spec = getattr(t.fn, MARK, None)
    return spec if isinstance(spec, PageTool) else None


def with_page_tools(registry: ToolRegistry, specs: Iterable[PageTool]) -> ToolRegistry:
    """``registry`` with the page tools after its own (``registry`` itself when there are none); shares its cache."""
    made = [make_tool(s) for s in specs]
    if not made:
        return registry
    return ToolRegistry([*registry.tools, *made], registry.max_output_chars, registry._cache)


def page_tools_of(value: Any, taken: Iterable[str]) -> tuple[PageTool, ...]:
    """A list of ``{"name", "description", "source"}`` (the page's state, an export's ``page_tools``) checked into
    tools, at most :data:`MAX_TOOLS`, their names distinct and free of ``taken``; else one line."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or len(value) > MAX_TOOLS:
        raise PageToolError(f"Tools written on the page come as a list of at most {MAX_TOOLS}.")
    taken, tools = list(taken), []
    for item in value:
        if isinstance(item, PageTool):
            item = item.to_dict()
        if not isinstance(item, dict):
            raise PageToolError("A tool written on the page is an object with a name, a description and a source.")
        made = page_tool(item.get("name"), item.get("description"), item.get("source"), taken)
        taken.append(made.name)
        tools.append(made)
    return tuple(tools)
