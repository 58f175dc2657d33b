"""``python -m agents ask --step`` in a subprocess against the stub server, driven through stdin."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from agents.llm.stub_server import StubLLMServer, toy_policy

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What is 17 * 23 + 5?"


def cli_env(server: StubLLMServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "LLM_API_KEY", "HF_HUB_OFFLINE")
           and not k.startswith("LLM_")}
    env.update(LLM_BASE_URL=server.url, LLM_MODEL="stub", PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    return env


def lines_of(stream) -> queue.Queue:
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    return lines


def read_until(lines: queue.Queue, text: str, limit: float = 30.0) -> list[str]:
    seen, deadline = [], time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"{text!r} never came; got {''.join(seen)!r}")


def test_step_waits_for_enter_after_each_step():
    with StubLLMServer(responder=toy_policy) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agents", "ask", QUESTION, "--step", "--tools", "calculate"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(server),
            cwd=ROOT)
        try:
            out = lines_of(proc.stdout)
            before = read_until(out, "Enter: next step")
            assert any("[Act-only] ⏸ step 1 done" in line for line in before)
            assert any("[Think-only] Final Answer" in line for line in before)  # Think ends in its one step
            time.sleep(0.5)
            assert len(server.requests) == 3 and server.in_flight == 0  # one call each, then nothing while waiting
            assert proc.poll() is None  # still waiting for Enter
            proc.stdin.write("\n")
            proc.stdin.flush()
            after = read_until(out, "ReAct:")  # the summary at the end
            assert proc.wait(timeout=30) == 0, proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
    text = "".join(before + after)
    assert text.count("[ReAct] Final Answer") == 1 and "Enter: next step" not in "".join(after)
    assert len(server.requests) == 5


def test_end_of_input_runs_to_the_end_and_json_is_unchanged():
    with StubLLMServer(responder=toy_policy) as server:
        done = subprocess.run(
            [sys.executable, "-m", "agents", "ask", QUESTION, "--step", "--json", "--tools", "calculate"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, env=cli_env(server), cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)  # prompts go to stderr; stdout stays one JSON object
    assert "Enter: next step" in done.stderr
    assert set(data) == {"question", "model", "runs"} and set(data["runs"]) == {"think", "act", "react"}
    for mode in ("act", "react"):
        assert "396" in data["runs"][mode]["answer"] and data["runs"][mode]["llm_calls"] == 2
