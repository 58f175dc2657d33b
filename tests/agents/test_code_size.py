"""The code's size rule, checked rather than hoped for: no function over 60 lines, no module over 400, outside tests."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def _sources() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py")
                  if not {"tests", ".git", ".venv", "node_modules"} & set(p.relative_to(ROOT).parts))


def test_no_function_is_longer_than_a_screen():
    long = [f"{p.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for p in _sources() for node in ast.walk(ast.parse(p.read_text(), str(p)))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == []


def test_no_module_is_too_long():
    big = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _sources()
           if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert big == []
