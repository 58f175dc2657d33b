"""The Python sandbox's cost: a ``python_repl`` call, a CodeAct step, a session's start, paused sessions' memory.

Every program runs in CPython for WASI under Wasmtime, in a host process of its own (tools/sandbox_wasm.py). Rows:
``python_repl`` back to back and ``--repl-gap`` apart (goal: median ≤ 150 ms); a CodeAct step's overhead, its wall
time less the program's own (goal: median ≤ 100 ms); a session's start; ``--sessions`` paused sessions' memory,
PSS as root, else the RSS sum (goal: ≤ 1 GB for 32). What each row times: docs/performance.md, "The sandbox".

Usage: ``python bench/bench_sandbox.py [--repl-calls 50] [--repl-gap 0.5] [--steps 50] [--busy-steps 10]
[--busy-ms 200] [--sessions 32] [--json]``
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

from tools.python_repl import python_repl
from tools.registry import ToolRegistry
from tools.sandbox_session import SandboxSession, StepResult

REPL_GOAL_MS = 150.0
STEP_GOAL_MS = 100.0
MEMORY_GOAL_MB = 1024.0
TRIVIAL = "x = 1"
BUSY = ("import time\nt0 = time.perf_counter()\nn = 0\nwhile time.perf_counter() - t0 < {s}:\n    n += 1\n"
        "print(time.perf_counter() - t0)")
VARIABLES = ("import json, math\nrows = [{'n': i, 'root': math.sqrt(i), 'name': 'row %d' % i} for i in range(1000)]\n"
             "text = json.dumps(rows)\ntotal = sum(r['root'] for r in rows)\nprint(len(text), round(total, 2))")


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def stats(times: list[float]) -> dict:
    return {"median_ms": round(statistics.median(times), 2), "p95_ms": round(p95(times), 2),
            "max_ms": round(max(times), 2), "n": len(times)}


# -- 1. python_repl ------------------------------------------------------------------------------------------------


def repl_calls(registry: ToolRegistry, n: int, gap_s: float) -> list[float]:
    """``n`` trivial calls through the registry, ``gap_s`` apart (0: back to back), in ms."""
    times = []
    for _ in range(n):
        if gap_s:
            time.sleep(gap_s)
        start = time.perf_counter()
        result = registry.call("python_repl", "print(1 + 1)")
        times.append((time.perf_counter() - start) * 1000)
        if result.is_error or result.output.strip() != "2":
            raise SystemExit(f"python_repl failed: {result.output}")
    return times


# -- 2, 3. CodeAct steps -------------------------------------------------------------------------------------------


def step(session: SandboxSession, code: str) -> tuple[float, StepResult]:
    """One step, its tool calls consumed as the engine does: (wall ms, result)."""
    start = time.perf_counter()
    steps = session.run(code)
    try:
        while True:
            next(steps)
    except StopIteration as done:
        result = done.value
    wall = (time.perf_counter() - start) * 1000
    if not result.ok:
        raise SystemExit(f"CodeAct step {code!r} failed: {result.status} {result.error}")
    return wall, result


def step_overheads(n_trivial: int, n_busy: int, busy_ms: float) -> tuple[dict, float]:
    """One session: its start, then ``x = 1`` and the busy loop alternately. Returns the figures, start in ms."""
    with SandboxSession(ToolRegistry([])) as session:
        started, _ = step(session, TRIVIAL)
        trivial, busy, own = [], [], []
        busy_code = BUSY.format(s=busy_ms / 1000)
        for i in range(max(n_trivial, n_busy)):
            if i < n_trivial:
                trivial.append(step(session, TRIVIAL)[0])
            if i < n_busy:
                wall, result = step(session, busy_code)
                own_ms = float(result.output.split()[-1]) * 1000
                own.append(own_ms)
                busy.append(wall - own_ms)
    return {"trivial": stats(trivial), "busy": stats(busy), "busy_own_ms": round(statistics.median(own), 1)}, started


# -- 4. paused sessions ----------------------------------------------------------------------------------------------


def _groups(leaders: set[int]) -> list[int]:
    """Every process whose process group is one of ``leaders`` (each host leads its own group)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                    pgid = int(f.read().rpartition(")")[2].split()[2])
            except (OSError, ValueError, IndexError):
                continue
            if pgid in leaders:
                pids.append(int(entry))
    return pids


def _field_kb(path: str, name: str) -> int:
    with open(path, encoding="ascii") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise ValueError(f"no {name} in {path}")


def memory(pids: list[int]) -> dict:
    """PSS and RSS sums in MiB; PSS is None when smaps_rollup cannot be read (not root: the hosts are non-dumpable)."""
    rss = sum(_field_kb(f"/proc/{pid}/status", "VmRSS") for pid in pids)
    try:
        pss: float | None = sum(_field_kb(f"/proc/{pid}/smaps_rollup", "Pss") for pid in pids) / 1024
    except PermissionError:
        pss = None
    return {"pss_mb": None if pss is None else round(pss, 1), "rss_mb": round(rss / 1024, 1)}


def paused_sessions(n: int, settle_s: float = 1.0) -> tuple[dict, list[float]]:
    """``n`` sessions, each with a live guest holding a few variables, paused; their memory. Returns it and the
    sessions' start times (ms)."""
    sessions, starts = [], []
    try:
        for _ in range(n):
            session = SandboxSession(ToolRegistry([]))
            sessions.append(session)
            starts.append(step(session, TRIVIAL)[0])
            step(session, VARIABLES)
        time.sleep(settle_s)  # every host idle, blocked on its next step
        leaders = {s.pid for s in sessions}
        if None in leaders or len(leaders) != n:
            raise SystemExit(f"{n} sessions, {len(leaders)} live processes")
        pids = _groups(leaders)  # type: ignore[arg-type]
        figures = memory(pids)
        figures.update(sessions=n, processes=len(pids))
    finally:
        for session in sessions:
            session.close()
    figures["measure"] = "rss" if figures["pss_mb"] is None else "pss"
    return figures, starts


# -- the report --------------------------------------------------------------------------------------------------


def measure_all(args: argparse.Namespace) -> dict:
    registry = ToolRegistry([python_repl])
    repl_calls(registry, 3, args.repl_gap)  # the first call boots the process's spare; the page cache warms
    back_to_back = repl_calls(registry, args.repl_calls, 0)
    spaced = repl_calls(registry, args.repl_calls, args.repl_gap)
    steps, first_start = step_overheads(args.steps, args.busy_steps, args.busy_ms)
    paused, starts = paused_sessions(args.sessions)
    return {
        "repl": {"back_to_back": stats(back_to_back), "spaced": stats(spaced), "gap_s": args.repl_gap},
        "step": steps,
        "start": stats([first_start, *starts]),
        "paused": paused,
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def verdicts(r: dict) -> dict[str, bool]:
    return {
        "python_repl median ≤ 150 ms (back to back and spaced)":
            max(r["repl"]["back_to_back"]["median_ms"], r["repl"]["spaced"]["median_ms"]) <= REPL_GOAL_MS,
        "CodeAct step overhead median ≤ 100 ms (x = 1 and busy loop)":
            max(r["step"]["trivial"]["median_ms"], r["step"]["busy"]["median_ms"]) <= STEP_GOAL_MS,
        f"{r['paused']['sessions']} paused sessions ≤ 1 GB in all ({r['paused']['measure'].upper()})":
            r["paused"][f"{r['paused']['measure']}_mb"] <= MEMORY_GOAL_MB,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repl-calls", type=int, default=50, help="python_repl calls, back to back and spaced")
    parser.add_argument("--repl-gap", type=float, default=0.5, help="seconds between the spaced python_repl calls")
    parser.add_argument("--steps", type=int, default=50, help="CodeAct steps running x = 1")
    parser.add_argument("--busy-steps", type=int, default=10, help="CodeAct steps running the busy loop")
    parser.add_argument("--busy-ms", type=float, default=200.0, help="the busy loop's length, timed in the guest")
    parser.add_argument("--sessions", type=int, default=32, help="CodeAct sessions started and paused together")
    parser.add_argument("--json", action="store_true", help="print one JSON object (for bench/report.py)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    r = measure_all(args)
    if args.json:
        print(json.dumps(r))
        return 0
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} CPU(s), euid {os.geteuid()}, load average "
          f"{load:.2f} → {r['load'][0]:.2f}")
    for name, s in (("python_repl, back to back", r["repl"]["back_to_back"]),
                    (f"python_repl, {args.repl_gap:g} s apart", r["repl"]["spaced"]),
                    ("CodeAct step x = 1: wall", r["step"]["trivial"]),
                    (f"CodeAct step, {args.busy_ms:g} ms busy loop: wall − own time", r["step"]["busy"]),
                    ("CodeAct session start (first step x = 1)", r["start"])):
        print(f"{name:<55} n={s['n']:>4}  median {s['median_ms']:8.2f} ms  p95 {s['p95_ms']:8.2f} ms  "
              f"max {s['max_ms']:8.2f} ms")
    m = r["paused"]
    pss = "unreadable (not root)" if m["pss_mb"] is None else f"{m['pss_mb']:.1f} MiB"
    print(f"{m['sessions']} paused sessions ({m['processes']} processes): PSS {pss}, RSS sum {m['rss_mb']:.1f} MiB")
    met = verdicts(r)
    for goal, ok in met.items():
        print(f"goal: {goal} → {'met' if ok else 'NOT met'}")
    return 0 if all(met.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
