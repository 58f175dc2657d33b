"""``python -m agents``: one parser with subcommands, one exit-code convention, one usage-error path."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

import agents.cli
from agents.cli import COMMANDS, EXIT_USAGE, ask_main, main
from agents.llm.stub_server import StubLLMServer, toy_policy

ROOT = Path(__file__).resolve().parents[3]
LISTING = "usage: python -m agents {ask,eval,stub} ..."


@pytest.mark.parametrize(("argv", "code"), [([], 2), (["-h"], 0), (["--help"], 0), (["bogus"], 2)])
def test_no_or_unknown_command_prints_the_command_list_on_stderr(argv, code, capsys):
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(LISTING)
    assert all(f"  {name:<5} " in err for name in COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_has_its_own_help_on_stdout(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m agents {command} [-h]")


def test_ask_dispatches_and_prints_the_json_object(monkeypatch):
    with StubLLMServer(responder=toy_policy) as srv:
        monkeypatch.setenv("LLM_BASE_URL", srv.url)
        monkeypatch.setenv("LLM_MODEL", "stub")
        out = io.StringIO()
        assert ask_main(["What is 6 * 7?", "--mode", "act", "--json", "--tools", "calculate"], out) == 0
    data = json.loads(out.getvalue())
    assert data["runs"]["act"]["answer"] == "42" and data["model"] == f"stub at {srv.url}"


def test_stub_dispatches_to_the_toy_server(capsys):
    stop = threading.Event()
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(main(["stub", "--port", "0"], until=stop)))
    thread.start()
    try:
        for _ in range(100):
            if "stub model at http://127.0.0.1:" in capsys.readouterr().out:
                break
            stop.wait(0.05)
        else:
            pytest.fail("the stub server never said where it listens")
    finally:
        stop.set()
        thread.join(10)
    assert result == [0]


def test_a_new_command_is_one_module_and_one_line(monkeypatch, capsys):
    module = types.ModuleType("toy_command")
    module.HELP, module.DESCRIPTION = "say hello", "Say hello."
    module.configure = lambda parser: parser.add_argument("--name", default="world")
    module.run = lambda args: print(f"hello {args.name}") or 0
    monkeypatch.setitem(sys.modules, "toy_command", module)
    monkeypatch.setitem(agents.cli.COMMANDS, "hello", "toy_command")
    assert main(["hello", "--name", "class"]) == 0
    assert capsys.readouterr().out == "hello class\n"
    assert main(["hello", "--nmae", "x"]) == EXIT_USAGE
    assert "python -m agents hello: error: unrecognized arguments: --nmae x" in capsys.readouterr().err


def test_an_invalid_environment_variable_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("LLM_TIMEOUT", "soon")
    assert main(["ask", "What is 2 + 2?"]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == ["python -m agents ask: error: LLM_TIMEOUT must be a number of seconds from 0.1 to "
                                "86400, got 'soon'"]


def test_a_bad_environment_value_in_a_subprocess_is_one_line_without_traceback():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_"))}
    env.update(PYTHONPATH=str(ROOT), LLM_BASE_URL="http://127.0.0.1:9/v1", LLM_MAX_CONCURRENT="many")
    done = subprocess.run([sys.executable, "-m", "agents", "ask", "What is 2 + 2?", "--json"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["python -m agents ask: error: LLM_MAX_CONCURRENT must be an integer from 0 "
                                        "to 1000, got 'many'"]


def test_one_exit_code_convention():
    """The codes live in agents/cli/exits.py only: no command module declares its own."""
    for path in (ROOT / "agents").rglob("*.py"):
        if path.name != "exits.py":
            text = path.read_text()
            assert "USAGE_ERROR =" not in text and "EXIT_USAGE =" not in text, path
