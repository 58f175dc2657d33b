"""Engine benchmark: parallel modes cost no more than the slowest one, and the engine adds ~nothing per LLM call.

Runs the real ``HFInferenceModel`` against the local stub server with injected latency:

1. wall(all three modes at once) ÷ wall(slowest mode alone)  — goal ≤ 1.15
2. orchestration overhead per LLM call = (run wall − server time − tool time) ÷ LLM calls — goal ≤ 5 ms
3. the client's connection-pool walks when 300 streams start at once (a burst of 100 All runs), CPU per
   request, with the process's 16 pools and with one (``agents/llm/pool.py``)

Usage: ``python bench/bench_engine.py [--latency 0.2] [--token-delay 0.005] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpcore2
from huggingface_hub.utils import httpx

from agents.comparison import compare
from agents.llm import pool
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply
from agents.modes import RunConfig
from bench.async_stub import AsyncStubServer
from tools.calculator import calculate
from tools.registry import ToolRegistry

ACTIONS = 4  # Act and ReAct make 4 calculator calls, then answer: 5 LLM calls each; Think makes 1


def responder(body: dict) -> StubReply:
    """A model that takes ACTIONS steps, with a Thought when the prompt asks for one."""
    messages = body["messages"]
    done = sum(1 for m in messages if m["role"] == "user" and str(m["content"]).startswith("Observation"))
    system = messages[0]["content"]
    thought = "Thought: one more step to be sure of the sum.\n" if "Thought" in system else ""
    if "Action Input" not in system:
        return StubReply(text="Thought: I will estimate.\nFinal Answer: 10")
    if done < ACTIONS:
        return StubReply(text=f"{thought}Action: calculate\nAction Input: {done} + 1")
    return StubReply(text=f"{thought}Final Answer: {done}")


def timed(server: StubLLMServer, modes: list[str]) -> tuple[float, dict]:
    settings = LLMSettings(base_url=server.url, model="stub", timeout_s=30)
    start = time.perf_counter()
    traces = compare("Count to four with the calculator.", modes, model_factory=lambda: HFInferenceModel(settings),
                     registry=ToolRegistry([calculate]), config=RunConfig(max_steps=ACTIONS + 1))
    wall = time.perf_counter() - start
    for trace in traces.values():
        assert trace.error is None and trace.answer is not None, trace.to_markdown()
    return wall, traces


def settled(records: list, wait_s: float = 2.0) -> None:
    """Wait for the stub's threads to stamp each request's end: the client can read the last chunk first."""
    deadline = time.perf_counter() + wait_s
    while any(r.finished is None for r in records) and time.perf_counter() < deadline:
        time.sleep(0.001)


class _TimedPool(httpcore2.ConnectionPool):
    """httpcore's pool, timing its walk of the connections where it runs (``spent``: CPU seconds per walk)."""

    spent: list[float]

    def _assign_requests_to_connections(self) -> list:
        started = time.thread_time()
        try:
            return super()._assign_requests_to_connections()
        finally:
            self.spent.append(time.thread_time() - started)


def _timed_transport(limits: httpx.Limits, spent: list[float]) -> httpx.HTTPTransport:
    """An httpx transport whose pool is a :class:`_TimedPool` with ``limits`` (the library's classes unchanged)."""
    transport = httpx.HTTPTransport(limits=limits)
    timed = _TimedPool(max_connections=limits.max_connections, keepalive_expiry=limits.keepalive_expiry,
                       max_keepalive_connections=limits.max_keepalive_connections)
    timed.spent = spent
    transport._pool.close()
    transport._pool = timed  # this bench's own transport: a pool of its own making
    return transport


def pool_walks(streams: int = 300, shards: int = pool.SHARDS) -> float:
    """CPU (ms) per request that httpcore's pools spend walking their connections, ``streams`` threads each
    streaming one reply at once through one client of ``shards`` pools (the walk is timed where it runs)."""
    spent: list[float] = []
    limits = pool.SHARD_LIMITS if shards > 1 else httpx.Limits(max_connections=1024)  # one pool: as it was
    client = httpx.Client(transport=pool.ShardedTransport(lambda: _timed_transport(limits, spent), shards))
    barrier = threading.Barrier(streams)
    with AsyncStubServer(latency=0.5, token_delay=0.01) as server:
        def one() -> None:
            barrier.wait()
            body = {"model": "stub", "stream": True, "messages": [{"role": "user", "content": "What is 17*23?"}]}
            with client.stream("POST", f"{server.url}/chat/completions", json=body) as reply:
                for _ in reply.iter_bytes():
                    pass

        try:
            threads = [threading.Thread(target=one) for _ in range(streams)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            client.close()
    return 1000 * sum(spent) / streams


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="server seconds before the first token")
    parser.add_argument("--token-delay", type=float, default=0.005, help="server seconds between chunks")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object (for bench/report.py)")
    args = parser.parse_args()
    with StubLLMServer(responder, latency=args.latency, token_delay=args.token_delay) as server:
        timed(server, ["react"])  # warm-up: imports, first connection
        alone = {m: [] for m in ("think", "act", "react")}
        together, overheads = [], []
        for _ in range(args.repeats):
            for mode in alone:
                alone[mode].append(timed(server, [mode])[0])
            for mode in ("act", "react"):  # sequential calls: overhead is measurable per call
                before = len(server.requests)
                wall, traces = timed(server, [mode])
                settled(server.requests[before:])
                server_s = sum(r.finished - r.started for r in server.requests[before:])
                tool_s = sum(s.elapsed_s for s in traces[mode].steps)
                overheads.append((wall - server_s - tool_s) / traces[mode].llm_calls)
            together.append(timed(server, ["think", "act", "react"])[0])
    walks = {n: statistics.median(pool_walks(shards=n) for _ in range(args.repeats)) for n in (pool.SHARDS, 1)}
    med = {m: statistics.median(v) for m, v in alone.items()}
    slowest = max(med.values())
    ratio = statistics.median(together) / slowest
    overhead_ms = statistics.median(overheads) * 1000
    if args.json:
        print(json.dumps({"alone_s": med, "together_s": statistics.median(together), "ratio": round(ratio, 3),
                          "overhead_ms_per_call": round(overhead_ms, 2), "repeats": args.repeats,
                          "pool_walk_ms_per_request": {"pools": pool.SHARDS, "sharded": round(walks[pool.SHARDS], 3),
                                                       "one_pool": round(walks[1], 3)}}))
        return
    print(f"stub latency {args.latency:g} s first token, {args.token_delay:g} s per chunk; "
          f"median of {args.repeats} runs")
    print("alone: " + ", ".join(f"{m} {v:.3f} s" for m, v in med.items()))
    print(f"all three together: {statistics.median(together):.3f} s")
    print(f"wall(all three) / wall(slowest alone) = {ratio:.3f}  (goal <= 1.15: {'PASS' if ratio <= 1.15 else 'FAIL'})")
    print(f"orchestration overhead per LLM call = {overhead_ms:.2f} ms  "
          f"(goal <= 5 ms: {'PASS' if overhead_ms <= 5 else 'FAIL'})")
    print("pool walks, 300 streams at once: "
          + ", ".join(f"{n} pool(s) {v:.3f} ms per request" for n, v in walks.items()))


if __name__ == "__main__":
    main()
