"""App benchmark: many visitors at once, and how soon the first token reaches the screen.

Three processes, as in production: the app (this process), the stub model (real HTTP + SSE
with injected latency, standing in for the provider) and the visitors, each with its own
``gradio_client.Client``. Before the clock starts each visitor "opens the page" (connects and
runs the page-load event, which starts its Gradio session, as a browser does); then all click
Run at once: mode "All" through the ``/compare`` endpoint.

1. wall(N visitors at once) ÷ wall(1 visitor) — goal ≤ 1.5, with 0 errors
2. first token on screen: from the stub server sending a mode's first SSE byte to the first
   streamed update, as received by the visitor's gradio_client, in which that mode's panel
   shows text — goal ≤ 150 ms (median and p95 over every visitor × mode). gradio_client
   itself polls its SSE buffer every 50 ms, so this is an upper bound on what a browser sees.

Usage: ``python bench/bench_app.py [--visitors 20] [--latency 0.3] [--token-delay 0.05] [--stagger 0]``
(``perf_counter`` is CLOCK_MONOTONIC on Linux, shared by the processes.) Defaults: a hosted model's
0.3 s to first token, then ≈40 tokens/s, and all visitors clicking Run at the same instant. The app
is one Python process (one GIL): on a 2-core machine that also runs the stub and the visitors, a much
faster stream (``--token-delay 0.02``) makes the run CPU-bound, and the ratio shows it.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODES = ("think", "act", "react")


def question(i: int) -> str:
    return f"What is 17 * 23 + {i}?"


# -- the visitors' process ---------------------------------------------------------------------


def has_text(panel: list | None) -> bool:
    for message in panel or []:
        content = message.get("content") if isinstance(message, dict) else None
        parts = content if isinstance(content, list) else [{"text": content}]
        if any(str(p.get("text") or "").strip() for p in parts if isinstance(p, dict)):
            return True
    return False


def visit(client, i: int, go: threading.Event, start_at: list, out: dict, delay: float = 0.0) -> None:
    """One visitor: submit, timestamp every streamed update, note when each panel first shows text."""
    record: dict = {"i": i, "first_text": {}, "updates": 0, "error": None}
    try:
        go.wait()
        while time.perf_counter() < start_at[0] + delay:
            time.sleep(0.0005)
        record["start"] = time.perf_counter()
        job = client.submit(question=question(i), mode="All", api_name="/compare")
        seen = 0
        while True:
            outputs = job.outputs()
            now = time.perf_counter()
            for update in outputs[seen:]:
                record["updates"] += 1
                for k, mode in enumerate(MODES):
                    if mode not in record["first_text"] and has_text(update[k]):
                        record["first_text"][mode] = now
            seen = len(outputs)
            if job.done():
                break
            time.sleep(0.005)
        result = job.result()
        record["end"] = time.perf_counter()
        record["answers"] = ["Final answer" in str(result[k]) for k in range(3)]
        if not all(record["answers"]):
            missing = [MODES[k] for k in range(3) if not record["answers"][k]]
            tail = " | ".join(str(result[MODES.index(m)])[-160:] for m in missing)
            record["error"] = f"no final answer in {', '.join(missing)}: …{tail}"
    except Exception as exc:  # noqa: BLE001 - counted as an error, reported at the end
        record["error"] = f"{type(exc).__name__}: {exc}"
    out[i] = record


def visitors_main(url: str, first: int, count: int, conn, stagger: float = 0.0) -> None:
    """Child process: connect ``count`` clients, say ready, run them all at the start time, send the records."""
    from gradio_client import Client

    # Plain-HTTP loopback: skip building a certificate store per request (gradio_client opens a new
    # httpx client for every call, ~50 ms of CPU each with verification on) and leave export files
    # on the server, so the visitors' process does not eat the CPU the app is being measured on.
    clients = [Client(url, verbose=False, ssl_verify=False, download_files=False) for _ in range(count)]
    for client in clients:  # "open the page": a browser's load event (the Prompts view) starts the session
        client.predict(api_name="/prompts")
    out: dict = {}
    go, start_at = threading.Event(), [0.0]
    threads = [threading.Thread(target=visit, args=(clients[k], first + k, go, start_at, out, stagger * k / count))
               for k in range(count)]
    for t in threads:
        t.start()
    conn.send("ready")
    start_at[0] = conn.recv()
    cpu = time.process_time()
    go.set()
    for t in threads:
        t.join()
    out["cpu"] = time.process_time() - cpu
    conn.send(out)


def run_visitors(url: str, first: int, count: int, stagger: float = 0.0) -> tuple[float, dict]:
    """Run ``count`` simultaneous visitors from a fresh process; wall = start → last visitor's final result."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=visitors_main, args=(url, first, count, child, stagger), daemon=True)
    proc.start()
    assert parent.recv() == "ready"
    time.sleep(0.5)  # let the connections settle
    start_at = time.perf_counter() + 0.1
    parent.send(start_at)
    records = parent.recv()
    run_visitors.cpu = records.pop("cpu", 0.0)  # type: ignore[attr-defined]
    proc.join(10)
    wall = max(r.get("end", start_at) for r in records.values()) - start_at
    return wall, records


# -- the model server's process ----------------------------------------------------------------


def stub_main(latency: float, token_delay: float, conn) -> None:
    """Child process: the stub model (as a real provider would be: elsewhere), answering to commands."""
    import http.server

    from agents.llm.stub_server import StubLLMServer

    http.server.ThreadingHTTPServer.request_queue_size = 256  # its default backlog of 5 drops bursts of connects
    with StubLLMServer(latency=latency, token_delay=token_delay) as stub:
        conn.send(stub.url)
        while (command := conn.recv()) != "quit":
            if command == "clear":
                stub.requests.clear()
            if command == "cpu":
                conn.send(time.process_time())
                continue
            conn.send([{"body": r.body, "started": r.started, "first_byte": r.first_byte, "finished": r.finished}
                       for r in stub.requests] if command == "dump" else "ok")


# -- the server side ---------------------------------------------------------------------------


def mode_of(body: dict, prompts: dict[str, str]) -> str | None:
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    return next((m for m, p in prompts.items() if p == system), None)


def first_token_latencies(records: dict, requests: list, prompts: dict[str, str]) -> list[float]:
    """For each visitor × mode: client first-text time − server first-byte time of that mode's first call."""
    first_byte: dict[tuple[str, str], float] = {}
    for r in requests:
        user = next((str(m.get("content")) for m in r.body.get("messages", []) if m.get("role") == "user"), "")
        mode = mode_of(r.body, prompts)
        if r.first_byte is None or mode is None:
            continue
        key = (user, mode)
        first_byte[key] = min(first_byte.get(key, r.first_byte), r.first_byte)
    latencies = []
    for rec in records.values():
        for mode, seen in rec["first_text"].items():
            sent = first_byte.get((f"Question: {question(rec['i'])}", mode))
            if sent is not None:
                latencies.append(seen - sent)
    return latencies


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visitors", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.3, help="seconds before each reply's first token")
    parser.add_argument("--token-delay", type=float, default=0.05,
                        help="seconds between streamed 8-character chunks (0.05 ≈ 40 tokens/s)")
    parser.add_argument("--stagger", type=float, default=0.0,
                        help="spread the visitors' clicks over this many seconds (0: all at the same instant)")
    args = parser.parse_args()

    import app
    from agents.llm.settings import LLMSettings
    from agents.prompts import system_prompt
    from tools.calculator import calculate
    from tools.registry import ToolRegistry

    registry = ToolRegistry([calculate])
    prompts = {m: system_prompt(m, registry, max_steps=5) for m in MODES}
    ctx = mp.get_context("spawn")
    stub, stub_end = ctx.Pipe()
    stub_proc = ctx.Process(target=stub_main, args=(args.latency, args.token_delay, stub_end), daemon=True)
    stub_proc.start()
    stub_url = stub.recv()
    demo = app.build_demo(settings=LLMSettings(model="stub", base_url=stub_url), registry=registry)
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs())
    try:
        url = demo.local_url
        run_visitors(url, 1000, 2)  # warm-up (imports, first connections)
        stub.send("clear")
        stub.recv()
        wall1, rec1 = run_visitors(url, 0, 1)
        cpu0 = time.process_time()
        stub.send("cpu")
        stub_cpu0 = stub.recv()
        wallN, recN = run_visitors(url, 1, args.visitors, args.stagger)
        app_cpu = time.process_time() - cpu0
        stub.send("cpu")
        stub_cpu = stub.recv() - stub_cpu0
        stub.send("dump")
        requests = [SimpleNamespace(**r) for r in stub.recv()]
    finally:
        demo.close()
        stub.send("quit")
        stub_proc.join(5)

    records = {**rec1, **recN}
    errors = [r["error"] for r in records.values() if r["error"]]
    latencies = first_token_latencies(recN, requests, prompts)
    latencies1 = first_token_latencies(rec1, requests, prompts)
    ratio = wallN / wall1
    updates = statistics.median(r["updates"] for r in recN.values())
    print(f"stub model: {args.latency:.2f} s to first token, {args.token_delay * 1000:.0f} ms between chunks; "
          f"{len(requests)} LLM requests")
    print(f"wall(1)  = {wall1:.2f} s   (one visitor, mode All)")
    print(f"wall({args.visitors}) = {wallN:.2f} s   ({args.visitors} visitors at once, mode All; "
          f"median {updates:.0f} streamed updates each)")
    print(f"CPU during wall({args.visitors}): app {app_cpu:.2f} s, stub model {stub_cpu:.2f} s, "
          f"visitors {run_visitors.cpu:.2f} s (this machine: {os.cpu_count()} cores)")
    print(f"ratio    = {ratio:.2f}   goal ≤ 1.5 → {'PASS' if ratio <= 1.5 else 'FAIL'}")
    print(f"errors   = {len(errors)}   goal 0 → {'PASS' if not errors else 'FAIL'}" + (f"  {errors[:3]}" if errors else ""))
    if latencies:
        med, p95 = statistics.median(latencies) * 1000, pct(latencies, 0.95) * 1000
        print(f"first token on screen: median {med:.0f} ms, p95 {p95:.0f} ms, max {max(latencies) * 1000:.0f} ms "
              f"over {len(latencies)} panels   goal ≤ 150 ms → {'PASS' if p95 <= 150 else 'FAIL'}")
    else:
        print("first token on screen: no samples (FAIL)")
    if latencies1:
        print(f"first token on screen, one visitor alone: {', '.join(f'{x * 1000:.0f}' for x in sorted(latencies1))} ms")


if __name__ == "__main__":
    main()
