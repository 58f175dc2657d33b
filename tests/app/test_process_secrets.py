"""``python app.py`` and its run workers keep the token from every other process of their user.

The app is started the production way, with a canary token in its environment. A "same-user attacker" (a
process with exactly the app's credentials) then tries to read ``/proc/<pid>/environ`` of the app and of its
worker: both are refused, while a dumpable process of that user with the same canary is read, so the
refusal is the app's doing. Run as a plain user, everything is that user; run as root, the app and the attacker
are both dropped to the Space's uid, keeping only the right to read files (this machine's Python lives in
root's home), so to the kernel they are the same user.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CANARY = "hf_canary_app_process_6b1e0d4f"
PLAIN_UID = 1000  # the Space's user
READER = (
    "import sys\n"
    "for pid in sys.argv[2:]:\n"
    "    try:\n"
    "        block = open(f'/proc/{pid}/environ', 'rb').read()\n"
    "        print('canary' if sys.argv[1].encode() in block else 'clean')\n"
    "    except PermissionError:\n"
    "        print('denied')\n"
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")


def same_user() -> list[str]:
    """The command prefix giving a process the app's credentials: none as a plain user; as root, the Space's uid
    with one capability, reading any file, given to the app and the attacker alike."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={PLAIN_UID}", f"--regid={PLAIN_UID}", "--clear-groups",
            "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search", "--"]


@pytest.fixture
def home() -> Iterator[Path]:
    """A home the app's user may write (Gradio's and huggingface_hub's caches)."""
    folder = Path(tempfile.mkdtemp(prefix="app-secrets-"))
    try:
        folder.chmod(0o755)
        if os.geteuid() == 0:
            os.chown(folder, PLAIN_UID, PLAIN_UID)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (/proc/<pid>/stat is readable for any process)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(pid):
            found.append(int(entry))
    return found


def attack(*pids: int) -> list[str]:
    """What a process with the app's credentials reads of each pid's environment: denied, canary or clean."""
    done = subprocess.run([*same_user(), sys.executable, "-c", READER, CANARY, *map(str, pids)], env={}, cwd="/",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.timeout(180)
def test_the_app_and_its_worker_are_unreadable_to_their_own_user(home):
    if same_user() and (shutil.which("setpriv") is None or subprocess.run(
            [*same_user(), sys.executable, "-c", "import gradio"], capture_output=True, timeout=120).returncode):
        pytest.skip("cannot run the app as an unprivileged user here (setpriv with ambient capabilities)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_", "APP_", "SPACE_", "GRADIO_"))}
    env.update(HF_TOKEN=CANARY, LLM_API_KEY=CANARY, LLM_BASE_URL="http://127.0.0.1:9/v1", LLM_MODEL="stub",
               APP_RUN_WORKERS="1", GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(free_port()),
               GRADIO_ANALYTICS_ENABLED="False", GRADIO_TEMP_DIR=str(home / "gradio"), HOME=str(home),
               XDG_CACHE_HOME=str(home / "cache"), PYTHONDONTWRITEBYTECODE="1")
    app = subprocess.Popen([*same_user(), sys.executable, "app.py"], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    control = subprocess.Popen([*same_user(), sys.executable, "-c", "import sys; sys.stdin.read()"], cwd="/",
                               env={"HF_TOKEN": CANARY}, stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 150
        while not children(app.pid) and time.monotonic() < deadline:  # the worker starts once the app serves
            assert app.poll() is None, app.stderr.read()
            time.sleep(0.5)
        [worker] = children(app.pid)
        seen = attack(app.pid, worker, control.pid)
        while seen[:2] != ["denied", "denied"] and time.monotonic() < deadline:  # the worker's first statement
            time.sleep(0.2)
            seen = attack(app.pid, worker, control.pid)
        assert seen == ["denied", "denied", "canary"]
        if os.geteuid() == 0:  # root (CAP_SYS_PTRACE) still reads them: the worker's holds no secret at all
            block = Path(f"/proc/{worker}/environ").read_bytes()
            assert CANARY.encode() not in block and b"HF_TOKEN=" not in block
            assert CANARY.encode() in Path(f"/proc/{app.pid}/environ").read_bytes()
    finally:
        control.stdin.close()  # type: ignore[union-attr]
        control.wait(10)
        app.terminate()
        app.wait(30)
