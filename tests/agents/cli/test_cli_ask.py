"""``python -m agents ask`` as a user runs it (moved from tests/agents/test_end_to_end.py with the CLI into
agents/cli/): the documented ``--json`` object, and usage errors that exit 2 without a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.llm.stub_server import StubLLMServer, toy_policy

ROOT = Path(__file__).resolve().parents[3]
QUESTION = "What is 17 * 23 + 5?"


@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_cli_json_done_when(protocol):
    """The issue's acceptance check, run as a user would: a subprocess with LLM_BASE_URL set."""
    with StubLLMServer(responder=toy_policy) as srv:
        env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "LLM_API_KEY", "HF_HUB_OFFLINE")}
        env.update(LLM_BASE_URL=srv.url, LLM_MODEL="stub", PYTHONPATH=str(ROOT))
        done = subprocess.run(
            [sys.executable, "-m", "agents", "ask", QUESTION, "--mode", "all", "--json", "--protocol", protocol,
             "--tools", "calculate"],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
        )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["question"] == QUESTION and set(data["runs"]) == {"think", "act", "react"}
    for mode in ("act", "react"):
        run = data["runs"][mode]
        assert "396" in run["answer"] and run["error"] is None and run["forced"] is False
        assert run["steps"][0]["action"] == "calculate" and run["steps"][0]["observation"] == "396"
        assert set(run["steps"][0]) == {"thought", "action", "input", "observation", "elapsed_s"}
        assert run["llm_calls"] == 2 and run["tool_calls"] == 1
        assert set(run["usage"]) >= {"prompt_tokens", "completion_tokens"} and run["elapsed_s"] > 0


def test_cli_usage_errors_exit_nonzero():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args in (["ask", "   "], ["ask", "q", "--mode", "nope"], ["ask", "q", "--max-steps", "0"], ["bogus"]):
        done = subprocess.run([sys.executable, "-m", "agents", *args], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=60)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
