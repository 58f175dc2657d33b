"""Pieces of the app load benchmark: the app and the stub model in their own processes, a light
REST visitor, and per-process CPU / memory read from ``/proc``.

Why a hand-rolled visitor: ``gradio_client`` spends about a core on 20 visitors,
which on a 2-core machine hides the app's own cost. Gradio's REST route
is two plain HTTP requests per run (``POST /gradio_api/call/compare`` → ``event_id``, then
``GET /gradio_api/call/compare/<event_id>``, an SSE stream), which ``http.client`` does with
little CPU, so hundreds of visitors fit in threads of one process.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agents.modes.registry import mode_ids

MODES = mode_ids("base")  # the three panels of /compare, in order (the mode registry's own list)
STATUS = 6  # output index of the status line (3 panels, 3 metrics, status, ...)


# -- per-process numbers from /proc (Linux, as on a Space) --------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, all threads (``/proc/<pid>/stat`` fields 14-15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (``VmRSS``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def threads_and_fds(pid: int) -> tuple[int, int]:
    threads = len(os.listdir(f"/proc/{pid}/task"))
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


# -- the stub model's process ------------------------------------------------------------------


def stub_main(latency: float, token_delay: float, chunk_chars: int, conn, kind: str = "async", words: int = 0) -> None:
    """Child process: the toy model behind real HTTP + SSE, answering to commands on ``conn``.

    ``kind`` "async" (the default) is :mod:`bench.async_stub`: one asyncio loop serves every stream; "thread" is
    the tests' ``ThreadingHTTPServer`` stub, a thread per connection, as many servers are (it costs more CPU on
    the same cores). Both pace each chunk on absolute time, as a real server paces tokens on its own hardware.
    It counts the content chunks it streams (one per ``chunk_chars`` characters, ≈ one token at 4), so the bench
    can divide the app's CPU by the tokens it relayed. ``words`` makes every thought that many words longer
    (:func:`~agents.llm.stub_server.talkative`): long replies.
    """
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    # the stub's own process: the project is on its path from the line above, and it loads the stub alone
    from agents.llm import stub_server
    from agents.llm.stub_server import StubLLMServer, talkative
    from bench.async_stub import AsyncStubServer

    stub_server._QuietServer.request_queue_size = 1024  # listen backlog: 150 streams connect at once

    chunks = [0]
    policy = talkative(words)

    def counting(body: dict) -> Any:
        reply = policy(body)
        chunks[0] += math.ceil(len(reply.text) / chunk_chars) + len(reply.tool_calls)
        return reply

    server = AsyncStubServer if kind == "async" else StubLLMServer
    with server(counting, latency=latency, token_delay=token_delay, chunk_chars=chunk_chars) as stub:
        conn.send((stub.url, os.getpid()))
        while (command := conn.recv()) != "quit":
            if command == "clear":
                stub.requests.clear()
                chunks[0] = 0
                conn.send("ok")
            elif command == "dump":
                conn.send({"chunks": chunks[0], "requests": [
                    {"body": r.body, "started": r.started, "first_byte": r.first_byte, "finished": r.finished}
                    for r in list(stub.requests)]})


# -- the app's process -------------------------------------------------------------------------


def launched_app(base_url: str = "http://127.0.0.1:9/v1") -> Any:
    """The app as the benches run it (the calculator its one tool, the model at ``base_url``: by default an
    address nothing answers), launched on loopback in this process; close it with ``demo.close()``."""
    # the app's modules load only in the process that serves it: the bench's driver and the stub's stay light
    import app
    from agents.llm.settings import LLMSettings
    from tools.calculator import calculate
    from tools.registry import ToolRegistry

    demo = app.build_demo(settings=LLMSettings(model="stub", base_url=base_url), registry=ToolRegistry([calculate]))
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs())
    return demo


def app_main(stub_url: str, env: dict[str, str], conn) -> None:
    """Child process: the app alone (its own GIL, its own CPU count), launched on loopback."""
    import sys

    os.environ.update(env)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.dup2(2, 1)  # this process's prints (Gradio's "Closing server…") go to stderr: the bench's stdout is its JSON
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    demo = launched_app(stub_url)
    from agents import gc_tuning  # the app's process: as for launched_app's imports

    gc_tuning.settle()  # as ``python app.py`` does once it serves (launch() without prevent_thread_lock)
    conn.send((demo.local_url, os.getpid()))
    try:
        while (command := conn.recv()) != "quit":
            conn.send(app_command(demo, command))
    finally:
        demo.close()


def poll_room() -> str:
    """A new class poll room in this (the app's) process, by a teacher of its own: its code."""
    from ui.poll.rooms import rooms  # the app's process: as for launched_app's imports

    modes = [("think", "Think-only"), ("act", "Act-only"), ("react", "ReAct")]
    return rooms().create(f"bench-teacher-{time.monotonic_ns()}", "What is 17 * 23 + 5?", modes).code


def app_command(demo: Any, command: str) -> Any:
    """Inspection from inside the app process: garbage collection, tracemalloc, session counts."""
    import gc
    import tracemalloc

    if command == "workers":  # the live runs' worker processes (agents/hosting), for their CPU
        from agents import hosting  # the app's process: as for launched_app's imports

        return hosting.default_host().pids() if hosting.workers_from_env() > 0 else []
    if command == "gc":
        gc.collect()
        return "ok"
    if command == "trace-start":
        tracemalloc.start(8)
        app_command.snapshot = tracemalloc.take_snapshot()  # type: ignore[attr-defined]
        return "ok"
    if command == "trace-diff":
        gc.collect()
        after = tracemalloc.take_snapshot()
        stats = after.compare_to(app_command.snapshot, "traceback")  # type: ignore[attr-defined]
        tracemalloc.stop()
        return [(s.size_diff, s.count_diff, "\n".join(s.traceback.format()[-6:])) for s in stats[:8]]
    if command == "sample-start":  # where the event loop's thread is, every 2 ms (also while it waits for the GIL)
        import collections
        import sys
        import threading

        threads = threading.enumerate()
        loop_thread = next((t for t in threads if t.name.endswith("(run)")), None) or next(
            t for t in threads if "run" in t.name and not t.name.startswith("run-worker"))
        counts: collections.Counter = collections.Counter()
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.002):
                frame = sys._current_frames().get(loop_thread.ident)
                stack = []
                while frame is not None and len(stack) < 16:
                    stack.append(f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}:{frame.f_lineno}")
                    frame = frame.f_back
                counts[" < ".join([f for f in stack if not f.startswith("<frozen")][:6])] += 1

        app_command.sampler = (stop, counts, threading.Thread(target=sample, daemon=True))  # type: ignore[attr-defined]
        app_command.sampler[2].start()  # type: ignore[attr-defined]
        return loop_thread.name
    if command == "sample-stop":
        stop, counts, thread = app_command.sampler  # type: ignore[attr-defined]
        stop.set()
        thread.join()
        return counts.most_common(25)
    if command == "poll-room":  # a class poll room, as the teacher's Start makes it (bench_shares.py)
        return poll_room()
    if command == "sessions":
        holder = getattr(demo, "state_holder", None)
        queue = getattr(demo, "_queue", None)
        return {"state_sessions": len(getattr(holder, "session_data", {})),
                "pending_sessions": len(getattr(queue, "pending_messages_per_session", {})),
                "diff_streams": len(getattr(demo, "pending_diff_streams", {}))}
    return f"unknown command {command!r}"


# -- the light visitor -------------------------------------------------------------------------


@dataclass
class Visit:
    """What one visitor saw of one run (times are ``perf_counter``, shared across processes)."""

    question: str
    start: float = 0.0
    end: float | None = None
    posted: float | None = None  # the POST answered (the run is in Gradio's queue)
    opened: float | None = None  # the stream's headers arrived
    first_update: float | None = None  # the first thing heard back: a frame (a queue place, a refusal) or an error
    first_text: dict[str, float] = field(default_factory=dict)
    updates: int = 0
    status: str = ""
    statuses: list[str] = field(default_factory=list)  # distinct status lines, in order
    answers: list[bool] = field(default_factory=list)
    error: str | None = None


def has_text(panel: Any) -> bool:
    for message in panel or []:
        content = message.get("content") if isinstance(message, dict) else None
        parts = content if isinstance(content, list) else [{"text": content}]
        if any(str(p.get("text") or "").strip() for p in parts if isinstance(p, dict)):
            return True
    return False


def compare_inputs(question: str, mode: str = "All") -> list:
    """Every input of ``/compare`` (the REST route needs them all), in the endpoint's order."""
    # every /compare input, max_tokens last
    return [question, mode, "stub", "text", 5, 0.2, ["calculate"], "None", None]


def visit(url: str, question: str, *, session_hash: str | None = None, timeout: float = 120.0,
          source: str | None = None) -> Visit:
    """One run through the REST API: submit, then read the SSE stream, noting when each panel first shows text;
    from the loopback address ``source`` (another visitor's network) when given."""
    seen = Visit(question)
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout,
                                      source_address=(source, 0) if source else None)
    try:
        seen.start = time.perf_counter()
        body = json.dumps({"data": compare_inputs(question), "session_hash": session_hash or uuid.uuid4().hex})
        conn.request("POST", "/gradio_api/call/compare", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        payload = response.read()
        if response.status != 200:
            seen.first_update = time.perf_counter()
            seen.error = f"HTTP {response.status}: {payload[:200].decode(errors='replace')}"
            seen.status = seen.error
            return seen
        event_id = json.loads(payload)["event_id"]
        seen.posted = time.perf_counter()
        conn.request("GET", f"/gradio_api/call/compare/{event_id}")
        response = conn.getresponse()
        seen.opened = time.perf_counter()
        read_stream(response, seen)
    except Exception as exc:  # noqa: BLE001 - counted as an error and reported
        seen.error = f"{type(exc).__name__}: {exc}"
    finally:
        seen.end = time.perf_counter()
        conn.close()
    return seen


def read_stream(response: http.client.HTTPResponse, seen: Visit) -> None:
    event = ""
    while line := response.readline():
        line = line.rstrip(b"\r\n")
        if line.startswith(b"event:"):
            event = line[6:].strip().decode()
        elif line.startswith(b"data:") and event in ("generating", "complete"):
            data = json.loads(line[5:])
            now = time.perf_counter()
            seen.first_update = seen.first_update or now
            seen.updates += 1
            for k, mode in enumerate(MODES):
                if mode not in seen.first_text and has_text(data[k]):
                    seen.first_text[mode] = now
            if data[STATUS] and data[STATUS] != seen.status:
                seen.status = data[STATUS]
                seen.statuses.append(seen.status)
            if event == "complete":
                seen.answers = ["final answer" in json.dumps(data[k]).lower() for k in range(3)]
                return
        elif line.startswith(b"data:") and event == "error":
            seen.first_update = seen.first_update or time.perf_counter()
            seen.error = f"error event: {line[5:].decode(errors='replace')[:200]}"
            return
    seen.error = seen.error or "the stream ended without a complete event"


def get(url: str, path: str, timeout: float = 30.0, headers: dict[str, str] | None = None) -> tuple[int, int, float]:
    """GET ``path``: (status, bytes, seconds)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    start = time.perf_counter()
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        size = len(response.read())
        return response.status, size, time.perf_counter() - start
    except Exception:  # noqa: BLE001 - a failed page load counts as a slow one
        return 0, 0, time.perf_counter() - start
    finally:
        conn.close()


def pct(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
