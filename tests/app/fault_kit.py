"""Faults for the whole-app tests: a stub-server responder that breaks ONE mode at a time, two broken tools,
and a launcher that runs the app in its own process (so the leak test can count *its* threads and fds).

The fault and its victim are written into the question (:func:`question`), so one launched app serves every
fault test. Not collected by pytest (no ``test_`` prefix); tests get it from the ``kit`` fixture
(``kit.faults()``). ``python tests/app/fault_kit.py`` launches the app alone (:func:`main`).
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from agents.llm.stub_server import StubReply, toy_policy
from tools.calculator import calculate
from tools.registry import ToolRegistry, tool

QUESTION = "What is 17 * 23 + 5?"
TOOL_TIMEOUT_S = 0.3
HANG_S = 1.5  # the hanging tool sleeps this long: > its timeout, short enough for the leak test to settle
_FAULT = re.compile(r"\[fault=([\w-]+)@(\w+)\]")
_CUT_TEXT = "Thought: 17 * 23 is 391, and 391 + 5 = 396.\nFinal Answer: 396"
FAULTS = ("429", "503", "503-fast", "hang", "cut", "cut-early", "stop-400", "reasoning-only", "garbage",
          "tool-hang", "tool-raise")
MODES = ("think", "act", "react")  # the panels of an "All" run, in order


@tool(timeout_s=TOOL_TIMEOUT_S)
def slow_lookup(query: str) -> str:
    """Look something up in a very slow archive (it hangs: longer than its timeout)."""
    time.sleep(HANG_S)
    return f"archive: nothing on {query}"


@tool(timeout_s=TOOL_TIMEOUT_S)
def broken_tool(query: str) -> str:
    """A tool with a bug: it always raises."""
    raise RuntimeError(f"boom while handling {query!r}")


def fault_registry() -> ToolRegistry:
    """The calculator plus a tool that hangs and one that raises (each has a short per-tool timeout)."""
    return ToolRegistry([calculate, slow_lookup, broken_tool])


def question(fault: str, mode: str, nonce: str = "") -> str:
    """The test question with its fault written in (``[fault=503@think]``); ``nonce`` (letters only) keeps per-run
    counters apart."""
    return f"{QUESTION} [fault={fault}@{mode}] {nonce}".strip()


def mode_of(body: dict[str, Any]) -> str:
    """Which mode sent this request, from its system prompt (prompts/think.md, act*.md, react*.md)."""
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    if "without any tools" in system:
        return "think"
    return "react" if "ReAct paper" in system else "act"


def _user_question(body: dict[str, Any]) -> str:
    return next((str(m.get("content") or "") for m in body.get("messages") or [] if m.get("role") == "user"), "")


def cut_reply(chunk_chars: int) -> StubReply:
    """A final answer "396" whose stream is cut right after "39" (padding puts the cut on a chunk border)."""
    head, answer = _CUT_TEXT.split("Final Answer: ")
    pad = (-(len(head) + len("Final Answer: ") + 2)) % chunk_chars
    text = head.replace("396.", "396." + " " * pad) + "Final Answer: " + answer
    shown = text.index("Final Answer: ") + len("Final Answer: ") + 2
    return StubReply(text=text, disconnect_after=shown // chunk_chars)


class FaultPolicy:
    """The responder: the toy model for healthy modes, the named fault for the victim mode (told apart by their
    system prompts, :func:`mode_of`). The toy reads 17 * 23 + 5 off the question and uses the calculator, so the
    healthy panels finish with 396, computed by the tool, never hard-coded here."""

    def __init__(self, chunk_chars: int = 8) -> None:
        self.chunk_chars = chunk_chars
        self.attempts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> StubReply:
        match = _FAULT.search(_user_question(body))
        mode = mode_of(body)
        if "slowly" in _user_question(body):  # for Stop: a long, steady stream
            return StubReply(text="Thought: " + "pondering " * 400, token_delay=0.02)
        if not match or match.group(2) not in (mode, "all"):
            return toy_policy(body)
        fault = match.group(1)
        with self._lock:
            self.attempts[(_user_question(body), mode)] += 1
            attempt = self.attempts[(_user_question(body), mode)]
        return self.reply(fault, body, attempt)

    def reply(self, fault: str, body: dict[str, Any], attempt: int) -> StubReply:
        if fault == "429":
            return (StubReply(status=429, headers={"Retry-After": "0.2"}, error_body="rate limited")
                    if attempt == 1 else toy_policy(body))
        if fault in ("503", "503-fast"):
            headers = {"Retry-After": "0.05"} if fault == "503-fast" else {}
            return StubReply(status=503, headers=headers, error_body="the model is overloaded")
        if fault == "hang":
            return StubReply(hang=True)
        if fault == "cut":
            return cut_reply(self.chunk_chars)
        if fault == "cut-early":  # headers, then the connection closes before any text
            return StubReply(text=_CUT_TEXT, disconnect_after=0)
        if fault == "stop-400":
            if body.get("stop"):
                return StubReply(status=400,
                                 error_body="Unsupported parameter: 'stop' is not supported with this model.")
            return toy_policy(body)
        if fault == "reasoning-only":
            return StubReply(reasoning="Let me think about this very carefully. " * 20, text="")
        if fault == "garbage":
            return StubReply(text="lorem ipsum }{ <<< nothing like the format >>> ~~ 42?!")
        if fault in ("tool-hang", "tool-raise"):
            return tool_fault(body, "slow_lookup" if fault == "tool-hang" else "broken_tool")
        raise ValueError(f"unknown fault {fault!r}")


def _last_observation(body: dict[str, Any]) -> str | None:
    last = (body.get("messages") or [{}])[-1]
    content = str(last.get("content") or "")
    if last.get("role") == "tool":
        return content
    match = re.search(r"Observation[^:\n]*:\s*(.*)", content, re.S)
    return match.group(1).strip() if last.get("role") == "user" and match else None


def tool_fault(body: dict[str, Any], bad_tool: str) -> StubReply:
    """Call ``bad_tool`` first; after its error observation, the calculator; then answer with its result."""
    observation = _last_observation(body)
    expression = "17 * 23 + 5"
    if observation is None:
        step = (bad_tool, {"query": "17 * 23 + 5"})
    elif "timed out" in observation or "failed" in observation:
        step = ("calculate", {"expression": expression})
    else:
        return StubReply(text=f"Thought: the calculator answered.\nFinal Answer: {observation}")
    if body.get("tools"):
        return StubReply(text="", tool_calls=[step])
    name, args = step
    return StubReply(text=f"Thought: I will use {name}.\nAction: {name}\nAction Input: {next(iter(args.values()))}")


# ---- The leak tests: the app in its own process, its visitors over REST, and its threads and fds ----

# Thread pools that grow on demand and keep idle workers (bounded, so not a leak): AnyIO's worker threads
# (Gradio's sync handlers; at most launch(max_threads=64), idle ones retire only when new work arrives)
# and asyncio's default executor (asyncio.to_thread for the export files; at most min(32, cpus + 4)).
POOL_THREADS = {"AnyIO worker thread": 64, "asyncio": 32}
# Idle keep-alive connections (to the stub, in huggingface_hub's shared httpx pool; to our REST client,
# which is closed before counting) may linger until the next request reaps them: a few fds, where a per-run
# leak would show as 100 or more.
FD_TOLERANCE = 3
LEAK_TIMEOUT_S = 6  # LLM_TIMEOUT of the app under test: hung requests end here; a Stop must act well before
LEAK_FAULTS = ("429", "503-fast", "hang", "cut", "cut-early", "stop-400", "reasoning-only", "garbage", "tool-hang",
               "tool-raise")
TOOL_FAULTS = ("stop-400", "garbage", "tool-hang", "tool-raise")  # only Act and ReAct can meet these
SERVER_FAULTS = tuple(f for f in LEAK_FAULTS if not f.startswith("tool-"))  # the stub's alone: no broken tools


class RestClient:
    """Gradio's REST API with httpx (gradio_client costs a core at this rate)."""

    def __init__(self, url: str, tools: tuple[str, ...] = ("calculate", "slow_lookup", "broken_tool")) -> None:
        self.url, self.tools = url.rstrip("/"), list(tools)
        self.http = httpx.Client(timeout=30)
        config = self.http.get(f"{self.url}/config").json()
        self.fn_index = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "compare")
        button = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "stop-btn")
        self.stop_index = next(d["id"] for d in config["dependencies"]  # the Stop handler (not a browser-only one)
                               if [button, "click"] in d["targets"] and d.get("backend_fn"))

    def _submit(self, question: str, protocol: str) -> tuple[str, str]:
        session = uuid.uuid4().hex[:12]
        data = [question, "All", "stub", protocol, 3, 0.2, self.tools, "None", None]
        reply = self.http.post(f"{self.url}/gradio_api/call/compare", json={"data": data, "session_hash": session})
        return session, reply.raise_for_status().json()["event_id"]

    @staticmethod
    def _outputs(lines) -> list:
        """Read an event's stream to its end: the final outputs."""
        kind, data = "", None
        for line in lines:
            if line.startswith("event:"):
                kind = line.removeprefix("event:").strip()
            elif line.startswith("data:") and kind in ("complete", "error"):
                data = json.loads(line.removeprefix("data:"))
                break
        assert kind == "complete", (kind, data)
        return data

    def run(self, question: str, protocol: str = "text") -> list:
        """Submit, read the stream to the end, return the final outputs."""
        _, event_id = self._submit(question, protocol)
        with self.http.stream("GET", f"{self.url}/gradio_api/call/compare/{event_id}") as stream:
            return self._outputs(stream.iter_lines())

    def stop_when(self, question: str, seen: str, via: str = "cancel") -> float:
        """Submit, and stop the run as soon as a streamed frame contains ``seen``; when (the stub's clock).
        ``via="cancel"``: Gradio's /cancel, as when the visitor closes the tab (the stream ends there);
        ``via="button"``: the app's Stop button (its handler, by the session), then the run's stopped frame."""
        session, event_id = self._submit(question, "text")
        with self.http.stream("GET", f"{self.url}/gradio_api/call/compare/{event_id}") as stream:
            lines = stream.iter_lines()
            for line in lines:
                if line.startswith("data:") and seen in line:
                    break
            stopped = time.perf_counter()
            if via == "button":
                press = {"fn_index": self.stop_index, "data": [], "session_hash": session}
                self.http.post(f"{self.url}/gradio_api/run/predict", json=press).raise_for_status()
                assert (status := self._outputs(lines)[6]).startswith("■ Stopped"), status
            else:
                cancel = {"session_hash": session, "fn_index": self.fn_index, "event_id": event_id}
                self.http.post(f"{self.url}/gradio_api/cancel", json=cancel).raise_for_status()
        return stopped

    def close(self) -> None:
        self.http.close()


def stop_run(rest: RestClient, i: int, nonce: str, slow_stops: dict[str, float], via: str = "cancel") -> None:
    """The ``i``-th Stop: every fifth, a hung request once the other panels answered; else a steady 10 s stream,
    mid-stream — its question and Stop time go into ``slow_stops``."""
    if i % 5 == 4:
        rest.stop_when(question("hang", MODES[i % 3], nonce), "Final answer", via)
    else:
        slow = f"Think slowly about this, {nonce}"
        slow_stops[slow] = rest.stop_when(slow, "pondering", via)


def faulty_jobs(n: int, first: int = 0, faults: tuple[str, ...] = LEAK_FAULTS, both_protocols: bool = False) -> list:
    """n (fault, victim, protocol) triples cycling through every fault and victim; the tool faults alternate
    the protocol (``both_protocols``: every fault does, a round of every fault and victim at a time)."""
    jobs = []
    for i in range(first, first + n):
        fault = faults[i % len(faults)]
        victims = ("act", "react") if fault in TOOL_FAULTS else MODES
        tools = (i // (len(faults) * len(MODES))) % 2 if both_protocols else fault.startswith("tool-") and i % 2
        protocol = "tools" if tools else "text"
        jobs.append((fault, victims[(i // len(faults)) % len(victims)], protocol))
    return jobs


class AppProcess:
    """The app in its own process (stub model; the fault registry, or with ``default_registry`` the app's
    own tools), so its threads and fds are its own; its children are its run workers. ``settings``: more of its
    environment (``APP_*`` variables)."""

    def __init__(self, stub_url: str, tmp_path, *, default_registry: bool = False,
                 settings: dict[str, str] | None = None) -> None:
        root = Path(__file__).resolve().parents[2]
        self.threads_file = str(tmp_path / "threads.json")
        env = {**os.environ, "LLM_BASE_URL": stub_url, "LLM_MODEL": "stub", "LLM_TIMEOUT": str(LEAK_TIMEOUT_S),
               "LLM_MAX_DURATION": "30", "PYTHONPATH": str(root), "GRADIO_ANALYTICS_ENABLED": "False",
               "FAULT_KIT_THREADS": self.threads_file,
               # "five visitors" are one REST client without a browser cookie: one visitor, one address, so each
               # bound on live runs is raised past them (bench/bench_app.LECTURE_HALL does the same)
               "APP_RUNS_PER_VISITOR": "1000", "APP_RUNS_PER_ADDRESS": "10000"}
        for key in ("HF_TOKEN", "LLM_API_KEY", "HF_HUB_OFFLINE", "GRADIO_SERVER_PORT", "APP_RUN_WORKERS",
                    "LLM_MAX_CONCURRENT"):  # the defaults: the run workers, no per-process gate (which keeps runs here)
            env.pop(key, None)
        env.update(settings or {})
        flags = ["--default-registry"] if default_registry else []  # the app's own tools (see main)
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *flags], env=env, cwd=root,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("URL "), f"the app did not start: {line!r}"
        self.url = line.split()[1]

    def thread_names(self) -> list[str]:
        before = os.stat(self.threads_file).st_mtime_ns if os.path.exists(self.threads_file) else 0
        os.kill(self.proc.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if os.path.exists(self.threads_file) and os.stat(self.threads_file).st_mtime_ns != before:
                with open(self.threads_file, encoding="utf-8") as f:
                    return json.load(f)
            time.sleep(0.02)
        raise AssertionError("the app did not report its threads")

    def counts(self, pid: int | None = None) -> tuple[int, int]:
        """(threads, open file descriptors) of the app process (or of its child ``pid``), from /proc."""
        pid = pid or self.proc.pid
        return len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))

    def children(self) -> list[int]:
        """The app's child processes (its run workers): /proc/*/stat naming it as parent (no task/*/children here)."""
        parent = [str(self.proc.pid)]
        return sorted(int(e) for e in filter(str.isdigit, os.listdir("/proc")) if _stat(e)[1:2] == parent)

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(15)
        except Exception:  # noqa: BLE001 - a stuck app is killed; the test has already reported
            self.proc.kill()
            self.proc.wait(5)


def _stat(pid: int | str) -> list[str]:
    """/proc/<pid>/stat's fields after "(name)": state, ppid, … (utime, stime at 11, 12); [] if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def cpu_ticks(pid: int) -> int:
    """The CPU time process ``pid`` has used (user + system, in clock ticks), from /proc."""
    return sum(map(int, _stat(pid)[11:13]))


def kind(name: str) -> str:
    """'asyncio_3' → 'asyncio', 'AnyIO worker thread' stays, 'mode-act' stays."""
    return name.rstrip("0123456789_ ")


def non_pool(names: list[str]) -> list[str]:
    return sorted(n for n in names if kind(n) not in POOL_THREADS)


def settled(proc: AppProcess, baseline: tuple[int, int], base_names: list[str], wait_s: float = 15,
            workers: dict[int, tuple[int, int]] | None = None) -> tuple:
    """Poll until the app is back within tolerance of its baseline (or the wait ends); the last reading.
    ``workers`` (pid → baseline): also until each of them has its baseline threads and fds (within tolerance)."""
    deadline = time.monotonic() + wait_s
    while True:
        names = proc.thread_names()
        threads, fds = proc.counts()
        pools = sum(kind(n) in POOL_THREADS for n in names)
        now = {pid: proc.counts(pid) for pid in workers or {}}
        back = non_pool(names) == non_pool(base_names) and fds <= baseline[1] + FD_TOLERANCE and all(
            now[pid][0] == base[0] and now[pid][1] <= base[1] + FD_TOLERANCE for pid, base in (workers or {}).items())
        if back or time.monotonic() > deadline:
            return threads, fds, names, pools, now
        time.sleep(0.25)


def assert_stops_closed_streams(stub: Any, cancelled: dict[str, float], expected: int) -> None:
    """Each request to ``stub`` (a StubLLMServer) of a stopped question ended within 2.5 s of its Stop (vs 10 s
    to the end, or LLM_TIMEOUT): 2.5 s leaves room for a loaded machine."""
    stopped_requests = []
    for r in list(stub.requests):
        content = str(r.body["messages"][1].get("content"))
        stopped = next((t for q, t in cancelled.items() if q in content), None)
        if stopped is not None:
            stopped_requests.append((r, stopped))
    # The stub's handler notices a closed stream at its next write, a moment after the app let go: wait for that.
    deadline = max((t for _, t in stopped_requests), default=0) + 2.5
    while any(r.finished is None for r, _ in stopped_requests) and time.perf_counter() < deadline:
        time.sleep(0.05)
    seen = len(stopped_requests)
    late = [(r, t) for r, t in stopped_requests if r.finished is None or r.finished - t > 2.5]
    if late:  # diagnose before failing: did those streams end later (at their end, 10 s, or at LLM_TIMEOUT)?
        time.sleep(12)
    report = [(str(r.body["messages"][1].get("content")), "ended %s s after its start, %s s after Stop" % (
        (round(r.finished - r.started, 2), round(r.finished - t, 2)) if r.finished else ("never", "-")))
        for r, t in late]
    assert seen == expected and report == [], f"streams not closed by Stop: {report}"


def main() -> None:
    """Launch the app on 127.0.0.1 (fault registry, ``LLMSettings.from_env()``), print its URL and serve until
    stdin closes; ``--default-registry``: the app's own tools, so its live runs go to its worker processes."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import app
    from agents.llm.settings import LLMSettings

    dump = os.environ.get("FAULT_KIT_THREADS")
    if dump:  # the leak test asks, by SIGUSR1, which threads are alive (names say whose they are)
        def write_threads(*_: object) -> None:
            names = sorted(t.name for t in threading.enumerate())
            with open(dump + ".tmp", "w", encoding="utf-8") as f:
                json.dump(names, f)
            os.replace(dump + ".tmp", dump)

        signal.signal(signal.SIGUSR1, write_threads)
    registry = None if "--default-registry" in sys.argv[1:] else fault_registry()  # None: the app's own tools
    demo = app.build_demo(settings=LLMSettings.from_env(), registry=registry, on_space=False)
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs())
    print(f"URL {demo.local_url}", flush=True)
    sys.stdin.read()  # the test closes our stdin (or dies): then we go
    demo.close()


if __name__ == "__main__":
    main()
