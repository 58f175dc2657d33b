"""Tool latency benchmark: per-call cost of ``calculate`` and, run alone, of ``python_repl`` in a few shapes.

1. calculate through the registry over ``--calc-calls`` calls (default 2,000), and a refused ``9**9**9``
   (goal: median ≤ 5 ms); this is what ``--json`` prints for bench/report.py.
2. Run alone: python_repl through the registry, ``--repl-calls`` calls back to back: a trivial program, one
   importing every allowed module, one refused by the policy. The sandbox's goals (python_repl back to back and
   spaced, CodeAct steps, paused sessions) are bench/bench_sandbox.py's.

Usage: ``python bench/bench_tools.py [--repl-calls 50] [--calc-calls 2000]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.calculator import calculate
from tools.python_repl import python_repl
from tools.registry import ToolRegistry
from tools.sandbox_policy import ALLOWED_MODULES

REFUSAL_GOAL_MS = 5.0


def measure(registry: ToolRegistry, name: str, tool_input: str, n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        result = registry.call(name, tool_input)
        times.append((time.perf_counter() - start) * 1000)
        if result.is_error and "Refused" not in result.output:
            raise SystemExit(f"{name}({tool_input!r}) failed: {result.output}")
    return times


def summary(label: str, times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return (
        f"{label:<50} n={len(times):>5}  median {statistics.median(times):8.2f} ms  p95 {p95:8.2f} ms  "
        f"max {ordered[-1]:8.2f} ms"
    )


def json_report(args: argparse.Namespace) -> int:
    """The figures bench/report.py puts in its table: the calculator's latencies, in ms."""
    registry = ToolRegistry([calculate])
    calc = measure(registry, "calculate", "(3.5 + 2) * 4 / 7 + sqrt(2) ** 10", args.calc_calls)
    bomb = measure(registry, "calculate", "9**9**9", max(10, args.calc_calls // 10))
    print(json.dumps({"calc_median_ms": round(statistics.median(calc), 3),
                      "refusal_median_ms": round(statistics.median(bomb), 3), "refusal_max_ms": round(max(bomb), 3)}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repl-calls", type=int, default=50)
    parser.add_argument("--calc-calls", type=int, default=2000)
    parser.add_argument("--json", action="store_true", help="print one JSON object (for bench/report.py)")
    args = parser.parse_args()
    if args.json:
        return json_report(args)

    registry = ToolRegistry([calculate, python_repl])
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} CPU(s), euid {os.geteuid()}")
    measure(registry, "python_repl", "print(1)", 3)  # warm the page cache and the thread pool

    trivial = measure(registry, "python_repl", "print(1 + 1)", args.repl_calls)
    print(summary("python_repl  print(1 + 1)", trivial))
    heavy_code = "import " + ", ".join(sorted(ALLOWED_MODULES)) + "\nprint('ok')"
    heavy = measure(registry, "python_repl", heavy_code, max(10, args.repl_calls // 5))
    print(summary("python_repl  import all 16 allowed modules", heavy))
    refused = measure(registry, "python_repl", "import os", args.repl_calls)
    print(summary("python_repl  refused by the policy", refused))

    calc = measure(registry, "calculate", "(3.5 + 2) * 4 / 7 + sqrt(2) ** 10", args.calc_calls)
    print(summary("calculate    (3.5 + 2) * 4 / 7 + sqrt(2) ** 10", calc))
    bomb = measure(registry, "calculate", "9**9**9", args.calc_calls // 10)
    print(summary("calculate    9**9**9 (refused)", bomb))

    median = statistics.median(bomb)
    verdict = "met" if median <= REFUSAL_GOAL_MS else "NOT met"
    print(f"\ngoal: calculator refusal median ≤ {REFUSAL_GOAL_MS:.0f} ms → {verdict} ({median:.2f} ms); the sandbox's "
          "goals: python bench/bench_sandbox.py")
    return 0 if median <= REFUSAL_GOAL_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
