"""Benchmark the eval runner's concurrency: 60 questions × 3 modes, sequential vs concurrency 8.

    python bench/bench_eval.py [--n 60] [--latency 0.08] [--concurrency 8]

The real HF client talks to the local stub server, which waits ``--latency`` seconds before
each reply's first token (as a hosted model does) and answers arithmetic through the
calculator (Act, ReAct) or guesses (Think). Each run writes results and traces to a
temporary folder, as the CLI does. Goal: concurrent wall ÷ sequential wall ≤ 0.2.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.evaluation.datasets import Item
from agents.evaluation.runner import run_eval
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from tools.registry import ToolRegistry

MODES = ["think", "act", "react"]
GOAL = 0.2


def arithmetic_items(n: int, seed: int = 60) -> list[Item]:
    """``n`` questions like 'What is 37 * 58 + 4?' with exact gold answers (the toy model's calculator path)."""
    rng = random.Random(seed)
    items = []
    for i in range(n):
        a, b, c = rng.randint(11, 999), rng.randint(11, 99), rng.randint(2, 99)
        items.append(Item(id=f"arith-{i}", question=f"What is {a} * {b} + {c}?", answer=str(a * b + c),
                          scorer="number", dataset="arithmetic"))
    return items


def registry() -> ToolRegistry:
    """The project's tools when the calculator is there; otherwise just the calculator the toy model calls."""
    try:
        from tools import default_registry  # the search tools' libraries may be missing where only the engine is

        return default_registry()
    except ImportError:
        from tools.calculator import calculate  # the calculator alone: the toy model calls nothing else

        return ToolRegistry([calculate])


def timed_run(items: list[Item], server: StubLLMServer, concurrency: int) -> tuple[float, dict]:
    settings = LLMSettings(base_url=server.url, model="stub")
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as out:
        start = time.perf_counter()
        result = run_eval(items, MODES, model_factory=lambda: HFInferenceModel(settings), registry=registry(),
                          concurrency=concurrency, out_dir=out)
        wall = time.perf_counter() - start
    assert len(result.records) == len(items) * len(MODES), "every pair must finish"
    return wall, result.summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--latency", type=float, default=0.08, help="seconds before each reply's first token")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    items = arithmetic_items(args.n)
    with StubLLMServer(latency=args.latency) as server:
        sequential, _ = timed_run(items, server, 1)
        requests = len(server.requests)
        concurrent, summary = timed_run(items, server, args.concurrency)
    ratio = concurrent / sequential
    scores = {m: summary["modes"][m]["em"] for m in MODES}
    report = {"pairs": len(items) * len(MODES), "llm_calls_per_run": requests, "latency_s": args.latency,
              "sequential_wall_s": round(sequential, 2), "concurrent_wall_s": round(concurrent, 2),
              "concurrency": args.concurrency, "ratio": round(ratio, 3), "goal": GOAL, "scores": scores}
    if args.json:
        print(json.dumps(report))
    else:
        print(f"{args.n} questions × {len(MODES)} modes = {report['pairs']} pairs, {requests} LLM calls per run, "
              f"{args.latency:g} s to first token")
        print(f"sequential (concurrency 1): {sequential:6.2f} s")
        print(f"concurrency {args.concurrency}:            {concurrent:6.2f} s")
        print(f"ratio {ratio:.3f} (goal ≤ {GOAL}) {'PASS' if ratio <= GOAL else 'FAIL'}; scores {scores}")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
