"""python_repl sandbox: resource attacks end within the limits, and each process layer holds on its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools import default_registry
from tools.sandbox import Limits, run_python

ROOT = Path(__file__).resolve().parents[2]
SMALL = Limits(cpu_s=1, wall_s=2.5, memory_mb=256)

RESOURCE_ATTACKS = [
    ("infinite-loop", "while True:\n    pass", "timeout", "Timed out after 1 s (CPU limit)"),
    ("busy-arithmetic", "x = 0\nwhile True:\n    x = (x + 1) % 7", "timeout", "CPU limit"),
    ("sleep", "import time\ntime.sleep(60)", "timeout", "wall-clock limit"),
    ("sleep-loop", "import time\nwhile True:\n    time.sleep(0.1)", "timeout", "wall-clock limit"),
    # Growth loops hit the memory or the CPU limit first depending on the machine's speed and load: both contain it.
    ("list-growth", "x = []\nwhile True:\n    x.append('a' * 1000)", ("memory", "timeout"), "limit"),
    ("int-list-growth", "x = []\nwhile True:\n    x.append(1)", ("memory", "timeout"), "limit"),
    ("string-doubling", "s = 'x'\nwhile True:\n    s = s + s", "memory", "Memory limit exceeded"),
    ("huge-power", "2**(10**9)", "timeout", "CPU limit"),
    ("tower-power", "10**10**10", "timeout", "CPU limit"),
    ("huge-string", "'a'*10**10", "memory", "Memory limit exceeded"),
    ("huge-list", "[1]*10**10", "memory", "Memory limit exceeded"),
    ("huge-bytearray", "bytearray(10**9)", "memory", "Memory limit exceeded"),
    ("count-forever", "import itertools\nlist(itertools.count())", "memory", "Memory limit exceeded"),
    ("decimal-precision", "import decimal\ndecimal.getcontext().prec = 10**8\ndecimal.Decimal(1) / 7", "memory", ""),
    ("deep-recursion", "def f(n):\n    return f(n + 1)\nf(0)", "error", "RecursionError: maximum recursion depth"),
    ("repr-recursion", "x = []\nfor i in range(10**5):\n    x = [x]\nprint(x)", "error", "RecursionError"),
    ("print-flood", "while True:\n    print('spam' * 100)", "timeout", "CPU limit"),
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
    assert r.is_error and r.output == "Timed out after 5 s (CPU limit)."
    assert r.elapsed_s < 8


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


# --- layer 3 alone (policy and restricted builtins off): what the OS process limits still hold ---


def _unrestricted(code: str) -> str:
    result = run_python(code, SMALL, check_policy=False, restrict=False)
    return f"{result.status}\n{result.output}\n{result.error}"


def test_child_environment_is_empty(canary_env: tuple[str, ...]) -> None:
    out = _unrestricted(
        "import os\nprint(sorted(os.environ))\n"
        "try:\n    print(repr(open('/proc/self/environ').read()))\n"
        "except OSError as exc:\n    print(type(exc).__name__)"
    )
    # Python itself may set LC_CTYPE (PEP 538 locale coercion); nothing is inherited from the app.
    assert out.startswith("ok\n[] \n") or out.startswith("ok\n['LC_CTYPE']\n") or out.startswith("ok\n[]\n")
    assert "''" in out or "PermissionError" in out
    for canary in canary_env:
        assert canary not in out


def test_no_new_processes() -> None:
    out = _unrestricted("import os\nfor _ in range(20):\n    if os.fork() == 0:\n        os._exit(0)")
    assert "BlockingIOError" in out or "Resource temporarily unavailable" in out


def test_no_subprocess() -> None:
    out = _unrestricted("import subprocess\nsubprocess.run(['/bin/true'])")
    assert out.startswith("error") and ("BlockingIOError" in out or "PermissionError" in out)


def test_files_cannot_be_written(tmp_path: Path) -> None:
    target = Path("/tmp") / f"sandbox-probe-{os.getpid()}.txt"
    try:
        out = _unrestricted(f"f = open({str(target)!r}, 'w')\nf.write('x' * 100)\nf.close()")
        assert not out.startswith("ok")
        assert not target.exists() or target.stat().st_size == 0
    finally:
        target.unlink(missing_ok=True)


def test_working_directory_is_temporary_and_removed() -> None:
    result = run_python(
        "import os\nprint(os.getcwd())\nprint(os.listdir('.'))", SMALL, check_policy=False, restrict=False
    )
    if os.geteuid() == 0:  # the child runs as nobody: its root-owned 0700 directory is not even listable
        assert "PermissionError" in result.error or result.output
    cwd = result.output.splitlines()[0]
    assert Path(cwd).name.startswith("repl-") and not Path(cwd).exists()


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc")
def test_secrets_in_the_apps_own_process_environment_stay_out_of_reach(canary_env: tuple[str, ...]) -> None:
    """The app's *initial* environment (what /proc/<pid>/environ shows) holds the canaries; even a program
    that bypassed both Python layers, walked to `os` and read /proc, must not see them."""
    attack = (
        "import os\n"
        "leaks = [repr(dict(os.environ))]\n"
        "for path in (f'/proc/{os.getppid()}/environ', '/proc/self/environ', '/proc/1/environ'):\n"
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
        "print(g['read'](g['open'](f\"/proc/{g['getppid']()}/environ\", 0), 100000))\n"
    )
    driver = (
        "import json, sys\n"
        "from tools.sandbox import Limits, run_python\n"
        "code = json.loads(sys.argv[1])\n"
        "r1 = run_python(code['attack'], Limits(cpu_s=2, wall_s=4), check_policy=False, restrict=False)\n"
        "r2 = run_python(code['walk'], Limits(cpu_s=2, wall_s=4), check_policy=False)\n"
        "r3 = run_python(code['walk'], Limits(cpu_s=2, wall_s=4))\n"
        "print(json.dumps([r1.status, r1.output, r1.error, r2.status, r2.output, r2.error, r3.status, r3.error]))\n"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT)}
    env.update(HF_TOKEN=canary_env[0], SECRET_CANARY=canary_env[1])
    proc = subprocess.run(
        [sys.executable, "-c", driver, json.dumps({"attack": attack, "walk": walk})],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for canary in canary_env:
        assert canary not in proc.stdout and canary not in proc.stderr
    s1, out1, _e1, s2, out2, e2, s3, e3 = json.loads(proc.stdout)
    assert s1 == "ok" and ("{}" in out1 or "{'LC_CTYPE': 'C.UTF-8'}" in out1)
    if os.geteuid() == 0:  # dropped to nobody: the app's /proc entries are not readable
        assert out1.count("PermissionError") >= 2
    # Layer 2 alone does not stop a dunder walk (that is what the policy is for) ...
    assert s2 == "error" and "environ(" in out2
    if os.geteuid() == 0:
        assert "PermissionError" in e2
    # ... and with the policy on, nothing runs at all.
    assert s3 == "refused" and "__class__" in e3


def _python_usable_by_nobody() -> str | None:
    for candidate in (sys.executable, "/usr/bin/python3"):
        if not Path(candidate).exists():
            continue
        try:
            probe = subprocess.run(
                [candidate, "-I", "-S", "-c", "import sys; assert sys.version_info >= (3, 10)"],
                user=65534, group=65534, extra_groups=[], env={}, cwd="/", capture_output=True, check=False,
            )  # fmt: skip
        except OSError:
            continue
        if probe.returncode == 0:
            return candidate
    return None


@pytest.fixture
def tools_for_nobody() -> Iterator[Path]:
    """A copy of the ``tools`` package that the unprivileged user can read.

    The checkout itself may sit in a private folder (``mktemp -d`` makes 0700 folders, and so does
    pytest's own temp root), which the user the app is switched to cannot enter.
    """
    base = Path(tempfile.mkdtemp(prefix="tools-for-nobody-"))
    try:
        shutil.copytree(ROOT / "tools", base / "tools", ignore=shutil.ignore_patterns("__pycache__"))
        for path in [base, *base.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start the app as an unprivileged user")
@pytest.mark.parametrize("harden", [True, False], ids=["hardened", "not-hardened"])
def test_non_root_app_like_a_space(canary_env: tuple[str, ...], harden: bool, tools_for_nobody: Path) -> None:
    """A Space runs the app as a normal user: the child then has the app's uid. Forks are still refused
    (RLIMIT_NPROC applies to non-root), and the app's /proc/<pid>/environ is only protected because the
    sandbox makes the app non-dumpable (``harden_parent_process``) — shown by switching that off."""
    python = _python_usable_by_nobody()
    if python is None:
        pytest.skip("no Python interpreter executable by an unprivileged user")
    driver = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(tools_for_nobody)!r})\n"
        "from tools.sandbox import Limits, run_python\n"
        "code = ('import os\\nleak = []\\n'\n"
        '        \'try:\\n    leak.append(open(f"/proc/{os.getppid()}/environ", "rb")\'\n'
        '        \'.read().decode(errors="replace"))\\n\'\n'
        "        'except OSError as exc:\\n    leak.append(type(exc).__name__)\\n'\n"
        "        'print(os.getuid(), leak)\\nos.fork()\\n')\n"
        "r = run_python(code, Limits(cpu_s=2, wall_s=4), check_policy=False, restrict=False)\n"
        "ok = run_python('import datetime\\nprint(datetime.date(2024, 1, 2) + datetime.timedelta(days=30))')\n"
        "print(json.dumps([r.status, r.output, r.error, ok.output]))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HF_TOKEN": canary_env[0], "SANDBOX_NO_HARDEN": "0" if harden else "1"}
    proc = subprocess.run(
        [python, "-c", driver], user=65534, group=65534, extra_groups=[], env=env, cwd="/",
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    status, output, error, ok_output = json.loads(proc.stdout)
    assert output.startswith("65534 ")
    assert "BlockingIOError" in error  # no new processes, even as a normal user
    assert ok_output == "2024-02-01\n"
    if harden:
        assert canary_env[0] not in proc.stdout and "PermissionError" in output
    else:  # the documented gap that harden_parent_process closes
        assert canary_env[0] in output
