"""Ten CodeAct runs at once never hold more sandbox memory than ``APP_SANDBOX_MB`` between them. The app runs in its
own process as in production (its run workers host the runs, and start the sandboxes); the guests' limits are read
from the host processes themselves (the memory cap each gives its guest, in its command line), sampled while the
runs go. The runs past the budget wait for room, their panels say so, and every one of them ends with its answer."""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest

from agents.llm.stub_server import StubLLMServer, StubReply
from tests.gradio_rest import frames

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the sandbox hosts in /proc")

BUDGET_MB = 1536  # room for three guests of 512 MB
RUNS = 10
QUESTION = "What is 6 * 7?"


def program(body: dict) -> StubReply:
    """Every CodeAct run's one step: a program that takes a moment, then answers."""
    return StubReply(text="Thought: Work it out slowly.\n<code>\nimport time\ntime.sleep(1.5)\nfinal_answer(6 * 7)\n"
                          "</code>")


def _stat(pid: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def guest_limits(app_pid: int) -> list[int]:
    """The memory cap (bytes) of every sandbox host among the app's descendants, read from each host's own
    command line (``tools/sandbox_wasm.start_host`` passes the host its settings as its last argument)."""
    parents = {pid: fields[1] for pid in filter(str.isdigit, os.listdir("/proc")) if (fields := _stat(pid))}
    family, grew = {str(app_pid)}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in family} - family
        family |= more
        grew = bool(more)
    limits = []
    for pid in family - {str(app_pid)}:
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        settings = next((a for a in reversed(argv) if a.startswith(b"{") and b"memory_bytes" in a), None)
        if settings is not None:
            limits.append(int(json.loads(settings)["memory_bytes"]))
    return limits


def sample(app_pid: int, done, out) -> None:
    """In a process of its own (reading /proc is CPU-bound: the test's model server keeps its interpreter): the
    guests' limits together, every 20 ms, until ``done``; the list goes to ``out``."""
    held = []
    while not done.is_set():
        held.append(sum(guest_limits(app_pid)))
        time.sleep(0.02)
    out.send(held)


def test_ten_codeact_runs_stay_within_the_sandboxes_memory(kit, tmp_path):
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    done, (receive, send) = context.Event(), context.Pipe(duplex=False)
    with StubLLMServer(program) as stub:
        app = kit.faults().AppProcess(stub.url, tmp_path, default_registry=True,
                                      settings={"APP_SANDBOX_MB": str(BUDGET_MB), "LLM_TIMEOUT": "60"})
        sampler = context.Process(target=sample, args=(app.proc.pid, done, send))
        results: list[list] = [[] for _ in range(RUNS)]
        data = [QUESTION, ["codeact"], "stub", "text", 3, 0.2, ["calculate"], None, None]
        runs = [threading.Thread(target=lambda k=k: results.__setitem__(k, frames(app.url, "compare", data, 300)))
                for k in range(RUNS)]
        try:
            sampler.start()
            for run in runs:
                run.start()
            for run in runs:
                run.join(360)
        finally:
            done.set()
            held = receive.recv() if receive.poll(30) else [0]
            sampler.join(10)
            app.close()
    assert max(held) <= BUDGET_MB << 20, f"the guests held {max(held) >> 20} MB, more than {BUDGET_MB}"
    assert max(held) == BUDGET_MB << 20  # the budget was used whole (three at once), so the sampling saw them
    text = [json.dumps(r, ensure_ascii=False) for r in results]
    assert all("✔ Done" in t for t in text), [t[-300:] for t in text if "✔ Done" not in t]
    waited = [t for t in text if "Waiting for room in the Python sandbox" in t]
    assert len(waited) >= RUNS - 3 - 2, f"only {len(waited)} runs said they waited"  # most of the seven past three
    assert all("42" in t for t in text)
