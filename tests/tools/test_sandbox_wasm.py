"""tools/sandbox_wasm.py: a guest cannot pass for its host, and no scratch folder outlives the process that made it.

The host says how it ended on a status channel the guest cannot reach, so a guest's ``os._exit(4)`` or ``(5)``
(the host's own exit statuses) reads as the program's exit, never as "could not be set up" or as a trap. A process
that is asked to stop (SIGTERM, as app.main and the run workers handle it) ends its hosts and removes their
folders, and a host whose owner is killed outright removes its own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tools import sandbox_wasm
from tools.registry import ToolRegistry
from tools.sandbox import Limits, run_python
from tools.sandbox_session import SandboxSession

ROOT = Path(__file__).resolve().parents[2]
HOST_LINES = ("could not be set up", "runtime stopped the program", "exhausted the interpreter's stack")
FORGED = "The sandbox's runtime stopped the program (forged)."


def step(session: SandboxSession, code: str):
    run = session.run(code)
    try:
        while True:
            next(run)
    except StopIteration as done:
        return done.value


@pytest.mark.parametrize("code", [4, 5])
def test_a_guests_exit_with_the_hosts_own_status_is_its_own(code):
    program = f"import os, sys\nsys.stderr.write({FORGED!r})\nos._exit({code})"
    result = run_python(program, check_policy=False, restrict=False)
    assert result.status == "crashed" and result.error == f"The program ended unexpectedly (exit status {code})."
    assert not any(line in result.error for line in HOST_LINES)
    with SandboxSession(ToolRegistry([]), check_policy=False, restrict=False) as session:
        assert step(session, "x = 1").ok
        ended = step(session, program)
        assert ended.status == "crashed" and ended.error == f"The program ended the sandbox (exit status {code})."
        again = step(session, "print('x' in dir())")
        assert again.ok and again.restarted and again.output == "False\n"


def test_the_hosts_own_setup_failure_comes_through_its_channel(monkeypatch, tmp_path):
    bogus = tmp_path / "not-a-module.cwasm"
    bogus.write_bytes(b"\0" * 64)
    monkeypatch.setattr(sandbox_wasm, "compiled_module", lambda: bogus)
    result = run_python("print(1)", Limits(output_chars=1234))  # a key of its own: no booted spare is used
    assert result.status == "crashed" and result.error.startswith("The sandbox could not be set up: "), result.error


CHILD = """
import json, sys, threading, time
from tools import children, sandbox_wasm
from tools.registry import ToolRegistry
from tools.sandbox import run_python
from tools.sandbox_session import SandboxSession
if sys.argv[1] == "term":
    children.tidy_on_sigterm(sandbox_wasm.shutdown)  # as app.main and the run workers do
assert run_python("print(1)").ok  # and a booted spare is kept
session = SandboxSession(ToolRegistry([]))
run = session.run("x = 1")
for _ in run: pass
if sys.argv[1] == "term":  # a busy guest: killed outright, its owner could not end it (its CPU limit does)
    threading.Thread(target=run_python, args=("while True:\\n    pass",), daemon=True).start()
time.sleep(1.0)
hosts = [h.proc.pid for h in sandbox_wasm._hosts]
print(json.dumps(hosts), flush=True)
time.sleep(120)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a host that dropped to nobody (the test is root)
        pass
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def folders(temp: Path) -> list[Path]:
    """The scratch folders in a temp folder (not the app's own, where the sandboxes' memory budget is kept)."""
    return [p for p in temp.iterdir() if not p.name.startswith("think-act-react-")]


@pytest.mark.parametrize("how", ["term", "kill"])
def test_no_scratch_folder_or_host_outlives_its_owner(tmp_path, how):
    """SIGTERM: the owner ends its hosts (a busy one too) and removes their folders; SIGKILL: each idle host sees its
    pipes close and removes its own folder."""
    scratch = Path(tempfile.mkdtemp(prefix="scratch-owner-"))  # in the system's temp folder: as root, the hosts
    scratch.chmod(0o1777)  # drop to nobody, who must reach their own folder to remove it
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}
    owner = subprocess.Popen([sys.executable, "-c", CHILD, how], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        hosts = json.loads(owner.stdout.readline() or "null")
        assert hosts and len(hosts) >= 2, owner.stderr.read()  # the spare, the session's (and the busy one's)
        assert len(folders(scratch)) == len(hosts)
        owner.send_signal(signal.SIGTERM if how == "term" else signal.SIGKILL)
        owner.wait(30)
        deadline = time.monotonic() + (5 if how == "term" else 15)
        while (folders(scratch) or any(map(alive, hosts))) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert folders(scratch) == [] and not any(map(alive, hosts))
        if how == "term":
            assert owner.returncode == -signal.SIGTERM  # it still ends by SIGTERM, as before
    finally:
        if owner.poll() is None:
            owner.kill()
        shutil.rmtree(scratch, ignore_errors=True)
