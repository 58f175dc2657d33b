"""The report's table: every benchmark's figures as rows, each with its goal and its verdict.

:func:`rows` builds them from the benchmarks' JSON (``python -m bench --json``, or a results file's
``results``); :func:`table` prints them as Markdown, with where a streamed token's CPU goes beneath.
:func:`figures` gives each row's value, the one its verdict is on: the worse stand-in's in a crowd row,
infinity where errors fail it. The app's rows are bench/report_app.py's, the class poll's bench/report_poll.py's, fair
shares' bench/report_shares.py's.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from bench import report_app, report_poll, report_shares


def fmt(value: float | None, unit: str = "", digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}{unit}"


Row = tuple[str, str, str, bool | None]  # measure, figure, goal, met (None: no goal)


class Rows(list):
    """The table being built: :meth:`add` puts a row with its verdict (none without a goal or a figure), and keeps
    the value the verdict is on in :attr:`values`."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[float | None] = []

    def add(self, measure: str, value: float | None, shown: str, goal: str,
            ok: Callable[[float], bool] | None) -> None:
        met = None if ok is None or value is None or (isinstance(value, float) and math.isnan(value)) else ok(value)
        self.append((measure, shown, goal, met))
        self.values.append(value)


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
            mb = paused["pss_mb"]
            shown = f"PSS {mb:.0f} MB (RSS sum {paused['rss_mb']:.0f} MB), {paused['processes']} processes"
        else:
            mb = paused["rss_mb"]
            shown = f"RSS sum {mb:.0f} MB (PSS unreadable: not root), {paused['processes']} processes"
        value = mb / 1024  # in GB, the goal's unit
    sessions = paused["sessions"] if paused else 32
    out.add(f"{sessions} paused CodeAct sessions: their host processes' memory in all", value, shown, "≤ 1 GB",
            lambda v: v <= 1)


def rows(r: dict) -> list[Row]:
    """The table, from the benchmarks' JSON."""
    return list(_built(r))


def figures(r: dict) -> list[tuple[str, float | None, str, bool | None]]:
    """(measure, the value its verdict is on, goal, met) for every row of :func:`rows`, in its unit."""
    built = _built(r)
    return [(measure, value, goal, met) for (measure, _, goal, met), value in zip(built, built.values, strict=True)]


def _built(r: dict) -> Rows:
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
    report_shares.shares_rows(out, r.get("shares", {}))
    out.add("benchmark concurrency (concurrent ÷ sequential wall)", evals.get("ratio"),
            f"{fmt(evals.get('ratio'), '', 3)} ({evals.get('concurrent_wall_s')} s vs "
            f"{evals.get('sequential_wall_s')} s, concurrency {evals.get('concurrency')})", "≤ 0.2", lambda v: v <= 0.2)
    _sandbox_rows(out, r.get("sandbox", {}))
    out.add("calculator refusal (9**9**9)", tools.get("refusal_median_ms"),
            f"median {fmt(tools.get('refusal_median_ms'), ' ms', 2)}, max {fmt(tools.get('refusal_max_ms'), ' ms', 2)}",
            "median ≤ 5 ms", lambda v: v <= 5)
    return out


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


def verdict(met: bool | None) -> str:
    return "" if met is None else "PASS" if met else "FAIL"


def goals_table(r: dict) -> str:
    """Every row with its figure, goal and verdict; beneath, a line for each benchmark that did not run."""
    lines = ["| measure | figure | goal | |", "| --- | --- | --- | --- |"]
    for measure, shown, goal, met in rows(r):
        lines.append(f"| {measure} | {shown} | {goal} | {verdict(met)} |")
    failed = [f"{name}: {res['failed']}" for name, res in r.items() if isinstance(res, dict) and "failed" in res]
    lines += [""] + [f"FAILED {f}" for f in failed] if failed else []
    return "\n".join(lines)


def table(r: dict) -> str:
    """:func:`goals_table`, then where a streamed token's CPU goes."""
    lines = [goals_table(r)]
    if stages := stages_table(r):
        lines += ["", "Where a streamed token's CPU goes (bench_stages.py, under py-spy):", "", stages]
    return "\n".join(lines)
