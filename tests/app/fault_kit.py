"""Faults for the whole-app tests: a stub-server responder that breaks ONE mode at a time, two broken tools,
and a launcher that runs the app in its own process (so the leak test can count *its* threads and fds).

The fault and its victim are written into the question, ``[fault=503@think]``, so one launched app serves
every fault test; the responder tells the modes apart by their system prompts. Everything else gets the
stub's toy model (which reads 17 * 23 + 5 off the question and uses the calculator), so the healthy panels
finish with 396 — computed by the tool, never hard-coded here.

Not collected by pytest (no ``test_`` prefix); test modules load it with :func:`load` via the ``kit`` fixture.

Run as a script: ``python tests/app/fault_kit.py`` launches the app on 127.0.0.1 with the fault registry and
``LLMSettings.from_env()`` (``LLM_BASE_URL``, ``LLM_TIMEOUT`` …), prints its URL, and serves until stdin closes.
"""

from __future__ import annotations

import collections
import re
import threading
import time
from typing import Any

from agents.llm.stub_server import StubReply, toy_policy
from tools.calculator import calculate
from tools.registry import ToolRegistry, tool

QUESTION = "What is 17 * 23 + 5?"
TOOL_TIMEOUT_S = 0.3
HANG_S = 1.5  # the hanging tool sleeps this long: > its timeout, short enough for the leak test to settle
_FAULT = re.compile(r"\[fault=([\w-]+)@(\w+)\]")
_CUT_TEXT = "Thought: 17 * 23 is 391, and 391 + 5 = 396.\nFinal Answer: 396"
FAULTS = ("429", "503", "503-fast", "hang", "cut", "cut-early", "stop-400", "reasoning-only", "garbage",
          "tool-hang", "tool-raise")


@tool(timeout_s=TOOL_TIMEOUT_S)
def slow_lookup(query: str) -> str:
    """Look something up in a very slow archive (it hangs: longer than its timeout)."""
    time.sleep(HANG_S)
    return f"archive: nothing on {query}"


@tool(timeout_s=TOOL_TIMEOUT_S)
def broken_tool(query: str) -> str:
    """A tool with a bug: it always raises."""
    raise RuntimeError(f"boom while handling {query!r}")


def fault_registry() -> ToolRegistry:
    """The calculator plus a tool that hangs and one that raises (each has a short per-tool timeout)."""
    return ToolRegistry([calculate, slow_lookup, broken_tool])


def question(fault: str, mode: str, nonce: str = "") -> str:
    """The test question with its fault written in; ``nonce`` (letters only) keeps per-run counters apart."""
    return f"{QUESTION} [fault={fault}@{mode}] {nonce}".strip()


def mode_of(body: dict[str, Any]) -> str:
    """Which mode sent this request, from its system prompt (prompts/think.md, act*.md, react*.md)."""
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    if "without any tools" in system:
        return "think"
    return "react" if "ReAct paper" in system else "act"


def _user_question(body: dict[str, Any]) -> str:
    return next((str(m.get("content") or "") for m in body.get("messages") or [] if m.get("role") == "user"), "")


def cut_reply(chunk_chars: int) -> StubReply:
    """A final answer "396" whose stream is cut right after "39" (padding puts the cut on a chunk border)."""
    head, answer = _CUT_TEXT.split("Final Answer: ")
    pad = (-(len(head) + len("Final Answer: ") + 2)) % chunk_chars
    text = head.replace("396.", "396." + " " * pad) + "Final Answer: " + answer
    shown = text.index("Final Answer: ") + len("Final Answer: ") + 2
    return StubReply(text=text, disconnect_after=shown // chunk_chars)


class FaultPolicy:
    """The responder: the toy model for healthy modes, the named fault for the victim mode."""

    def __init__(self, chunk_chars: int = 8) -> None:
        self.chunk_chars = chunk_chars
        self.attempts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> StubReply:
        match = _FAULT.search(_user_question(body))
        mode = mode_of(body)
        if "slowly" in _user_question(body):  # for Stop: a long, steady stream
            return StubReply(text="Thought: " + "pondering " * 400, token_delay=0.02)
        if not match or match.group(2) not in (mode, "all"):
            return toy_policy(body)
        fault = match.group(1)
        with self._lock:
            self.attempts[(_user_question(body), mode)] += 1
            attempt = self.attempts[(_user_question(body), mode)]
        return self.reply(fault, body, attempt)

    def reply(self, fault: str, body: dict[str, Any], attempt: int) -> StubReply:
        if fault == "429":
            return (StubReply(status=429, headers={"Retry-After": "0.2"}, error_body="rate limited")
                    if attempt == 1 else toy_policy(body))
        if fault in ("503", "503-fast"):
            headers = {"Retry-After": "0.05"} if fault == "503-fast" else {}
            return StubReply(status=503, headers=headers, error_body="the model is overloaded")
        if fault == "hang":
            return StubReply(hang=True)
        if fault == "cut":
            return cut_reply(self.chunk_chars)
        if fault == "cut-early":  # headers, then the connection closes before any text
            return StubReply(text=_CUT_TEXT, disconnect_after=0)
        if fault == "stop-400":
            if body.get("stop"):
                return StubReply(status=400, error_body="Unsupported parameter: 'stop' is not supported with this model.")
            return toy_policy(body)
        if fault == "reasoning-only":
            return StubReply(reasoning="Let me think about this very carefully. " * 20, text="")
        if fault == "garbage":
            return StubReply(text="lorem ipsum }{ <<< nothing like the format >>> ~~ 42?!")
        if fault in ("tool-hang", "tool-raise"):
            return tool_fault(body, "slow_lookup" if fault == "tool-hang" else "broken_tool")
        raise ValueError(f"unknown fault {fault!r}")


def _last_observation(body: dict[str, Any]) -> str | None:
    last = (body.get("messages") or [{}])[-1]
    content = str(last.get("content") or "")
    if last.get("role") == "tool":
        return content
    match = re.search(r"Observation[^:\n]*:\s*(.*)", content, re.S)
    return match.group(1).strip() if last.get("role") == "user" and match else None


def tool_fault(body: dict[str, Any], bad_tool: str) -> StubReply:
    """Call ``bad_tool`` first; after its error observation, the calculator; then answer with its result."""
    observation = _last_observation(body)
    expression = "17 * 23 + 5"
    if observation is None:
        step = (bad_tool, {"query": "17 * 23 + 5"})
    elif "timed out" in observation or "failed" in observation:
        step = ("calculate", {"expression": expression})
    else:
        return StubReply(text=f"Thought: the calculator answered.\nFinal Answer: {observation}")
    if body.get("tools"):
        return StubReply(text="", tool_calls=[step])
    name, args = step
    return StubReply(text=f"Thought: I will use {name}.\nAction: {name}\nAction Input: {next(iter(args.values()))}")


def main() -> None:
    """Launch the app (fault registry, settings from the environment) and serve until stdin closes."""
    import os
    import sys

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import app
    from agents.llm.settings import LLMSettings

    dump = os.environ.get("FAULT_KIT_THREADS")
    if dump:  # the leak test asks, by SIGUSR1, which threads are alive (names say whose they are)
        import json
        import signal

        def write_threads(*_: object) -> None:
            names = sorted(t.name for t in threading.enumerate())
            with open(dump + ".tmp", "w", encoding="utf-8") as f:
                json.dump(names, f)
            os.replace(dump + ".tmp", dump)

        signal.signal(signal.SIGUSR1, write_threads)
    demo = app.build_demo(settings=LLMSettings.from_env(), registry=fault_registry(), on_space=False)
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs())
    print(f"URL {demo.local_url}", flush=True)
    sys.stdin.read()  # the test closes our stdin (or dies): then we go
    demo.close()


if __name__ == "__main__":
    main()
