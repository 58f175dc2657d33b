"""tools/hardening.py: which variables are secrets, and that a non-dumpable process keeps its environment from
another process of the same user (while a dumpable one does not, so the check proves something)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools import hardening
from tools.hardening import is_secret

ROOT = Path(__file__).resolve().parents[2]
CANARY = "hf_canary_hardening_0c5d9e2a"
PLAIN_UID = 1000  # the Space's user
TARGET = (
    "import sys\n"
    "if sys.argv[1] == 'harden':\n"
    "    sys.path.insert(0, sys.argv[2])\n"
    "    from hardening import make_non_dumpable\n"
    "    assert make_non_dumpable()\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
)
READER = (
    "import sys\n"
    "try:\n"
    "    block = open(f'/proc/{sys.argv[1]}/environ', 'rb').read()\n"
    "    print('canary' if sys.argv[2].encode() in block else 'clean')\n"
    "except PermissionError:\n"
    "    print('denied')\n"
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")


@pytest.mark.parametrize("name", ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_API_TOKEN", "LLM_API_KEY", "GITHUB_TOKEN",
                                  "OAUTH_CLIENT_SECRET", "DB_PASSWORD", "TOKEN", "hf_token", "Aws_Secret_Access_Key"])
def test_secret_names(name):
    assert is_secret(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "HF_HOME", "HF_TOKEN_PATH", "LLM_BASE_URL", "KEYBOARD", "TOKENS",
                                  "SPACE_ID", "OAUTH_CLIENT_ID", "PYTHONPATH", "APP_RUN_WORKERS"])
def test_other_names(name):
    assert not is_secret(name)


def test_make_non_dumpable_is_idempotent_and_thread_safe():
    """In a child process: the test runner itself stays dumpable (debuggers, core dumps)."""
    code = (
        "import threading\n"
        "from tools.hardening import is_dumpable, make_non_dumpable\n"
        "before = is_dumpable()\n"
        "results = []\n"
        "threads = [threading.Thread(target=lambda: results.append(make_non_dumpable())) for _ in range(8)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "print(before, results, make_non_dumpable(), is_dumpable())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.split(None, 1) == ["True", f"{[True] * 8} True False\n"], done.stderr


def test_off_linux_it_does_nothing(monkeypatch):
    monkeypatch.setattr(hardening, "LINUX", False)
    monkeypatch.setattr(hardening, "_prctl", lambda *a: pytest.fail("prctl called off Linux"))
    assert hardening.make_non_dumpable() is False and hardening.is_dumpable() is None


@pytest.fixture
def readable_hardening() -> Iterator[Path]:
    """tools/hardening.py where an unprivileged user can import it (the checkout may be a private folder)."""
    base = Path(tempfile.mkdtemp(prefix="hardening-"))
    try:
        shutil.copy2(ROOT / "tools" / "hardening.py", base / "hardening.py")
        base.chmod(0o755)
        (base / "hardening.py").chmod(0o644)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def as_plain_user() -> dict:
    """Popen arguments running a process as a plain user: this test's own user, or (as root) the Space's uid."""
    return {} if os.geteuid() != 0 else {"user": PLAIN_UID, "group": PLAIN_UID, "extra_groups": []}


def plain_python() -> str | None:
    """An interpreter the plain user can run (root's pyenv may sit in a folder it cannot enter)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        try:
            ok = subprocess.run([candidate, "-I", "-S", "-c", "pass"], env={}, cwd="/", capture_output=True,
                                timeout=30, **as_plain_user())
        except OSError:
            continue
        if ok.returncode == 0:
            return candidate
    return None


def read_as_plain_user(python: str, pid: int) -> str:
    done = subprocess.run([python, "-I", "-S", "-c", READER, str(pid), CANARY], env={}, cwd="/",
                          capture_output=True, text=True, timeout=30, **as_plain_user())
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("harden, seen", [("harden", "denied"), ("leave", "canary")], ids=["non-dumpable", "dumpable"])
def test_a_same_user_process_reads_the_environment_of_a_dumpable_process_only(readable_hardening, harden, seen):
    """The "same-user attacker": a process of the target's (plain) user reading ``/proc/<target>/environ``."""
    python = plain_python()
    if python is None:
        pytest.skip("no Python interpreter the plain user can run")
    target = subprocess.Popen([python, "-I", "-S", "-c", TARGET, harden, str(readable_hardening)],
                              env={"HF_TOKEN": CANARY}, cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, **as_plain_user())
    try:
        assert target.stdout.readline().strip() == "ready", target.stderr.read()
        assert read_as_plain_user(python, target.pid) == seen
    finally:
        target.stdin.close()
        target.wait(10)


@pytest.mark.parametrize("environ, on", [({}, True), ({"APP_NON_DUMPABLE": "on"}, True),
                                         ({"APP_NON_DUMPABLE": "off"}, False), ({"APP_NON_DUMPABLE": "0"}, False),
                                         ({"APP_NON_DUMPABLE": "off", "SPACE_ID": "me/space"}, True)])
def test_app_non_dumpable_off_is_a_door_that_a_space_keeps_shut(environ, on):
    assert hardening.hardened(environ) is on


def test_with_the_door_open_a_process_stays_dumpable():
    code = "from tools.hardening import is_dumpable, make_non_dumpable\nprint(make_non_dumpable(), is_dumpable())\n"
    env = {**os.environ, "APP_NON_DUMPABLE": "off"}
    env.pop("SPACE_ID", None)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "True"], done.stderr
