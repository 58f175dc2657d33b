"""App benchmark: a classroom of visitors on one app process, measured from outside.

Three kinds of process, as in production: the app (its CPU and memory read from ``/proc``), the stand-in model
and the visitors (light REST clients, ``bench/loadkit.py``, each in a fresh Gradio session); how they are set
up is docs/performance.md's "How the app is measured". One function per scenario, each saying what it measures:
:func:`scale`, :func:`fast`, :func:`memory`, :func:`flood`, :func:`idle`; the goals are in bench/report_app.py. Usage:
``python bench/bench_app.py [--scenario scale fast memory flood idle | all] [--visitors 20 50] [--words N] [--json]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.crowd import crowd, errors_of, measured_crowd, question, summary
from bench.loadkit import app_main, cpu_seconds, get, pct, rss_mb, stub_main, threads_and_fds

# Every visitor of a bench comes from loopback, one address, as a lecture hall behind one network would: the
# ceiling of live runs per address (APP_RUNS_PER_ADDRESS, 40) is raised to its most unless ``env`` sets it
# (bench_shares.py measures the ceiling itself).
LECTURE_HALL = {"APP_RUNS_PER_ADDRESS": "10000"}


class Stack:
    """The stub model and the app, each in its own spawned process (the app with :data:`LECTURE_HALL`)."""

    def __init__(self, latency: float, token_delay: float, chunk_chars: int = 4, env: dict | None = None,
                 stub: str = "async", words: int = 0) -> None:
        ctx = mp.get_context("spawn")
        self.stub, stub_end = ctx.Pipe()
        self.stub_proc = ctx.Process(target=stub_main, args=(latency, token_delay, chunk_chars, stub_end, stub, words),
                                     daemon=True)
        self.stub_proc.start()
        stub_url, self.stub_pid = self.stub.recv()
        self.app, app_end = ctx.Pipe()
        self.app_proc = ctx.Process(target=app_main, args=(stub_url, {**LECTURE_HALL, **(env or {})}, app_end),
                                    daemon=True)
        self.app_proc.start()
        self.url, self.app_pid = self.app.recv()

    def ask_app(self, command: str):
        self.app.send(command)
        return self.app.recv()

    def ask_stub(self, command: str):
        self.stub.send(command)
        return self.stub.recv()

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far; "workers" is the app's run worker processes (APP_RUN_WORKERS), if any."""
        workers = sum(cpu_seconds(pid) for pid in self.ask_app("workers"))
        return {"app": cpu_seconds(self.app_pid), "workers": workers, "stub": cpu_seconds(self.stub_pid),
                "visitors": time.process_time()}

    def close(self) -> None:
        for conn, proc in ((self.app, self.app_proc), (self.stub, self.stub_proc)):
            try:
                conn.send("quit")
            except OSError:
                pass
            proc.join(10)
            if proc.is_alive():
                proc.terminate()

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def app_env(args: argparse.Namespace) -> dict[str, str]:
    """The app process's environment beyond the machine's: settings (``--app-env``) and framework patches
    turned off (``--patches-off``)."""
    env = dict(pair.split("=", 1) for pair in args.app_env)
    return {**env, "APP_PATCHES_OFF": ",".join(args.patches_off)} if args.patches_off else env


def scale(args: argparse.Namespace) -> dict:
    """One visitor alone, then each crowd, ``--repeats`` times: wall(N)/wall(1) of the same round, errors, start,
    first text (also beyond the lone visitor's), last frame, CPU per token; each figure the median round's, with
    the spread over the rounds (:func:`~bench.crowd.summary`)."""
    out: dict = {"latency_s": args.latency, "tokens_per_s": round(1 / args.token_delay), "words": args.words,
                 "stub": args.stub, "runs": {}}
    alones: list[dict] = []
    crowds: dict[int, list[dict]] = {n: [] for n in args.visitors}
    with Stack(args.latency, args.token_delay, stub=args.stub, words=args.words, env=app_env(args)) as stack:
        crowd(stack.url, [question(9000 + k) for k in range(2)])  # warm-up: imports, first connections
        for round_ in range(args.repeats):
            base = 100_000 * round_  # fresh questions every round
            alones.append(alone := measured_crowd(stack, 1, base=base))
            for n in args.visitors:
                run = measured_crowd(stack, n, stagger=args.stagger, base=base)
                beyond = (None if run["first_panel_max_s"] is None or alone["first_panel_max_s"] is None
                          else round(run["first_panel_max_s"] - alone["first_panel_max_s"], 3))
                crowds[n].append({**run, "ratio": round(run["wall_s"] / alone["wall_s"], 3),
                                  "beyond_alone_s": beyond})
    out["alone"] = summary(alones, "wall_s")
    out["wall1_s"] = out["alone"]["wall_s"]
    for n, runs in crowds.items():
        out["runs"][n] = summary(runs, "ratio")
    out["errors"] = [e for s in (out["alone"], *out["runs"].values()) for e in s["error_samples"]]
    return out


def fast(args: argparse.Namespace) -> dict:
    """One visitor, All, each mode's reply streamed at ``--fast-rate`` tokens a second (long replies): how long
    after the stand-in's last token the visitor's last frame arrives, and the CPU per token."""
    words = max(args.words, 300)
    with Stack(args.latency, 1 / args.fast_rate, stub=args.stub, words=words, env=app_env(args)) as stack:
        crowd(stack.url, [question(9000 + k) for k in range(2)])
        run = measured_crowd(stack, 1)
    return {"tokens_per_s": args.fast_rate, **run}


def memory(args: argparse.Namespace) -> dict:
    """RSS of the app before and after ``--runs`` runs, each from a new session, ``--parallel`` at a time."""
    with Stack(0.05, 0.002, stub=args.stub, env=app_env(args)) as stack:
        crowd(stack.url, [question(9000 + k) for k in range(args.parallel)])  # warm-up
        for _ in range(2):  # two warm rounds: lazy imports, caches and pools reach their steady size
            crowd(stack.url, [question(8000 + k) for k in range(args.parallel)])
        stack.ask_app("gc")
        before, sessions0 = rss_mb(stack.app_pid), stack.ask_app("sessions")
        threads0 = threads_and_fds(stack.app_pid)
        if args.trace:
            stack.ask_app("trace-start")
        errors: list[str] = []
        start = time.perf_counter()
        for batch in range(0, args.runs, args.parallel):
            _, visits = crowd(stack.url, [question(batch + k) for k in range(min(args.parallel, args.runs - batch))])
            errors += errors_of(visits)
        elapsed = time.perf_counter() - start
        top = stack.ask_app("trace-diff") if args.trace else []
        stack.ask_app("gc")
        time.sleep(1.0)
        after, sessions = rss_mb(stack.app_pid), stack.ask_app("sessions")
        out = {"runs": args.runs, "parallel": args.parallel, "seconds": round(elapsed, 1),
               "rss_before_mb": round(before, 1), "rss_after_mb": round(after, 1),
               "growth_mb": round(after - before, 1), "per_run_kb": round((after - before) * 1024 / args.runs, 1),
               "errors": len(errors), "error_samples": errors[:3], "sessions_before": sessions0,
               "sessions_after": sessions, "threads_fds_before": threads0,
               "threads_fds_after": threads_and_fds(stack.app_pid)}
        if top:
            out["tracemalloc_top"] = [{"kb": round(size / 1024, 1), "count": count, "where": where}
                                      for size, count, where in top]
    return out


def idle(args: argparse.Namespace) -> dict:
    """The app's processes with nobody on the page, after a few runs (its workers started): CPU per second of wall,
    over ``--idle-s`` seconds, the stand-in's beside it (what the app's own timers and polls cost)."""
    with Stack(0.05, 0.002, stub=args.stub, env=app_env(args)) as stack:
        crowd(stack.url, [question(9000 + k) for k in range(4)])  # warm: workers up, connections made
        time.sleep(2.0)  # the runs' ends settle (sessions, closed streams)
        cpu0, start = stack.cpu(), time.perf_counter()
        time.sleep(args.idle_s)
        seconds = time.perf_counter() - start
        cpu = {k: v - cpu0[k] for k, v in stack.cpu().items()}
    per_s = {k: round(v * 1000 / seconds, 2) for k, v in cpu.items()}
    return {"seconds": round(seconds, 1), "cpu_ms_per_s": per_s,
            "app_cpu_ms_per_s": round(per_s["app"] + per_s["workers"], 2)}


BROWSER = {"Accept-Encoding": "gzip, deflate, br, zstd"}  # what Chromium sends: Gradio compresses for it


def page_loader(url: str, stop: threading.Event, loads: list[float], every: float = 0.25) -> None:
    """A browser opening the page over and over: the HTML, then its JS and CSS; seconds per full load."""
    html = get_text(url, "/")
    assets = [a.lstrip(".") for a in re.findall(r'(?:src|href)="(\./assets/[^"]+\.(?:js|css))"', html)]
    while not stop.is_set():
        start = time.perf_counter()
        ok = get(url, "/", headers=BROWSER)[0] == 200 and all(get(url, a, headers=BROWSER)[0] == 200 for a in assets)
        loads.append(time.perf_counter() - start if ok else float("inf"))
        stop.wait(every)


def get_text(url: str, path: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url.rstrip("/") + path, timeout=30) as response:
        return response.read().decode("utf-8", errors="replace")


def flood(args: argparse.Namespace) -> dict:
    """``--flood`` runs submitted at once: what each visitor hears first (its place in the queue, or that the app
    is full; nobody hangs), and how the page (``GET /`` and its JS/CSS) loads meanwhile."""
    with Stack(args.latency, args.token_delay, stub=args.stub, env=app_env(args)) as stack:
        crowd(stack.url, [question(9000 + k) for k in range(2)])  # warm-up
        quiet: list[float] = []
        stop = threading.Event()
        loader = threading.Thread(target=page_loader, args=(stack.url, stop, quiet), daemon=True)
        loader.start()
        time.sleep(2.0)
        stop.set()
        loader.join(30)
        loads: list[float] = []
        stop = threading.Event()
        loader = threading.Thread(target=page_loader, args=(stack.url, stop, loads), daemon=True)
        loader.start()
        cpu0 = stack.cpu()
        wall, visits = crowd(stack.url, [question(k) for k in range(args.flood)])
        cpu = {k: round(v - cpu0[k], 2) for k, v in stack.cpu().items()}
        stop.set()
        loader.join(30)
    kinds = {"finished": 0, "told_queued": 0, "told_full": 0, "http_503": 0, "other_errors": 0}
    for v in visits:
        statuses = " ".join(v.statuses).lower()
        if v.error and v.error.startswith("HTTP 503"):
            kinds["http_503"] += 1
        elif v.error:
            kinds["other_errors"] += 1
        elif "full" in statuses and not any(v.answers):
            kinds["told_full"] += 1
        else:
            kinds["finished"] += 1
        if "in the queue" in statuses:
            kinds["told_queued"] += 1
    # what each visitor heard first, and when: a queue place, a refusal, or the run itself
    first_word = [(v.first_update or v.end or v.start) - v.start for v in visits]
    return {"submissions": args.flood, "wall_s": round(wall, 1), "outcomes": kinds, "cpu_s": cpu,
            "first_word_max_s": round(max(first_word, default=float("nan")), 2),
            "first_word_p95_s": round(pct(first_word, 0.95), 2), "first_word_samples": len(first_word),
            "error_samples": [v.error for v in visits if v.error][:3],
            "page_quiet_median_s": round(statistics.median(quiet), 3) if quiet else None,
            "page_loads": len(loads), "page_max_s": round(max(loads, default=float("nan")), 2),
            "page_p95_s": round(pct(loads, 0.95), 2)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", nargs="+", choices=["scale", "fast", "memory", "flood", "idle", "all"],
                        default=["scale"])
    parser.add_argument("--visitors", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--latency", type=float, default=2.0, help="seconds before each reply's first token")
    parser.add_argument("--token-delay", type=float, default=0.01, help="seconds between 4-character chunks (≈ tokens)")
    parser.add_argument("--words", type=int, default=0,
                        help="scale: every thought this many words longer (long replies)")
    parser.add_argument("--repeats", type=int, default=1, help="scale: rounds (alone, then each crowd); figures are "
                        "the median round's, with the spread")
    parser.add_argument("--stagger", type=float, default=0.0, help="spread the clicks over this many seconds")
    parser.add_argument("--runs", type=int, default=500, help="memory: runs, each from a new session")
    parser.add_argument("--parallel", type=int, default=10, help="memory: runs at a time")
    parser.add_argument("--trace", action="store_true", help="memory: tracemalloc's top growth sites in the app")
    parser.add_argument("--flood", type=int, default=300, help="flood: simultaneous submissions")
    parser.add_argument("--idle-s", type=float, default=20.0, help="idle: seconds measured with nobody on the page")
    parser.add_argument("--fast-rate", type=float, default=1000.0, help="fast: tokens a second in each stream")
    parser.add_argument("--stub", choices=["async", "thread"], default="async",
                        help="the stand-in model: asyncio (default) or a thread per connection (the tests' stub, "
                             "ThreadingHTTPServer); both pace each chunk on absolute time, as a server does")
    parser.add_argument("--app-env", nargs="+", default=[], metavar="NAME=VALUE",
                        help="settings for the app's process, e.g. APP_RUN_WORKERS=4 (compare two designs)")
    parser.add_argument("--patches-off", nargs="+", default=[], metavar="NAME",
                        help="run the app without these framework patches (patches/: APP_PATCHES_OFF), or 'all'")
    parser.add_argument("--json", action="store_true", help="print one JSON object (for bench/report.py)")
    args = parser.parse_args(argv)
    result: dict = {"cores": os.cpu_count(), "loadavg": os.getloadavg()[0]}
    for name, fn in (("scale", scale), ("fast", fast), ("memory", memory), ("flood", flood), ("idle", idle)):
        if name in args.scenario or "all" in args.scenario:
            result[name] = fn(args)
            if not args.json:
                print(f"== {name} ==\n{json.dumps(result[name], indent=1, default=str)}", flush=True)
    if args.json:
        print(json.dumps(result, default=str))
    return result


if __name__ == "__main__":
    main()
