"""No child of ``python app.py`` holds one of the owner's secrets in its environment (issue 47).

The app runs the production way as the Space's user (uid 1000: this user, or root dropped to it), with canaries
in its environment: ``HF_TOKEN``, a ``MY_API_KEY``, ``LLM_API_KEY``, ``APP_SECRET`` and an MCP server's header
secret. A watcher of that same user reads ``/proc/<pid>/environ`` of every process of the user, over and over,
while the app replays a 7 MB upload, shares it, runs ReAct with the Python tool, runs a CodeAct step and calls an
MCP server's tool. The test fails if any child's environment holds a canary, and unless the watcher saw a recording
reader, a run worker and a sandbox host. With ``APP_NON_DUMPABLE=off`` every process stays dumpable, so the watcher
reads them all: the allow-list is tested with the layer in front of it removed; hardened, as deployed, they refuse
it. Then SIGTERM: no scratch folder is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agents.llm.stub_server import StubLLMServer, StubReply
from tests.app.test_process_secrets import free_port, same_user
from tests.app.test_share_limits import dependency, recording, share, upload
from tests.gradio_rest import call
from tests.tools.mcp_kit import mcp_server
from tools import sandbox_wasm

ROOT = Path(__file__).resolve().parents[2]
PLAIN_UID = 1000
CANARIES = {"HF_TOKEN": "hf_CANARY_child_5d1e", "MY_API_KEY": "CANARY_my_api_key_77b3",
            "LLM_API_KEY": "CANARY_llm_key_0c4a", "APP_SECRET": "CANARY_app_secret_91fe",
            "CLASSFACTS_TOKEN": "cf_CANARY_header_e28d"}
BUSY = "sum(i * i for i in range(2_000_000))"  # a second or so of the guest's CPU: long enough to be watched
KINDS = {"recording reader": "ui.recordings.reader", "run worker": "agents.hosting.worker import main",
         "sandbox host": "The sandbox host"}
WATCHER = """
import json, os, select, sys
canaries = [c.encode() for c in sys.argv[1].split(",")]
uid, me, seen = sys.argv[2], os.getpid(), {}
while not select.select([sys.stdin], [], [], 0.02)[0]:
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me or seen.get(entry, (None, "denied"))[1] == []:
            continue  # a process seen holding none is done; one denied or holding some is read again
        try:
            status = open(f"/proc/{entry}/status").read()
            if next(l for l in status.splitlines() if l.startswith("Uid:")).split()[1] != uid:
                continue
            ppid = next(l for l in status.splitlines() if l.startswith("PPid:")).split()[1]
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\\0", b" ")[:600].decode(errors="replace")
        except (OSError, StopIteration):
            continue
        try:
            block = open(f"/proc/{entry}/environ", "rb").read()
            environ = [c.decode() for c in canaries if c in block]
        except PermissionError:
            environ = "denied"
        except OSError:
            continue
        if seen.get(entry) != (cmd, environ):
            seen[entry] = (cmd, environ)
            print(json.dumps({"pid": int(entry), "ppid": int(ppid), "cmd": cmd, "environ": environ}), flush=True)
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")


def reply(body: dict) -> StubReply:
    """The model: a python_repl call, a CodeAct program or an MCP tool call, by the question; then an answer."""
    messages = body.get("messages") or []
    system = str(messages[0].get("content") or "") if messages else ""
    question = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
    answered = len(messages) > 2
    if "<code>" in system:
        code = "final_answer('done')" if answered else f"print({BUSY})"
        return StubReply(text=f"Thought: compute it.\n<code>\n{code}\n</code>")
    if answered:
        return StubReply(text="Thought: done.\nFinal Answer: done")
    if "class" in question:
        return StubReply(text="Thought: ask the class's server.\nAction: classfacts_lookup\nAction Input: room")
    return StubReply(text=f"Thought: run it.\nAction: python_repl\nAction Input: {BUSY}")


@pytest.fixture
def home() -> Iterator[Path]:
    """The app user's home, its temp folder, and the sandbox's compiled runtime copied in (no compile in the test)."""
    folder = Path(tempfile.mkdtemp(prefix="child-secrets-"))
    try:
        for sub in ("tmp", "cache/think-act-react", "gradio", "share"):
            (folder / sub).mkdir(parents=True)
        module = sandbox_wasm.compiled_module()
        shutil.copy2(module, folder / "cache" / "think-act-react" / module.name)
        if os.geteuid() == 0:
            for path in (folder, *folder.rglob("*")):
                os.chown(path, PLAIN_UID, PLAIN_UID)
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def app_environment(home: Path, port: int, model_url: str, mcp_url: str, dumpable: bool) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", **CANARIES,
           "LLM_BASE_URL": model_url, "LLM_MODEL": "stub", "APP_RUN_WORKERS": "1", "APP_SHARE_RUN_MB": "20",
           "APP_SHARE_DIR": str(home / "share"), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "GRADIO_ANALYTICS_ENABLED": "False", "GRADIO_TEMP_DIR": str(home / "gradio"), "HOME": str(home),
           "XDG_CACHE_HOME": str(home / "cache"), "TMPDIR": str(home / "tmp"), "PYTHONDONTWRITEBYTECODE": "1",
           "APP_MCP_SERVERS": json.dumps([{"name": "classfacts", "url": mcp_url,
                                           "headers": {"Authorization": "Bearer ${CLASSFACTS_TOKEN}"}}])}
    if dumpable:
        env["APP_NON_DUMPABLE"] = "off"
    return env


def compare(url: str, question: str, modes: list[str], tools: list[str]) -> None:
    event, data = call(url, "compare", [question, modes, "stub", "text", 3, 0.2, tools, None, None], timeout=120)
    assert event == "complete" and "done" in json.dumps(data), (question, str(data)[:600])


def exec_followed(record: dict, records: list[dict]) -> bool:
    """Whether ``record`` caught a child between its fork and its exec (still the app's program and memory), which
    then ran another program holding none of the canaries: the window a loaded machine makes wide enough to see."""
    later = [r for r in records if r["pid"] == record["pid"]][-1]
    return later["cmd"] != record["cmd"] and later["environ"] in ([], "denied")


def descendants(records: list[dict], root: int) -> list[dict]:
    parents = {r["pid"]: r["ppid"] for r in records}
    kin = {root}
    while True:
        more = {pid for pid, ppid in parents.items() if ppid in kin} - kin
        if not more:
            return [r for r in records if r["pid"] in kin - {root}]
        kin |= more


@pytest.mark.timeout(420)
@pytest.mark.parametrize("dumpable", [True, False], ids=["every process dumpable", "hardened"])
def test_no_child_of_the_app_holds_a_secret_in_its_environment(home, tmp_path, dumpable):
    if same_user() and (shutil.which("setpriv") is None or subprocess.run(
            [*same_user(), sys.executable, "-c", "import gradio"], capture_output=True, timeout=120).returncode):
        pytest.skip("cannot run the app as an unprivileged user here (setpriv with ambient capabilities)")
    big = recording(tmp_path / "big.json", "big", pad_tokens=100_000)  # ~7 MB: its reader lives a second or more
    assert big.stat().st_size > 5_000_000
    port = free_port()
    uid = str(PLAIN_UID if os.geteuid() == 0 else os.getuid())
    with StubLLMServer(reply) as model, mcp_server(token=CANARIES["CLASSFACTS_TOKEN"]) as mcp_url:
        log = (tmp_path / "app.log").open("w")
        app = subprocess.Popen([*same_user(), sys.executable, "app.py"], cwd=ROOT, stdin=subprocess.DEVNULL,
                               env=app_environment(home, port, model.url, mcp_url, dumpable),
                               stdout=log, stderr=subprocess.STDOUT)
        watcher = subprocess.Popen([*same_user(), sys.executable, "-c", WATCHER, ",".join(CANARIES.values()), uid],
                                   cwd="/", env={}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        records: list[dict] = []
        reading = threading.Thread(target=lambda: records.extend(map(json.loads, watcher.stdout)), daemon=True)
        reading.start()
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                assert app.poll() is None, (tmp_path / "app.log").read_text()[-3000:]
                try:
                    if httpx.get(url + "config", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.5)
            file = upload(url, big)
            event, _ = call(url, "replay", [file, "instant"], timeout=180)
            assert event == "complete"
            line = share(url, dependency(url, "share"), file, "watcher-share")
            assert "Share this run" in line, line
            compare(url, "Run some python for me", ["react"], ["python_repl"])
            compare(url, "Compute it in a program", ["codeact"], ["calculate"])
            compare(url, "Which room is the class in?", ["react"], ["classfacts_lookup"])
        finally:
            app.send_signal(signal.SIGTERM)
            try:
                app.wait(60)
            finally:
                if app.poll() is None:
                    app.kill()
                log.close()
            time.sleep(1.0)  # the last looks of the watcher
            watcher.stdin.close()
            watcher.wait(30)
            reading.join(10)
    kids = descendants(records, app.pid)
    seen = {kind: [r for r in kids if marker in r["cmd"]] for kind, marker in KINDS.items()}
    assert all(seen.values()), {k: len(v) for k, v in seen.items()}  # a watcher that sees nothing cannot pass
    holding = [(r["pid"], r["cmd"][:80], r["environ"]) for r in kids if r["environ"] not in ("denied", [])
               and not exec_followed(r, kids)]
    assert holding == []
    if dumpable:  # the layer in front removed: every kind was read, and held nothing
        assert all(any(r["environ"] == [] for r in found) for found in seen.values()), seen
    # and SIGTERM left no sandbox scratch folder behind
    deadline = time.monotonic() + 10
    while list((home / "tmp").glob("repl-*")) + list((home / "tmp").glob("codeact-*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list((home / "tmp").glob("repl-*")) + list((home / "tmp").glob("codeact-*")) == []
