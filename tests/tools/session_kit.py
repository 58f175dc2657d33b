"""Helpers for the persistent sandbox's tests: small tools that count their calls, and a driver for run()."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from tools.registry import ToolRegistry, tool
from tools.sandbox_session import CallFinished, CallRecord, CallStarted, SandboxSession, SessionLimits, StepResult

FAST = SessionLimits(cpu_s=2, session_cpu_s=30, memory_mb=256, wall_s=4, step_s=20)
CALLS: list[tuple[str, dict]] = []  # every call that reached a tool function (the registry ran it)


@tool
def calculate(expression: str) -> str:
    """Add integers written as a+b."""
    CALLS.append(("calculate", {"expression": expression}))
    return str(sum(int(x) for x in expression.replace(" ", "").split("+")))


@tool
def nap(seconds: float) -> str:
    """Sleep, then say so (time spent inside a tool)."""
    CALLS.append(("nap", {"seconds": seconds}))
    time.sleep(float(seconds))
    return f"slept {seconds}"


@tool
def broken(query: str) -> str:
    """Always fails."""
    CALLS.append(("broken", {"query": query}))
    raise RuntimeError("backend exploded")


@tool
def echo(text: str, times: int = 1) -> str:
    """Repeat a text."""
    CALLS.append(("echo", {"text": text, "times": times}))
    return text * int(times)


@tool(cache_ttl_s=600)
def lookup(query: str) -> str:
    """A cached lookup."""
    CALLS.append(("lookup", {"query": query}))
    return f"found {query}"


@tool
def get_weather(location: str) -> str:
    """Not enabled in most tests: a program must not reach it."""
    CALLS.append(("get_weather", {"location": location}))
    return "sunny"


REGISTRY = ToolRegistry([calculate, nap, broken, echo, lookup])


def drive(session: SandboxSession, code: str,
          on_record: Callable[[CallRecord], None] | None = None) -> tuple[list[CallRecord], StepResult]:
    """Run one step to its end: the records it yielded, in order, and its result."""
    records: list[CallRecord] = []
    step = session.run(code)
    while True:
        try:
            record = next(step)
        except StopIteration as done:
            return records, done.value
        records.append(record)
        if on_record:
            on_record(record)


def started(records: list[CallRecord]) -> list[str]:
    return [r.tool for r in records if isinstance(r, CallStarted)]


def finished(records: list[CallRecord]) -> list[CallFinished]:
    return [r for r in records if isinstance(r, CallFinished)]


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def later(seconds: float, action: Callable[[], None]) -> threading.Thread:
    """Do ``action`` from another thread after ``seconds`` (Stop pressed while a step runs)."""
    thread = threading.Thread(target=lambda: (time.sleep(seconds), action()), daemon=True)
    thread.start()
    return thread
