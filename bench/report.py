"""One performance report: every benchmark, one table of figures with their goals beside them.

    python -m bench            # full run, ~15 minutes on 2 cores
    python -m bench --quick    # smaller runs for development, ~2 minutes
    python -m bench --json     # the raw figures of every benchmark, as one JSON object
    python -m bench --smoke    # the smallest runs, ~30 s: does every benchmark still run? (figures mean little)

Each benchmark runs in its own process (``bench/bench_*.py --json``), so one's threads, memory
and imports cannot colour another's figures. On a machine that is busy with other work every
figure is pessimistic; the machine's load average is printed with the table, and its speed (a fixed Python
workload's time, :func:`speed_ms`) at the start and the end of the run.

Exit status: 0 when every goal is met, 1 when a figure misses its goal, 2 when a benchmark did not run
(its rows show "—" and the table's foot names it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import report_app, report_poll  # noqa: E402 - after the path: python bench/report.py runs too

# name → (script, flags): ``bench/bench_<script>.py --json <flags>``. "app" is the short replies of the toy model
# (36 tokens a run), "app_long" the long ones (every thought 300 words longer, ~1,300 tokens a run, 0.5 s to each
# reply's first token); each against the asyncio stand-in, and again ("_thread") against a thread per connection.
# The crowds run three rounds: each figure is the median round's, with the spread.
SHORT = ["--visitors", "20", "50", "100"]
LONG = ["--words", "300", "--visitors", "50", "--latency", "0.5"]
FULL = {
    "engine": ("engine", ["--repeats", "3"]),
    "tools": ("tools", ["--calc-calls", "2000"]),
    "sandbox": ("sandbox", ["--repl-calls", "50", "--steps", "50", "--busy-steps", "10", "--sessions", "32"]),
    "eval": ("eval", ["--n", "60"]),
    "app": ("app", ["--scenario", "scale", "memory", "flood", "idle", *SHORT, "--repeats", "3", "--runs", "500",
                    "--flood", "300", "--idle-s", "30"]),
    "app_thread": ("app", ["--scenario", "scale", *SHORT, "--repeats", "3", "--stub", "thread"]),
    "app_long": ("app", ["--scenario", "scale", "fast", *LONG, "--repeats", "3"]),
    "app_long_thread": ("app", ["--scenario", "scale", *LONG, "--repeats", "3", "--stub", "thread"]),
    "stages": ("stages", ["--configs", "short:1", "short:50", "long:1", "long:50"]),
    "poll": ("poll", ["--layouts", "1x200", "5x40", "--repeats", "3"]),
}
QUICK = {
    "engine": ("engine", ["--repeats", "1"]),
    "tools": ("tools", ["--calc-calls", "200"]),
    "sandbox": ("sandbox", ["--repl-calls", "10", "--steps", "20", "--busy-steps", "5", "--sessions", "32"]),
    "eval": ("eval", ["--n", "12"]),
    "app": ("app", ["--scenario", "scale", "memory", "flood", "idle", "--visitors", "10", "20", "--runs", "100",
                    "--flood", "100", "--latency", "1.0", "--idle-s", "10"]),
    "app_thread": ("app", ["--scenario", "scale", "--visitors", "10", "20", "--latency", "1.0", "--stub", "thread"]),
    "app_long": ("app", ["--scenario", "scale", "fast", "--words", "300", "--visitors", "20", "--latency", "0.5"]),
    "app_long_thread": ("app", ["--scenario", "scale", "--words", "300", "--visitors", "20", "--latency", "0.5",
                                "--stub", "thread"]),
    "stages": ("stages", ["--configs", "short:1", "long:20", "--latency", "1.0"]),
    "poll": ("poll", ["--layouts", "1x100", "5x20", "--repeats", "1"]),
}
SMOKE = {  # every script, every scenario, every key of the table, at the smallest honest size (tests/bench)
    "engine": ("engine", ["--repeats", "1", "--latency", "0.02", "--token-delay", "0.001"]),
    "tools": ("tools", ["--calc-calls", "20"]),
    "sandbox": ("sandbox", ["--repl-calls", "3", "--repl-gap", "0.2", "--steps", "3", "--busy-steps", "2", "--busy-ms",
                            "50", "--sessions", "2"]),
    "eval": ("eval", ["--n", "3", "--latency", "0.01"]),
    "app": ("app", ["--scenario", "scale", "memory", "flood", "idle", "--visitors", "2", "--runs", "4", "--parallel",
                    "2", "--flood", "4", "--latency", "0.2", "--idle-s", "1", "--repeats", "2"]),
    "app_thread": ("app", ["--scenario", "scale", "--visitors", "2", "--latency", "0.2", "--stub", "thread"]),
    "app_long": ("app", ["--scenario", "scale", "fast", "--words", "20", "--visitors", "2", "--latency", "0.2"]),
    "app_long_thread": ("app", ["--scenario", "scale", "--words", "20", "--visitors", "2", "--latency", "0.2",
                                "--stub", "thread"]),
    "stages": ("stages", ["--configs", "short:1", "--latency", "0.2"]),
    "poll": ("poll", ["--layouts", "1x3", "2x2", "--repeats", "1", "--words", "20", "--latency", "0.2", "--window-s",
                      "1"]),
}


def run(script: str, args: list[str], timeout: float = 900) -> dict:
    """``bench/bench_<script>.py --json ARGS`` → its JSON (or ``{"failed": ...}``)."""
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, str(HERE / f"bench_{script}.py"), "--json", *args], capture_output=True,
                              text=True, timeout=timeout, cwd=HERE.parent)
    except subprocess.TimeoutExpired:
        return {"failed": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:]
        return {"failed": last[0] if last else f"exit {done.returncode}"}
    result = json.loads(lines[-1])
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def speed_ms(rounds: int = 5) -> float:
    """This machine's speed now: the median time of a fixed, single-threaded Python workload (ms). On a shared VM
    the same code's figures move with it between runs; printed at the start and the end of a run, it tells a
    slow machine from slower code."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        sum(i * i % 7 for i in range(200_000))
        json.loads(json.dumps([{"n": i, "s": str(i)} for i in range(20_000)]))
        times.append(time.perf_counter() - started)
    return round(sorted(times)[rounds // 2] * 1000, 1)


def fmt(value: float | None, unit: str = "", digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}{unit}"


Row = tuple[str, str, str, bool | None]  # measure, figure, goal, met (None: no goal)


class Rows(list):
    """The table being built: :meth:`add` puts a row with its verdict (none without a goal or a figure)."""

    def add(self, measure: str, value: float | None, shown: str, goal: str,
            ok: Callable[[float], bool] | None) -> None:
        met = None if ok is None or value is None or (isinstance(value, float) and math.isnan(value)) else ok(value)
        self.append((measure, shown, goal, met))


def _sandbox_rows(out: Rows, sandbox: dict) -> None:
    """The Python sandbox (bench_sandbox.py): python_repl calls, CodeAct steps, a session's start, paused sessions."""
    repl, step, start, paused = (sandbox.get(k, {}) for k in ("repl", "step", "start", "paused"))
    value, shown = None, "—"
    if repl:
        b2b, spaced = repl["back_to_back"], repl["spaced"]
        value = max(b2b["median_ms"], spaced["median_ms"])
        shown = (f"back to back: median {b2b['median_ms']:.1f} ms, p95 {b2b['p95_ms']:.1f} ms; {repl['gap_s']:g} s "
                 f"apart: median {spaced['median_ms']:.1f} ms, p95 {spaced['p95_ms']:.1f} ms ({b2b['n']} calls each)")
    out.add("sandbox call latency (python_repl, trivial program)", value, shown, "median ≤ 150 ms, both",
            lambda v: v <= 150)
    value, shown = None, "—"
    if step:
        trivial, busy = step["trivial"], step["busy"]
        value = max(trivial["median_ms"], busy["median_ms"])
        shown = (f"x = 1: median {trivial['median_ms']:.1f} ms, p95 {trivial['p95_ms']:.1f} ms ({trivial['n']} steps); "
                 f"a {step['busy_own_ms']:.0f} ms busy loop: median {busy['median_ms']:.1f} ms, p95 "
                 f"{busy['p95_ms']:.1f} ms ({busy['n']} steps)")
    out.add("CodeAct step overhead (one session: step wall − the program's own time)", value, shown,
            "median ≤ 100 ms, both", lambda v: v <= 100)
    shown = (f"median {start['median_ms']:.0f} ms, max {start['max_ms']:.0f} ms ({start['n']} sessions)" if start
             else "—")
    out.add("CodeAct session start (host process + guest, to the end of a first step x = 1)",
            start.get("median_ms"), shown, "—", None)
    value, shown = None, "—"
    if paused:
        if paused["measure"] == "pss":
            value = paused["pss_mb"]
            shown = f"PSS {value:.0f} MB (RSS sum {paused['rss_mb']:.0f} MB), {paused['processes']} processes"
        else:
            value = paused["rss_mb"]
            shown = f"RSS sum {value:.0f} MB (PSS unreadable: not root), {paused['processes']} processes"
    sessions = paused["sessions"] if paused else 32
    out.add(f"{sessions} paused CodeAct sessions: their host processes' memory in all", value, shown, "≤ 1 GB",
            lambda v: v <= 1024)


def rows(r: dict) -> list[Row]:
    """The table, from the benchmarks' JSON."""
    out = Rows()
    engine, tools, evals, app = r.get("engine", {}), r.get("tools", {}), r.get("eval", {}), r.get("app", {})
    out.add("All vs slowest mode alone (wall ratio)", engine.get("ratio"), fmt(engine.get("ratio"), "", 3), "≤ 1.15",
            lambda v: v <= 1.15)
    out.add("orchestration overhead per LLM call", engine.get("overhead_ms_per_call"),
            fmt(engine.get("overhead_ms_per_call"), " ms"), "≤ 5 ms", lambda v: v <= 5)
    walks = engine.get("pool_walk_ms_per_request") or {}
    out.add("model client's connection-pool walks, 300 streams starting at once: CPU per request", None,
            f"{walks['pools']} pools: {walks['sharded']:.3f} ms · one pool: {walks['one_pool']:.3f} ms"
            if walks else "—", "—", None)
    report_app.short_rows(out, r)
    report_app.long_rows(out, r)
    report_app.load_rows(out, app)
    report_app.idle_row(out, app.get("idle", {}))
    report_poll.poll_rows(out, r.get("poll", {}))
    out.add("benchmark concurrency (concurrent ÷ sequential wall)", evals.get("ratio"),
            f"{fmt(evals.get('ratio'), '', 3)} ({evals.get('concurrent_wall_s')} s vs "
            f"{evals.get('sequential_wall_s')} s, concurrency {evals.get('concurrency')})", "≤ 0.2", lambda v: v <= 0.2)
    _sandbox_rows(out, r.get("sandbox", {}))
    out.add("calculator refusal (9**9**9)", tools.get("refusal_median_ms"),
            f"median {fmt(tools.get('refusal_median_ms'), ' ms', 2)}, max {fmt(tools.get('refusal_max_ms'), ' ms', 2)}",
            "median ≤ 5 ms", lambda v: v <= 5)
    return list(out)


def stages_table(r: dict) -> str:
    """Where a streamed token's CPU goes (bench_stages.py): ms per token by stage, one column per configuration."""
    configs = (r.get("stages") or {}).get("configs") or {}
    if not configs:
        return ""
    names = list(dict.fromkeys(stage for c in configs.values() for stage in c["stages"]))
    heads = [f"{c['replies']}, {c['visitors']} visitor{'s' if c['visitors'] > 1 else ''}" for c in configs.values()]
    lines = ["| ms per streamed token | " + " | ".join(heads) + " |", "| --- |" + " --- |" * len(heads)]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(f"{c['stages'].get(name, 0):.3f}" for c in configs.values()) + " |")
    lines.append("| **all the app's processes** | " + " | ".join(f"**{c['cpu_ms_per_token']:.3f}**"
                                                           for c in configs.values()) + " |")
    return "\n".join(lines)


def table(r: dict) -> str:
    lines = ["| measure | figure | goal | |", "| --- | --- | --- | --- |"]
    for measure, shown, goal, met in rows(r):
        lines.append(f"| {measure} | {shown} | {goal} | {'' if met is None else ('PASS' if met else 'FAIL')} |")
    failed = [f"{name}: {res['failed']}" for name, res in r.items() if isinstance(res, dict) and "failed" in res]
    lines += [""] + [f"FAILED {f}" for f in failed] if failed else []
    if stages := stages_table(r):
        lines += ["", "Where a streamed token's CPU goes (bench_stages.py, under py-spy):", "", stages]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs, for development")
    parser.add_argument("--smoke", action="store_true", help="the smallest runs: does every benchmark still run?")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON instead of the table")
    parser.add_argument("--only", nargs="+", choices=list(FULL), help="run only these benchmarks")
    args = parser.parse_args(argv)
    plan = SMOKE if args.smoke else QUICK if args.quick else FULL
    started, load, speed = time.perf_counter(), os.getloadavg()[0], speed_ms()
    results: dict = {}
    for name in args.only or list(plan):
        script, flags = plan[name]
        print(f"running bench_{script} {' '.join(flags)} …", file=sys.stderr, flush=True)
        results[name] = run(script, flags)
    if args.json:
        print(json.dumps(results))
    else:
        flag = " --smoke" if args.smoke else " --quick" if args.quick else ""
        print(f"`python -m bench{flag}` on {os.cpu_count()} cores, "
              f"load average {load:.1f} → {os.getloadavg()[0]:.1f}, {time.perf_counter() - started:.0f} s; "
              f"machine speed (bench/report.speed_ms, lower is faster) {speed:.1f} → {speed_ms():.1f} ms\n")
        print(table(results))
    if any("failed" in res for res in results.values()):
        return 2  # a benchmark did not run: its rows have no figure, which must not read as a pass
    return 0 if all(met is not False for *_, met in rows(results)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
