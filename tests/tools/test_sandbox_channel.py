"""The CodeAct sandbox's tool channel under attack: each attempt gets a clear refusal (an error the trace can
show), nothing but valid calls to enabled tools reaches the registry, and the child never holds a secret.

Attacks from ordinary programs go through all three layers. Attacks that need the channel's descriptors
(forged frames, a child that never reads its replies) switch the policy and the restricted builtins off,
as ``tests/tools/test_sandbox_limits.py`` does, to show that the parent's checks hold on their own: the
parent treats every byte from the child as hostile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from session_kit import CALLS, FAST, REGISTRY, drive, finished, started
from test_sandbox_escapes import CONTAINED, REFUSED

from tools.registry import ToolRegistry
from tools.sandbox_session import SandboxSession, SessionLimits

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = "broke the tool channel's protocol"
# A program with the layers off reaches the channel's descriptors: the guest's stdout (out) and stdin (in).
FORGE = (
    "import os, sys, json, time\n"
    "W, R = 1, 0\n"
    "def frame(obj):\n"
    "    data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()\n"
    "    os.write(W, len(data).to_bytes(4, 'big') + data)\n"
    "def reply():\n"
    "    n = int.from_bytes(os.read(R, 4), 'big')\n"
    "    return json.loads(os.read(R, n))\n"
)


@pytest.fixture(autouse=True)
def _no_calls_yet():
    CALLS.clear()


def unguarded(registry: ToolRegistry = REGISTRY, limits: SessionLimits = FAST) -> SandboxSession:
    return SandboxSession(registry, limits, check_policy=False, restrict=False)


# --- tools that are not enabled ----------------------------------------------------------------------


def test_a_tool_that_is_not_enabled_is_not_even_a_name_in_the_program():
    with SandboxSession(REGISTRY, FAST) as s:
        records, result = drive(s, "get_weather('Paris')")
    assert result.status == "error" and "NameError: name 'get_weather' is not defined" in result.error
    assert records == [] and CALLS == []


@pytest.mark.parametrize("tool", ["get_weather", "python_repl", "__import__", "calculate\x00"])
def test_a_forged_call_to_a_tool_that_is_not_enabled_is_refused_and_never_runs(tool):
    from tools.python_repl import python_repl

    with unguarded(ToolRegistry([*REGISTRY.tools, python_repl])) as s:
        records, result = drive(s, FORGE + f"frame({{'op': 'call', 'tool': {tool!r}, 'args': {{'x': '1'}}}})\n"
                                           "print(reply())")
    assert result.ok and '"ok": false' not in result.output and "'ok': False" in result.output
    assert started(records) == [tool] and finished(records)[0].is_error
    refusal = "is not a tool enabled in this run (enabled: calculate, nap, broken, echo, lookup)"
    assert refusal in finished(records)[0].output
    assert CALLS == []


# --- forged and oversized frames ------------------------------------------------------------------------


@pytest.mark.parametrize("attack, reason", [
    ("frame(b'hello')", "a frame that is not JSON"),
    ("frame(b'\\xff\\xfe')", "a frame that is not JSON"),
    ("frame(b'[' * 100000)", "a frame that is not JSON (RecursionError)"),
    ("frame({'op': 'exec', 'code': 'import os'})", "not a call, a result or a greeting"),
    ("frame({'op': 'call', 'tool': 7, 'args': {}})", "a call without a tool name"),
    ("frame({'op': 'call', 'tool': 'calculate', 'args': ['1+1']})", "arguments are not an object"),
    ("frame({'op': 'ready'})", "a second greeting"),
    ("frame({'op': 'done', 'step': 99, 'status': 'ok', 'error': '', 'final': None})", "a result for another step"),
    ("frame({'op': 'done', 'step': 1, 'status': 'root', 'error': '', 'final': None})", "fields of the wrong type"),
    ("os.write(W, (100 * 2**20).to_bytes(4, 'big'))", "a frame of 104,857,600 bytes (the limit is 262,144)"),
])
def test_a_forged_frame_ends_the_step_at_once_and_nothing_reaches_the_registry(attack, reason):
    with unguarded() as s:
        start = time.monotonic()
        records, result = drive(s, FORGE + attack + "\ntime.sleep(30)")
        assert result.status == "crashed" and PROTOCOL in result.error and reason in result.error, result.error
        assert time.monotonic() - start < 2 and records == [] and CALLS == []
        assert drive(s, "print('again')")[1].restarted  # a fresh process for the next step


def test_a_forged_result_gains_nothing_and_the_real_one_is_caught_between_steps():
    with unguarded() as s:
        _, forged = drive(s, FORGE + "frame({'op': 'done', 'step': 1, 'status': 'ok', 'error': '', 'final': 'x'})")
        assert forged.final == "x"  # what final_answer('x') does anyway
        _, nxt = drive(s, "print(1)")
        assert nxt.status == "crashed" and PROTOCOL in nxt.error  # the real result arrived before or after "run"
        assert "frames sent between steps" in nxt.error or "a result for another step" in nxt.error


def test_a_call_with_a_100_mb_argument_is_refused_in_the_child_without_a_frame():
    with SandboxSession(REGISTRY, SessionLimits(cpu_s=4, session_cpu_s=30, wall_s=8, step_s=20)) as s:
        records, result = drive(s, "big = '1' * 10**8\ntry:\n    calculate(big)\nexcept ToolError as e:\n    print(e)")
        assert result.ok and "calculate: the arguments are over 262,144 characters" in result.output
        _, wide = drive(s, "echo('é' * 100000)")  # few characters, many bytes once escaped
        assert wide.status == "error" and "ToolError: echo: the call is 600,0" in wide.error
    assert records == [] and CALLS == []


@pytest.mark.parametrize("args, message", [
    ("{1, 2}", "arguments must be text, numbers, lists or dicts"),
    ("float('nan')", "arguments must be text, numbers, lists or dicts"),
])
def test_arguments_that_are_not_json_are_refused_in_the_child(args, message):
    with SandboxSession(REGISTRY, FAST) as s:
        records, result = drive(s, f"calculate({args})")
    assert result.status == "error" and message in result.error and records == [] and CALLS == []


def test_arguments_nested_too_deeply_are_refused_by_the_parent():
    with SandboxSession(REGISTRY, FAST) as s:
        records, result = drive(s, "calculate(" + "[" * 10 + "1" + "]" * 10 + ")")
    assert result.status == "error" and "ToolError: calculate: the arguments nest more than 8 levels" in result.error
    assert finished(records)[0].is_error and CALLS == []


# --- floods, stalls, nesting --------------------------------------------------------------------------


def test_a_flood_of_calls_is_cut_at_the_limit():
    with SandboxSession(REGISTRY, FAST) as s:
        records, result = drive(s, "for i in range(1000):\n    calculate('1+1')")
        assert result.status == "error" and "too many tool calls in one step (the limit is 20)" in result.error
        assert len(CALLS) == 20 and len(started(records)) == 21 and finished(records)[-1].is_error
        assert drive(s, "print(i)")[1].output == "20\n"  # the process lives on: only that call was refused
        CALLS.clear()
        records, result = drive(s, "for i in range(1000):\n    try:\n        calculate('1+1')\n    except ToolError:\n"
                                   "        pass")
        assert result.status == "error" and "went on calling tools after the limit of 20" in result.error
        assert len(CALLS) == 20 and len(started(records)) == 21


def test_a_child_that_never_reads_its_replies_only_blocks_itself():
    limits = SessionLimits(cpu_s=2, session_cpu_s=30, wall_s=1.5, step_s=20)
    with unguarded(limits=limits) as s:
        start = time.monotonic()
        _, result = drive(s, FORGE + "for i in range(19):\n"
                                     "    frame({'op': 'call', 'tool': 'echo', 'args': {'text': 'x' * 4000}})\n"
                                     "time.sleep(30)")
        assert result.status == "timeout" and "wall-clock limit" in result.error
        assert time.monotonic() - start < 3 and 10 < len(CALLS) < 19  # the replies filled the pipe: it stopped reading


@pytest.mark.parametrize("code, message", [
    ("import threading", "import of 'threading' is not allowed"),
    ("import _thread", "import of '_thread' is not allowed"),
    ("from concurrent import futures", "import of 'concurrent' is not allowed"),
])
def test_threads_are_not_importable(code, message):
    with SandboxSession(REGISTRY, FAST) as s:
        assert message in drive(s, code)[1].error
    with SandboxSession(REGISTRY, FAST, check_policy=False) as s:  # the importer alone refuses them too
        assert "is not allowed in this sandbox" in drive(s, code)[1].error


def test_a_call_made_while_another_call_is_under_way_is_refused():
    nested = ("class D(dict):\n"
              "    def items(self):\n"
              "        calculate('1+1')\n"
              "        return dict.items(self)\n"
              "    def keys(self):\n"
              "        calculate('1+1')\n"
              "        return dict.keys(self)\n"
              "calculate(D(expression='2+2'))")
    with SandboxSession(REGISTRY, FAST) as s:
        records, result = drive(s, nested)
    assert result.status == "error" and "ToolError: calculate: tool calls cannot be nested" in result.error
    assert records == [] and CALLS == []


# --- the existing corpus, through the session ---------------------------------------------------------


def test_every_escape_the_one_shot_sandbox_refuses_is_refused_here_too():
    with SandboxSession(REGISTRY, FAST) as s:
        for name, code, reason in REFUSED:
            _, result = drive(s, code)
            assert result.status == "refused" and reason in result.error, name
        assert s.pid is None  # nothing ever ran


@pytest.mark.parametrize("code, expect", [(c, e) for _, c, e in CONTAINED], ids=[i for i, _, _ in CONTAINED])
def test_what_the_one_shot_sandbox_contains_is_contained_here_too(canary_env, code, expect):
    with SandboxSession(REGISTRY, FAST) as s:
        _, result = drive(s, code)
    assert result.status != "refused" and expect in result.output + result.error
    for canary in canary_env:
        assert canary not in result.output + result.error


# --- secrets --------------------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
def test_the_child_never_sees_a_token_of_the_app(canary_env):
    """An app started with HF_TOKEN set: a program with every Python layer off looks for it everywhere."""
    hunt = ("import os\nleaks = [repr(dict(os.environ))]\n"
            "for path in ('/proc/APP_PID/environ', '/proc/self/environ', '/proc/1/environ'):\n"
            "    try:\n        leaks.append(open(path, 'rb').read().decode(errors='replace'))\n"
            "    except OSError as exc:\n        leaks.append(type(exc).__name__)\n"
            "print(leaks, os.listdir('/'))")
    driver = ("import json, sys\n"
              "from tools.registry import ToolRegistry\n"
              "from tools.sandbox_session import SandboxSession\n"
              "s = SandboxSession(ToolRegistry([]), check_policy=False, restrict=False)\n"
              "import os\nstep = s.run(sys.argv[1].replace('APP_PID', str(os.getpid())))\n"
              "try:\n    next(step)\nexcept StopIteration as done:\n    r = done.value\n"
              "s.close()\n"
              "print(json.dumps([r.status, r.output, r.error]))\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT),
           "HF_TOKEN": canary_env[0], "SECRET_CANARY": canary_env[1]}
    proc = subprocess.run([sys.executable, "-c", driver, hunt], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    status, output, error = json.loads(proc.stdout)
    assert status == "ok", error
    for canary in canary_env:
        assert canary not in proc.stdout and canary not in proc.stderr
    assert output.startswith("['{}',") and output.rstrip().endswith("[]")  # no variables; an empty scratch folder
    assert output.count("FileNotFoundError") == 3  # there is no /proc inside the boundary
