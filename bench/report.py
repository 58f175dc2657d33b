"""One performance report: every benchmark, one table of figures with their goals beside them.

    python -m bench            # full run, ~16 minutes on 2 cores; writes a results file to bench/results/
    python -m bench --quick    # smaller runs for development, ~2 minutes
    python -m bench --smoke    # the smallest runs, ~30 s: does every benchmark still run?
    python -m bench --write    # no benchmark: docs/performance.md and the README's figures, from bench/results/

Each benchmark runs in its own process (``bench/bench_*.py --json``), so none colours another's figures; the
machine's load and speed (:func:`speed_ms`) are printed with the table. ``--json``, ``--record`` and the exit
status: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import page, run_record  # noqa: E402 - after the path: python bench/report.py runs too
from bench.report_table import rows, table  # noqa: E402

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
    "shares": ("shares", ["--flood", "300", "--phones", "40", "--repeats", "3"]),
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
    "shares": ("shares", ["--flood", "100", "--phones", "40", "--repeats", "1"]),
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
    "shares": ("shares", ["--flood", "6", "--share", "2", "--phones", "3", "--repeats", "1", "--latency", "0.1",
                          "--token-delay", "0.001"]),
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


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs, for development")
    parser.add_argument("--smoke", action="store_true", help="the smallest runs: does every benchmark still run?")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON instead of the table")
    parser.add_argument("--only", nargs="+", choices=list(FULL), help="run only these benchmarks")
    keep = parser.add_mutually_exclusive_group()
    keep.add_argument("--record", nargs="?", const="", metavar="PATH",
                      help="write this run's results file (a full run writes one by default), to PATH if given, "
                           "else to bench/results/DATE-COMMIT-PLAN.json")
    keep.add_argument("--no-record", action="store_true", help="write no results file")
    parser.add_argument("--write", action="store_true",
                        help="run no benchmark: write docs/performance.md and the README's figures from bench/results/")
    args = parser.parse_args(argv)
    if args.write and (args.quick or args.smoke or args.json or args.only or args.record is not None
                       or args.no_record):
        parser.error("--write runs no benchmark: it takes no other option")
    return args


def main(argv: list[str] | None = None) -> int:
    """0 when every goal is met, 1 when a figure misses its goal, 2 when a benchmark did not run (its rows show "—"
    and the table's foot names it) or ``--write`` found a results file it cannot read."""
    args = arguments(argv)
    if args.write:
        try:
            written = page.write()
        except (run_record.BadResults, page.PageError) as exc:
            print(f"python -m bench --write: {exc}", file=sys.stderr)
            return 2
        print("wrote " + ", ".join(map(str, written)))
        return 0
    name = "smoke" if args.smoke else "quick" if args.quick else "full"
    plan = {"smoke": SMOKE, "quick": QUICK, "full": FULL}[name]
    benchmarks = {n: plan[n] for n in args.only or plan}
    date, started = run_record.now(), time.perf_counter()
    load, speed = round(os.getloadavg()[0], 2), speed_ms()
    figures: dict = {}
    for bench_name, (script, flags) in benchmarks.items():
        print(f"running bench_{script} {' '.join(flags)} …", file=sys.stderr, flush=True)
        figures[bench_name] = run(script, flags)
    machine = {"cores": os.cpu_count(), "speed_ms": {"start": speed, "end": speed_ms()},
               "load_average": {"start": load, "end": round(os.getloadavg()[0], 2)}}
    command = shlex.join(["python", "-m", "bench", *(sys.argv[1:] if argv is None else argv)])
    record = run_record.record(command, name, benchmarks, args.only, figures, date=date,
                            seconds=time.perf_counter() - started, machine=machine)
    if args.json:
        print(json.dumps(figures))
    else:
        print(run_record.summary(record) + "\n")
        print(table(figures))
    if args.record is not None or (name == "full" and not args.only and not args.no_record):
        path = Path(args.record) if args.record else run_record.default_path(record)
        print(f"results: {run_record.write(record, path)}", file=sys.stderr)
    if any("failed" in res for res in figures.values()):
        return 2  # a benchmark did not run: its rows have no figure, which must not read as a pass
    return 0 if all(met is not False for *_, met in rows(figures)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
