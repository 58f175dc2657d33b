"""``python_repl``: run a short Python program in the sandbox of :mod:`tools.sandbox`.

The policy (:mod:`tools.sandbox_policy`) refuses dangerous code before anything runs; the program then runs in
a fresh guest interpreter (CPython for WASI in Wasmtime) with restricted builtins, an empty environment and a
scratch folder of its own as its whole file system. Each call starts from scratch: nothing carries over.
"""

from __future__ import annotations

import re

from tools.registry import ToolFailure, tool
from tools.sandbox import Limits, RunResult, run_python

DEFAULT_LIMITS = Limits()
_FENCE = re.compile(r"^\s*```[\w+-]*[ \t]*\n(.*?)\n?```\s*$", re.DOTALL)


def strip_fences(code: str) -> str:
    """Models often wrap code in a Markdown fence (```python ... ```): take what is inside."""
    text = str(code or "")
    m = _FENCE.match(text)
    return m.group(1) if m else text


def format_result(result: RunResult) -> str:
    """The observation for a successful run; raises :class:`ToolFailure` for everything else."""
    output = result.output.rstrip("\n")
    if result.ok:
        return (
            output or "(The program ran and printed nothing. Use print(...) or end with an expression to see a value.)"
        )
    parts = []
    if output:
        parts.append(f"Output before the error:\n{output}")
    parts.append(result.error or f"The program failed ({result.status}).")
    raise ToolFailure("\n".join(parts))


def run_repl(code: str, limits: Limits = DEFAULT_LIMITS) -> str:
    source = strip_fences(code)
    if not source.strip():
        raise ToolFailure("python_repl needs Python code, e.g. print(sum(range(10))).")
    return format_result(run_python(source, limits))


@tool(timeout_s=DEFAULT_LIMITS.wall_s + 5, verb="ran Python")
def python_repl(code: str) -> str:
    """Run a short Python 3 program and return what it prints; the value of a final expression is shown too.
    Input: the code.

    Each call is a fresh sandboxed process (nothing is remembered between calls; no files, network or
    environment; limits: ~5 s CPU, 512 MB memory, ~4,000 characters of output). Imports are limited to:
    math, statistics, itertools, functools, collections, datetime, time, re, json, random, fractions,
    decimal, string, heapq, bisect, operator. eval/exec/open/getattr and dunder attributes such as
    __class__ are refused before the code runs.
    """
    return run_repl(code)
