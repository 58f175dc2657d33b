"""The agent's tools: one module per tool, declared once in :mod:`tools.registry`.

``default_registry()`` is what the app and CLI use; ``call_tool`` is the one-line
entry point for callers that do not need a custom registry.
"""

from __future__ import annotations

import threading

from tools.registry import Tool, ToolFailure, ToolRegistry, ToolResult, normalize_name, tool, truncate

__all__ = [
    "Tool",
    "ToolFailure",
    "ToolRegistry",
    "ToolResult",
    "call_tool",
    "default_registry",
    "normalize_name",
    "tool",
    "truncate",
]

_lock = threading.Lock()
_default: ToolRegistry | None = None


def default_registry() -> ToolRegistry:
    """All five tools in the order prompts list them. Imported lazily so importing the
    package stays cheap for code (and tests) that bring their own tools."""
    # the tools' HTTP clients and the sandbox (~220 ms): loaded by the first caller that wants the built-in tools
    from tools.calculator import calculate
    from tools.python_repl import python_repl
    from tools.search import duckduckgo_search
    from tools.weather import get_weather
    from tools.wikipedia import wikipedia_search

    return ToolRegistry([duckduckgo_search, wikipedia_search, get_weather, calculate, python_repl])


def call_tool(name: str, tool_input: str | dict) -> ToolResult:
    """Call a tool of the shared default registry (whose cache is shared too). Never raises."""
    global _default
    with _lock:
        if _default is None:
            _default = default_registry()
    return _default.call(name, tool_input)
