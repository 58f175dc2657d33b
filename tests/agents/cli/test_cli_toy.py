"""``python -m agents ask`` with nothing configured runs the toy model as the page does, says so once on stderr,
and prints each step once; ``APP_TOY_MODEL=0`` turns the toy off and the "not configured" problem is said once."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.cli import ask_main
from agents.cli.ask import _Printer
from agents.events import Action, FinalAnswer, LLMError, Observation, Thought, TokenDelta
from agents.llm.backend import TOY_NOTICE
from agents.trace import Trace

ROOT = Path(__file__).resolve().parents[3]
QUESTION = "What is 17 * 23 + 5?"
CALCULATOR_ACTION = "Action: calculate"


def ask_bare(*args: str, **env: str) -> subprocess.CompletedProcess:
    """The CLI as a new user runs it: no LLM_*, HF_* or SPACE_* variable (nor APP_TOY_MODEL) set."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_", "SPACE_", "APP_TOY"))}
    return subprocess.run([sys.executable, "-m", "agents", "ask", QUESTION, *args], capture_output=True, text=True,
                          env={**clean, "PYTHONPATH": str(ROOT), **env}, cwd=ROOT, timeout=90)


def test_nothing_configured_the_toy_answers_in_every_mode_and_each_step_prints_once():
    done = ask_bare("--tools", "calculate")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == TOY_NOTICE  # the one line, naming what to set and how to turn the toy off
    assert all(name in TOY_NOTICE for name in ("HF_TOKEN", "LLM_BASE_URL", "APP_TOY_MODEL=0"))
    out = done.stdout
    assert out.startswith("Model: the built-in toy model")
    for mode in ("Act-only", "ReAct"):
        assert out.count(f"[{mode}] {CALCULATOR_ACTION}[17 * 23 + 5]") == 1
        assert out.count(f"[{mode}] Observation") == 1 and out.count(f"[{mode}] Final Answer: 396") == 1
        assert f"{mode:>10}: 396" in out
    assert out.count("[ReAct] Thought: I need to compute this exactly.") == 1
    assert out.count(CALCULATOR_ACTION) == 2 and "Model error" not in out


def test_one_mode_streams_its_reply_and_does_not_print_it_again():
    done = ask_bare("--mode", "react", "--tools", "calculate")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    step = ("Thought: I need to compute this exactly.\nAction: calculate\nAction Input: 17 * 23 + 5\n"
            "Observation [")
    assert out.count(step) == 1 and out.count(CALCULATOR_ACTION) == 1 and out.count("compute this exactly") == 1
    assert out.count("Final Answer: 396") == 1 and "     ReAct: 396" in out


def test_the_json_object_from_the_toy():
    done = ask_bare("--mode", "react", "--json", "--tools", "calculate")
    assert done.returncode == 0 and done.stderr.strip() == TOY_NOTICE
    data = json.loads(done.stdout)
    assert data["model"] == "the built-in toy model" and data["runs"]["react"]["answer"] == "396"


def test_app_toy_model_0_turns_it_off_and_the_problem_is_said_once():
    done = ask_bare("--tools", "calculate", APP_TOY_MODEL="0")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert "no model configured" in done.stdout and "toy model" not in done.stdout
    everything = done.stdout + done.stderr
    assert everything.count("HF_TOKEN is not set") == 1  # not once more per mode, nor in the summary
    assert done.stdout.count("Model error: the same as above") == 3


def test_on_a_space_no_toy_starts():
    done = ask_bare("--mode", "think", "--json", SPACE_ID="someone/space")
    assert done.returncode == 0 and "HF_TOKEN is not set" in done.stderr and TOY_NOTICE not in done.stderr
    assert json.loads(done.stdout)["runs"]["think"]["error"].startswith("HF_TOKEN is not set")


def test_an_invalid_app_toy_model_is_a_usage_error(monkeypatch, capsys):
    for name in [k for k in os.environ if k.startswith(("LLM_", "HF_", "SPACE_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("APP_TOY_MODEL", "maybe")
    assert ask_main([QUESTION]) == 2
    assert "APP_TOY_MODEL must be one of 1/0" in capsys.readouterr().err


def test_a_model_error_shared_by_the_modes_is_said_once():
    out = io.StringIO()
    printer = _Printer(out, live=False)
    traces = {m: Trace(m, QUESTION) for m in ("think", "act")}
    for mode, trace in traces.items():
        event = LLMError("the server said no (HTTP 503) " + "x" * 500)
        trace.add(event)
        printer.on_event(mode, event)
    printer.summary(traces)
    text = out.getvalue()
    assert text.count("HTTP 503") == 1 and "[Act-only] Model error: the same as above" in text
    assert "(no answer: model error, the same as above)" in text


@pytest.mark.parametrize("streamed", [True, False])
def test_a_step_is_printed_once_whether_or_not_it_was_streamed(streamed):
    out = io.StringIO()
    printer = _Printer(out, live=True)
    if streamed:
        printer.on_event("react", TokenDelta("Thought: add them\nAction: calculate\nAction Input: 1 + 2"))
    for event in (Thought("add them"), Action("calculate", "1 + 2"), Observation("calculate", "3"),
                  FinalAnswer("3", forced=True)):
        printer.on_event("react", event)
    text = out.getvalue()
    assert text.count("add them") == 1 and text.count("1 + 2") == 1 and text.count("calculate") == 1
    assert "Observation [0.00 s]: 3" in text and "Final Answer (forced): 3" in text  # not in the stream: printed
