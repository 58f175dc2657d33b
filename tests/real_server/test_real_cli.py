"""``python -m agents ask`` against a real model server (llama-cpp-python + SmolLM2-135M), as a user runs it.

A 135M model seldom keeps the ReAct format, so these tests do not judge answers: they check that
every run ends with an answer or one clear line — never a traceback, never "the model returned an
empty answer" for a reply the server cut off — in every mode and both protocols.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.real_server, pytest.mark.slow]

QUESTION = "What is 17 * 23 + 5?"
BUDGET = {"LLM_MAX_TOKENS": "64", "LLM_TIMEOUT": "120"}  # a slow CPU model: small replies, patient waits
INTERRUPTED = "Disconnected from client"  # llama-cpp-python's log line for a request it ended early


def ask(server, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Run the CLI as a subprocess against the real server (tools: the offline calculator only)."""
    command = [sys.executable, "-m", "agents", "ask", QUESTION, "--max-steps", "2", "--tools", "calculate",
               "--temperature", "0", *args]
    return subprocess.run(command, env=server.env(**BUDGET, **env), capture_output=True, text=True, timeout=280)


def runs_of(result: subprocess.CompletedProcess) -> dict[str, dict]:
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]
    return json.loads(result.stdout)["runs"]


def assert_each_run_ends_clearly(runs: dict[str, dict]) -> None:
    """An answer, or one short error line; and never the misreported empty answer."""
    for mode, run in runs.items():
        assert (run["answer"] is None) != (run["error"] is None), (mode, run)
        if run["error"] is not None:
            assert "\n" not in run["error"] and len(run["error"]) < 400, (mode, run["error"])
            assert "empty answer" not in run["error"], (mode, run["error"])
            assert "Traceback" not in run["error"] and "internal error" not in run["error"], (mode, run["error"])
        assert run["llm_calls"] >= 1 and run["usage"]["completion_tokens"] >= 0, (mode, run)


@pytest.mark.parametrize(("mode", "protocol"),
                         [("think", "text"), ("act", "tools"), ("react", "tools"), ("codeact", "text")])
def test_one_mode_ends_with_an_answer_or_one_clear_line(real_server, mode, protocol):
    runs = runs_of(ask(real_server, "--mode", mode, "--protocol", protocol, "--json"))
    assert list(runs) == [mode]
    assert_each_run_ends_clearly(runs)


def test_readable_output_has_no_traceback(real_server):
    result = ask(real_server, "--mode", "think")
    assert result.returncode == 0 and "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]
    assert "Model: smollm2-135m at http://127.0.0.1:" in result.stdout
    summary = result.stdout.rpartition("=" * 20)[2]  # after the streamed reply (printed once), the summary
    assert "Think-only:" in summary and ("LLM call" in summary or "Model error" in summary), result.stdout[-2000:]


def test_max_tokens_cuts_a_ramble_and_says_so(real_server):
    """``--max-tokens`` reaches the server, and a reply it cut (``finish_reason: "length"``) is flagged."""
    command = [sys.executable, "-m", "agents", "ask", "Explain step by step how a bicycle works, part by part.",
               "--mode", "think", "--temperature", "0", "--max-tokens", "8"]
    result = subprocess.run(command, env=real_server.env(LLM_TIMEOUT="120"), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]
    assert "token limit" in result.stdout, result.stdout[-2000:]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_all_modes_in_turn_with_max_concurrent_1(real_server, protocol):
    """``LLM_MAX_CONCURRENT=1``: the three modes take turns, so the server interrupts none of them."""
    mark = real_server.mark()
    runs = runs_of(ask(real_server, "--mode", "all", "--protocol", protocol, "--json", LLM_MAX_CONCURRENT="1"))
    assert list(runs) == ["think", "act", "react"]
    assert_each_run_ends_clearly(runs)
    assert real_server.log_since(mark).count(INTERRUPTED) == 0, real_server.log_since(mark)[-3000:]
    assert all(run["error"] is None for run in runs.values()), runs


@pytest.mark.timeout(300)
def test_all_modes_at_once_against_a_one_at_a_time_server_wait_their_turn(real_server):
    """No limit set: the server closes replies as new requests arrive. The app learns that it serves one
    request at a time and sends it one at a time from then on: every mode ends without an error (a mode waits
    for its turn instead), and the waiting is counted apart from each mode's own time."""
    mark = real_server.mark()
    runs = runs_of(ask(real_server, "--mode", "all", "--protocol", "tools", "--json"))
    assert_each_run_ends_clearly(runs)
    assert real_server.log_since(mark).count(INTERRUPTED) >= 1, real_server.log_since(mark)[-3000:]  # some were cut
    assert [run["error"] for run in runs.values() if run["error"]] == [], runs
    assert any(0 < run["waiting_s"] < run["elapsed_s"] for run in runs.values()), runs


@pytest.mark.parametrize("expected", [None, "396"])
def test_reflexion_ends_with_an_answer_or_one_clear_line(real_server, expected):
    """Two trials, judged by the model itself or against the expected answer; whatever SmolLM2 writes."""
    extra = ["--expected", expected] if expected else []
    runs = runs_of(ask(real_server, "--mode", "reflexion", "--trials", "2", "--json", *extra))
    assert list(runs) == ["reflexion"]
    assert_each_run_ends_clearly(runs)
    trials = runs["reflexion"].get("trials", [])
    assert 1 <= len(trials) <= 2, runs
    by = "expected" if expected else "self"
    assert all(t["by"] in (by, None) for t in trials), trials  # None: that trial ended with a model error


def test_llm_base_url_alone_finds_the_model_the_server_lists(real_server):
    """No ``LLM_MODEL``: the CLI asks the server's ``/v1/models`` once, and sends and names the model it lists."""
    env = real_server.env(**BUDGET)
    del env["LLM_MODEL"]
    mark = real_server.mark()
    result = subprocess.run([sys.executable, "-m", "agents", "ask", QUESTION, "--mode", "think", "--temperature", "0"],
                            env=env, capture_output=True, text=True, timeout=280)
    assert result.returncode == 0 and "Traceback" not in result.stdout + result.stderr, result.stderr[-2000:]
    assert f"Model: {real_server.model} at {real_server.url}" in result.stdout
    assert real_server.log_since(mark).count("GET /v1/models") == 1, real_server.log_since(mark)[-2000:]


def test_the_calls_name_the_model_that_answered(real_server):
    """llama-cpp-python names its model in every chunk; each call's Usage carries it."""
    from agents.comparison import compare
    from agents.llm.discovery import list_models, resolve_model
    from agents.llm.hf import HFInferenceModel
    from agents.llm.settings import LLMSettings
    from agents.modes import RunConfig
    from tools.calculator import calculate
    from tools.registry import ToolRegistry

    assert list_models(real_server.url).ids == (real_server.model,)
    settings = resolve_model(LLMSettings(model="", base_url=real_server.url, max_tokens=16, timeout_s=120))
    trace = compare(QUESTION, ["think"], model_factory=lambda: HFInferenceModel(settings),
                    registry=ToolRegistry([calculate]), config=RunConfig(max_tokens=16, temperature=0))["think"]
    assert settings.model == real_server.model and trace.answered_by == real_server.model, trace.to_dict()
