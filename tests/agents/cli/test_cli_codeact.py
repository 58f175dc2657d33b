"""``python -m agents ask --mode codeact`` as a user runs it: the real InferenceClient over HTTP against the stub
server, the real sandbox session and the real calculator; the documented ``--json`` object."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy

ROOT = Path(__file__).resolve().parents[3]
QUESTION = "What is 17 * 23 + 5?"


def ask(server: StubLLMServer, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "LLM_API_KEY", "HF_HUB_OFFLINE")}
    env.update(LLM_BASE_URL=server.url, LLM_MODEL="stub", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "agents", "ask", QUESTION, "--mode", "codeact", *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=90)


def test_a_program_composes_two_calls_and_the_next_step_reuses_its_variable():
    with StubLLMServer() as server:
        server.script(
            StubReply("Thought: Multiply, then add, with the calculator.\n<code>\na = calculate('17 * 23')\n"
                      "b = calculate(a + ' + 5')\nprint(a, b)\n</code>\nObservation: 1000"),
            StubReply("Thought: b holds the answer.\n<code>\nfinal_answer(b)\n</code>"),
        )
        done = ask(server, "--json", "--tools", "calculate,wikipedia_search")
        requests = [r.body for r in server.requests]
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["runs"]["codeact"]
    assert run["answer"] == "396" and run["error"] is None and not run["forced"]
    assert (run["llm_calls"], run["tool_calls"], len(run["steps"])) == (2, 2, 2)
    first = run["steps"][0]
    assert first["action"] == "python" and first["observation"] == "391 396"
    assert [c["input"] for c in first["calls"]] == [{"expression": "17 * 23"}, {"expression": "391 + 5"}]
    assert [c["observation"] for c in first["calls"]] == ["391", "396"]
    assert requests[0]["stop"] == ["Observation:", "</code>"]
    system = requests[0]["messages"][0]["content"]
    assert "def calculate(expression: str) -> str:" in system and "def wikipedia_search(query: str)" in system
    assert "def get_weather" not in system  # only the enabled tools
    assert requests[1]["messages"][-1] == {"role": "user", "content": "Observation: 391 396"}


def test_the_toy_model_answers_in_codeact_too():
    with StubLLMServer(responder=toy_policy) as server:
        done = ask(server, "--json", "--tools", "calculate")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["runs"]["codeact"]
    assert run["answer"] == "396" and run["tool_calls"] == 1 and run["steps"][0]["calls"][0]["observation"] == "396"


def test_the_readable_trace_shows_the_program_and_its_calls():
    with StubLLMServer(responder=toy_policy) as server:
        done = ask(server, "--tools", "calculate")
    assert done.returncode == 0, done.stderr
    # one mode streams its reply: the program shows as the model wrote it, once (not again as a parsed "Code")
    assert "<code>\nresult = calculate('17 * 23 + 5')\nprint(result)\n" in done.stdout
    assert done.stdout.count("result = calculate(") == 1 and "Code (python)" not in done.stdout
    assert '    ↳ call: calculate[{"expression": "17 * 23 + 5"}]' in done.stdout and "    ↳ result [" in done.stdout
    assert "CodeAct: 396" in done.stdout and "1 tool call" in done.stdout


def test_the_native_protocol_says_codeact_is_text_only_without_calling_the_model():
    with StubLLMServer(responder=toy_policy) as server:
        done = ask(server, "--json", "--protocol", "tools")
        assert server.requests == []
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["runs"]["codeact"]
    assert run["answer"] is None and run["error"].startswith("CodeAct runs over the text protocol only")
