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
    """``ask --mode all --json`` answers in every mode, run as a user would: a subprocess with LLM_BASE_URL set."""
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


def ask(srv: StubLLMServer, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "LLM_API_KEY", "HF_HUB_OFFLINE")}
    env.update(LLM_BASE_URL=srv.url, LLM_MODEL="stub", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "agents", "ask", QUESTION, "--tools", "calculate", *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)


@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_cli_reflexion_graded_against_a_wrong_expected_answer_reflects_and_tries_again(protocol):
    """Through the real client and the toy model: each trial computes 396, "400" is expected, so it reflects."""
    with StubLLMServer(responder=toy_policy) as srv:
        done = ask(srv, "--mode", "reflexion", "--json", "--protocol", protocol, "--expected", "400", "--trials", "2")
        bodies = [r.body for r in srv.requests]
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    run = data["runs"]["reflexion"]
    assert data["expected"] == "400" and run["verdict"]["mark"] == "✗" and "396" in run["answer"]
    assert [(t["n"], t["correct"], t["by"]) for t in run["trials"]] == [(1, False, "expected"), (2, False, "expected")]
    reflection = run["trials"][0]["reflection"]
    assert reflection.startswith("The last attempt failed.") and run["trials"][1]["reflection"] is None
    assert run["llm_calls"] == len(bodies) == 5 and run["tool_calls"] == 2  # 2 trials × 2 calls + 1 reflection
    second_trial = bodies[3]["messages"]
    assert second_trial[1]["content"] == f"Question: {QUESTION}" and reflection in second_trial[2]["content"]
    assert all("400" not in json.dumps(b["messages"]) for b in bodies)  # the model never sees the expected answer


def test_cli_reflexion_without_an_expected_answer_asks_the_model_to_check_itself():
    with StubLLMServer(responder=toy_policy) as srv:
        done = ask(srv, "--mode", "reflexion")
    assert done.returncode == 0, done.stderr
    assert "── Trial 1 of 3 ──" in done.stdout and "Trial 2" not in done.stdout
    assert "✓ correct (answer '396'; the model's own judgement): the calculator computed it." in done.stdout
    assert "Reflexion: 396" in done.stdout and "1 trial · 1 step · 3 LLM calls" in done.stdout


def test_cli_trials_out_of_range_is_a_usage_error():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "agents", "ask", "q", "--mode", "reflexion", "--trials", "11"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert done.returncode == 2 and "--trials must be between 1 and 10" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "m" * 10_000], "--model must be at most 200 characters (got 10,000)"),
    (["--model", "org/model\nX-Header: 1"], "--model must be one line without control characters"),
    (["--max-tokens", "-5"], "--max-tokens must be between 1 and 1000000"),
    (["--max-tokens", "1000001"], "--max-tokens must be between 1 and 1000000"),
    (["--temperature", "-0.1"], "--temperature must be between 0 and 2"),
    (["--temperature", "nan"], "--temperature must be between 0 and 2"),
    (["--max-steps", "51"], "--max-steps must be between 1 and 50"),
])
def test_cli_refuses_a_model_setting_out_of_range_instead_of_changing_it(args, message, capsys):
    """Refused in one usage line before any model is asked (no server is configured: none could be)."""
    from agents.cli import EXIT_USAGE, ask_main, eval_main

    assert ask_main([QUESTION, *args]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"python -m agents ask: error: {message}" and "Traceback" not in err
    if args[0] != "--temperature" and args[0] != "--max-steps":  # eval takes --model and --max-tokens too
        assert eval_main(["--dataset", "hotpotqa", *args]) == EXIT_USAGE
        assert message in capsys.readouterr().err


def test_cli_mode_takes_a_list_of_the_pages_mode_ids_and_the_summary_has_the_tables_lines():
    """``--mode think,act,react,codeact`` runs the four side by side; the summary ends with the page table's lines:
    ✓ / ✗ and F1 per mode, which answers agree, and how many got the expected answer."""
    with StubLLMServer(responder=toy_policy) as srv:
        done = ask(srv, "--mode", "think,act,react,codeact", "--expected", "396")
        listed = ask(srv, "--mode", "think,act,react,codeact", "--json")
    assert done.returncode == 0, done.stderr
    summary = done.stdout.split("=" * 60)[-1]
    for title in ("Think-only", "Act-only", "ReAct", "CodeAct"):
        assert f"{title}: " in summary, summary
    assert "Think-only: ✗ F1 0.00 · about 400" in summary and "ReAct: ✓ F1 1.00 · 396" in summary
    assert "⚖ Think-only differs; Act-only and ReAct and CodeAct agree." in summary
    assert summary.rstrip().endswith("Expected answer: 396 — 3 of 4 right.")
    assert list(json.loads(listed.stdout)["runs"]) == ["think", "act", "react", "codeact"]


@pytest.mark.parametrize("value", ["think,nope", ",", "all,think"])
def test_cli_mode_list_with_an_unknown_id_is_a_usage_error_naming_the_ids(value, capsys):
    from agents.cli import EXIT_USAGE, ask_main

    assert ask_main([QUESTION, "--mode", value]) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --mode" in err and "think, act, react" in err and "codeact" in err
