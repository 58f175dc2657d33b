"""python_repl sandbox: resource attacks end within the limits, and the boundary holds with the filters off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools import default_registry
from tools.sandbox import Limits, run_python

ROOT = Path(__file__).resolve().parents[2]
SMALL = Limits(cpu_s=1, wall_s=2.5, memory_mb=256)

RESOURCE_ATTACKS = [
    # A busy loop meets the CPU limit first on a quiet machine, the wall clock first on a loaded one: both end it.
    ("infinite-loop", "while True:\n    pass", "timeout", "Timed out after"),
    ("busy-arithmetic", "x = 0\nwhile True:\n    x = (x + 1) % 7", "timeout", "Timed out after"),
    ("sleep", "import time\ntime.sleep(60)", "timeout", "wall-clock limit"),
    ("sleep-loop", "import time\nwhile True:\n    time.sleep(0.1)", "timeout", "wall-clock limit"),
    # Growth loops hit the memory or the CPU limit first depending on the machine's speed and load: both contain it.
    ("list-growth", "x = []\nwhile True:\n    x.append('a' * 1000)", ("memory", "timeout"), "limit"),
    ("int-list-growth", "x = []\nwhile True:\n    x.append(1)", ("memory", "timeout"), "limit"),
    ("string-doubling", "s = 'x'\nwhile True:\n    s = s + s", "memory", "Memory limit exceeded"),
    ("huge-power", "2**(10**9)", "timeout", "Timed out after"),
    ("tower-power", "10**10**10", "timeout", "Timed out after"),
    # A 32-bit guest cannot even index 10**10 items: refused before any memory is taken.
    ("huge-string", "'a'*10**10", ("memory", "error"), "Error"),
    ("huge-list", "[1]*10**10", ("memory", "error"), "Error"),
    ("gigabyte", "b = bytearray(2**30)", "memory", "Memory limit exceeded"),
    ("huge-bytearray", "bytearray(10**9)", "memory", "Memory limit exceeded"),
    ("count-forever", "import itertools\nlist(itertools.count())", ("memory", "timeout"), "limit"),
    # 10**8 digits: the memory limit, or on a busy machine the CPU limit first (both end it within the limits)
    ("decimal-precision", "import decimal\ndecimal.getcontext().prec = 10**8\ndecimal.Decimal(1) / 7",
     ("memory", "timeout"), ""),
    ("deep-recursion", "def f(n):\n    return f(n + 1)\nf(0)", "error", "RecursionError: maximum recursion depth"),
    ("repr-recursion", "x = []\nfor i in range(10**5):\n    x = [x]\nprint(x)", "error", "RecursionError"),
    ("print-flood", "while True:\n    print('spam' * 100)", "timeout", "Timed out after"),
    ("fork-loop", "import os\nwhile True:\n    os.fork()", "refused", "import of 'os'"),
    (
        "thread-bomb",
        "import threading\nwhile True:\n    threading.Thread(target=lambda: None).start()",
        "refused",
        "threading",
    ),
]


@pytest.mark.parametrize(
    "code, status, message", [a[1:] for a in RESOURCE_ATTACKS], ids=[a[0] for a in RESOURCE_ATTACKS]
)
def test_resource_attacks_end_within_the_limits(code: str, status: str | tuple[str, ...], message: str) -> None:
    start = time.monotonic()
    result = run_python(code, SMALL)
    elapsed = time.monotonic() - start
    assert result.status in ((status,) if isinstance(status, str) else status), (result.status, result.error)
    assert message in result.error
    assert elapsed < SMALL.wall_s + 1.5
    assert len(result.output) < SMALL.output_chars + 200


def test_default_limits_through_the_tool() -> None:
    r = default_registry().call("python_repl", "while True:\n    pass")
    assert r.is_error and r.output in ("Timed out after 5 s (CPU limit).",
                                       "Timed out after 8 s (wall-clock limit; the program was stopped).")
    assert r.elapsed_s < 9  # the CPU limit, or on a starved machine the wall clock's 8 s and the stop after it


def test_output_flood_is_truncated_with_a_marker() -> None:
    result = run_python("while True:\n    print('spam' * 100)", SMALL)
    assert result.output.startswith("spamspam") and result.output.endswith("…[output truncated]")


def test_output_before_a_failure_is_kept() -> None:
    r = default_registry().call("python_repl", "print('step 1')\nx = 1 / 0")
    assert r.is_error
    assert r.output.startswith("Output before the error:\nstep 1\nTraceback (most recent call last):")
    assert r.output.endswith("ZeroDivisionError: division by zero")


def test_system_exit() -> None:
    assert run_python("print('bye')\nraise SystemExit", SMALL).output == "bye\n"
    failed = run_python("raise SystemExit(3)", SMALL)
    assert failed.status == "error" and failed.error == "SystemExit: 3"


def test_calls_do_not_affect_each_other() -> None:
    first = run_python("import math\nmath.pi = 3\nx = 5\nprint(math.pi, x)", SMALL)
    assert first.output == "3 5\n"
    second = run_python("import math\nprint(math.pi)\nprint(x)", SMALL)
    assert second.output == "3.141592653589793\n" and "NameError: name 'x' is not defined" in second.error


# --- layer 2 alone (static policy switched off): restricted builtins and importer ------------------


@pytest.mark.parametrize(
    "code, message",
    [
        ("__import__('os')", "import of 'os' is not allowed"),
        ("import subprocess", "import of 'subprocess' is not allowed"),
        ("from os import path", "import of 'os' is not allowed"),
        ("import collections.abc, json.decoder", "import of 'json.decoder' is not allowed"),
        ("open('/etc/passwd')", "NameError: name 'open' is not defined"),
        ("eval('1')", "NameError: name 'eval' is not defined"),
        ("getattr(1, 'real')", "NameError: name 'getattr' is not defined"),
        ("__builtins__['__loader__']", "KeyError: '__loader__'"),
        ("import operator\noperator.attrgetter", "has no attribute 'attrgetter'"),
        ("import string\nstring.Formatter", "has no attribute 'Formatter'"),
        ("import functools\nfunctools.update_wrapper", "has no attribute 'update_wrapper'"),
    ],
)
def test_runtime_layer_alone(code: str, message: str) -> None:
    result = run_python(code, SMALL, check_policy=False)
    assert result.status == "error" and message in result.error


# --- the boundary alone (policy and restricted builtins off): CPython for WASI in Wasmtime -------------


def _unrestricted(code: str) -> str:
    result = run_python(code, SMALL, check_policy=False, restrict=False)
    return f"{result.status}\n{result.output}\n{result.error}"


def test_child_environment_is_empty(canary_env: tuple[str, ...]) -> None:
    out = _unrestricted(
        "import os\nprint(sorted(os.environ))\n"
        "try:\n    print(repr(open('/proc/self/environ').read()))\n"
        "except OSError as exc:\n    print(type(exc).__name__)"
    )
    assert out.startswith("ok\n[]\nFileNotFoundError\n")  # no variables, and no /proc at all
    for canary in canary_env:
        assert canary not in out


@pytest.mark.parametrize("code, message", [
    ("import os\nos.fork()", "has no attribute 'fork'"),
    ("import subprocess\nsubprocess.run(['/bin/true'])", "wasi does not support processes"),
    ("import os\nos.kill(1, 9)", "has no attribute 'kill'"),
    ("import ctypes", "No module named 'ctypes'"),
    ("import threading\nthreading.Thread(target=print).start()", "can't start new thread"),
    ("import socket\nsocket.socket().connect(('127.0.0.1', 80))", "Not supported"),
])  # fmt: skip
def test_no_processes_signals_threads_sockets_or_native_code(code: str, message: str) -> None:
    out = _unrestricted(code)
    assert out.startswith("error") and message in out, out


def test_a_signal_the_program_raises_ends_that_program_alone() -> None:
    result = run_python("import signal\nsignal.raise_signal(9)\nprint('after')", SMALL, check_policy=False,
                        restrict=False)
    assert result.status == "crashed" and "after" not in result.output
    assert run_python("print('next')", SMALL).output == "next\n"


def test_files_outside_the_scratch_folder_cannot_be_written_or_read(tmp_path: Path) -> None:
    target = Path("/tmp") / f"sandbox-probe-{os.getpid()}.txt"
    try:
        out = _unrestricted(f"f = open({str(target)!r}, 'w')\nf.write('x' * 100)\nf.close()")
        assert out.startswith("error") and "FileNotFoundError" in out
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)
    assert "FileNotFoundError" in _unrestricted(f"open({str(ROOT / 'app.py')!r}).read()")


def test_the_scratch_folder_is_the_guests_root_and_each_call_gets_a_fresh_one() -> None:
    first = _unrestricted("import os\nopen('note.txt', 'w').write('hi')\nprint(os.getcwd(), os.listdir('/'))")
    assert first.startswith("ok\n/ ['note.txt']\n"), first
    assert _unrestricted("import os\nprint(os.listdir('/'))").startswith("ok\n[]\n")


def test_a_file_in_the_scratch_folder_is_limited_in_size() -> None:
    out = _unrestricted("f = open('big', 'wb')\nfor _ in range(20):\n    f.write(b'x' * 2**20)\nf.close()")
    assert out.startswith("error") and "OSError" in out


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
def test_secrets_in_the_apps_own_process_environment_stay_out_of_reach(canary_env: tuple[str, ...]) -> None:
    """The app's *initial* environment (what /proc/<pid>/environ shows) holds the canaries; even a program
    that bypassed both Python layers, walked to `os` and read /proc, must not see them."""
    attack = (
        "import os\n"
        "leaks = [repr(dict(os.environ))]\n"
        "for path in ('/proc/APP_PID/environ', '/proc/self/environ', '/proc/1/environ'):\n"
        "    try:\n"
        "        leaks.append(open(path, 'rb').read().decode(errors='replace'))\n"
        "    except OSError as exc:\n"
        "        leaks.append(type(exc).__name__)\n"
        "print(leaks)\n"
    )
    walk = (
        "w = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]\n"
        "g = w.__init__.__globals__\n"
        "print(g['environ'])\n"
        "print(g['read'](g['open']('/proc/APP_PID/environ', 0), 100000))\n"
    )
    driver = (
        "import json, os, sys\n"
        "from tools.sandbox import Limits, run_python\n"
        "code = {k: v.replace('APP_PID', str(os.getpid())) for k, v in json.loads(sys.argv[1]).items()}\n"
        "r1 = run_python(code['attack'], Limits(cpu_s=2, wall_s=4), check_policy=False, restrict=False)\n"
        "r2 = run_python(code['walk'], Limits(cpu_s=2, wall_s=4), check_policy=False)\n"
        "r3 = run_python(code['walk'], Limits(cpu_s=2, wall_s=4))\n"
        "print(json.dumps([r1.status, r1.output, r1.error, r2.status, r2.output, r2.error, r3.status, r3.error]))\n"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": str(Path.home())}
    env.update(HF_TOKEN=canary_env[0], SECRET_CANARY=canary_env[1])
    proc = subprocess.run(
        [sys.executable, "-c", driver, json.dumps({"attack": attack, "walk": walk})],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for canary in canary_env:
        assert canary not in proc.stdout and canary not in proc.stderr
    s1, out1, _e1, s2, out2, e2, s3, e3 = json.loads(proc.stdout)
    assert s1 == "ok" and out1.startswith("['{}', ") and out1.count("FileNotFoundError") == 3
    # Layer 2 alone does not stop a dunder walk (that is what the policy is for): it reaches the guest's own
    # os, whose environment is empty and whose file system has no /proc ...
    assert s2 == "error" and "environ({})" in out2 and ("FileNotFoundError" in e2 or "OSError" in e2)
    # ... and with the policy on, nothing runs at all.
    assert s3 == "refused" and "__class__" in e3


def test_stop_ends_a_running_program_promptly() -> None:
    """The run's Stop reaches python_repl through the registry (tools.registry.STOP): the host is killed at
    once, not at the 8 s wall limit (~25 ms plus the kill; generous here, for a loaded machine)."""
    import threading

    stop, pressed = threading.Event(), []

    def press() -> None:
        pressed.append(time.monotonic())
        stop.set()

    run = default_registry()
    run.call("python_repl", "print(1)")  # a booted spare is ready: the program below starts at once
    threading.Timer(0.5, press).start()
    result = run.call("python_repl", "while True:\n    pass", stop=stop)
    ended = time.monotonic()
    assert result.is_error and result.output == "Stopped."
    assert ended - pressed[0] < 0.3, ended - pressed[0]
