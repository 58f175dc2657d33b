"""The app's rows of the report (bench_app.py): crowds against both stand-ins, the load rows, the idle row.

A crowd row holds its figure against each stand-in model (``app``/``app_long``: asyncio; ``app_thread``/
``app_long_thread``: a thread per connection, as many servers are), each the median of ``--repeats`` rounds with
the rounds' spread beside it; its verdict needs both to meet the goal. The stand-in's and the visitors' CPU are
shown beside the app's: all share the same cores.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ui.core.settings import RUNS_PER_CORE

STANDINS = (("async", ""), ("thread", "_thread"))  # label, suffix of the benchmark's name in the results


def _fmt(value: float | None, unit: str, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}{unit}"


def _figure(s: dict, key: str, unit: str = "", digits: int = 2) -> str:
    """``s[key]``, with its spread over the rounds when there were several."""
    shown = _fmt(s.get(key), unit, digits)
    low_high = (s.get("spread") or {}).get(key)
    if low_high and s.get("repeats", 1) > 1:
        shown += f" ({_fmt(low_high[0], '', digits)}–{_fmt(low_high[1], unit, digits)})"
    return shown


def _crowds(r: dict, long: bool) -> list[tuple[str, dict]]:
    """(stand-in label, its scale results) for each stand-in that ran."""
    base = "app_long" if long else "app"
    return [(label, scale) for label, suffix in STANDINS
            if (scale := (r.get(base + suffix) or {}).get("scale"))]


Pick = Callable[[dict], dict | None]  # a stand-in's scale results → the summary a row reads


def _row(out: Any, measure: str, goal: str, ok: Callable[[float], bool] | None, crowds: list[tuple[str, dict]],
         pick: Pick, value: Callable[[dict], float | None], shown: Callable[[dict], str]) -> None:
    """One row over both stand-ins: ``pick`` finds the summary in a stand-in's scale results; the verdict is on the
    worse of their values."""
    parts, values = [], []
    for label, scale in crowds:
        s = pick(scale)
        if s is None:
            continue
        values.append(value(s))  # None (e.g. no first text matched): shown as "—", no verdict from it
        parts.append(f"{label}: {shown(s)}")
    worst = max((v for v in values if v is not None), default=None)
    out.add(measure, worst, " · ".join(parts) or "—", goal, ok)


def _at(n: int) -> Pick:
    """The summary of the crowd of ``n`` visitors (JSON keys are strings; a fresh result's are ints)."""
    return lambda sc: sc["runs"].get(str(n), sc["runs"].get(n))


def _errors_or(key: str) -> Callable[[dict], float | None]:
    return lambda s: s.get(key) if not s.get("errors") else math.inf


def _beside(s: dict) -> str:
    cpu = s.get("cpu_s") or {}
    return (f"{_figure(s, 'cpu_ms_per_token', ' ms', 3)} (app {s['app_cpu_ms_per_token']:.3f} + workers "
            f"{s['worker_cpu_ms_per_token']:.3f}; beside: stand-in {cpu.get('stub', 0):.2f} s, visitors "
            f"{cpu.get('visitors', 0):.2f} s CPU; {s['tokens']} tokens)")


def short_rows(out: Any, r: dict) -> None:
    """The toy model's short replies: each crowd against one visitor, the burst's start and first text."""
    crowds = _crowds(r, long=False)
    counts = sorted({int(n) for _, scale in crowds for n in scale.get("runs", {})})
    for n in counts:
        limit = 1.3 if n <= 50 else 1.5
        _row(out, f"short replies: {n} visitors vs 1, mode All (wall ratio, errors)", f"≤ {limit}, 0 errors",
             lambda v, limit=limit: v <= limit, crowds, _at(n),
             _errors_or("ratio"), lambda s: f"{_figure(s, 'ratio')} ({s['wall_s']:.1f} s), {s['errors']} errors")
    if not counts:
        return
    mid = min(counts, key=lambda n: abs(n - 50))  # 50 visitors, or the nearest crowd
    top = max(counts)

    _row(out, f"short replies: slowest first panel text, {mid} visitors, beyond one visitor alone", "≤ +0.5 s",
         lambda v: v <= 0.5, crowds, _at(mid), lambda s: s.get("beyond_alone_s"),
         lambda s: f"+{_figure(s, 'beyond_alone_s', ' s')}")
    _row(out, f"short replies: {top} clicks at once, each visitor's first frame (panel text or place) after the click",
         "≤ 0.5 s (max)", lambda v: v <= 0.5, crowds, _at(top), lambda s: s.get("start_max_s"),
         lambda s: f"max {_figure(s, 'start_max_s', ' s')}, median {_fmt(s.get('start_median_s'), ' s', 2)}")
    _row(out, f"short replies: first text on screen after the server's first token ({mid} visitors × 3 panels)",
         "≤ 500 ms (max)", lambda v: v <= 500, crowds, _at(mid), lambda s: s.get("first_text_max_ms"),
         lambda s: f"max {_figure(s, 'first_text_max_ms', ' ms', 0)}, median "
                   f"{_fmt(s.get('first_text_median_ms'), ' ms', 0)}")
    _row(out, f"short replies: CPU per streamed token, app + run workers ({mid} visitors)", "—", None, crowds, _at(mid),
         lambda s: s.get("cpu_ms_per_token"), _beside)
    held = [n for n in counts if all(
        (s := _at(n)(sc)) is not None and not s["errors"] and s["ratio"] <= (1.3 if n <= 50 else 1.5)
        for _, sc in crowds)]
    cores = (r.get("app") or {}).get("cores")  # the machine's, as bench_app.py saw it
    measure = "runs at once per core that hold the crowd goals (APP_CONCURRENCY's default per core)"
    if not cores:
        out.add(measure, None, "—", f"≥ {RUNS_PER_CORE}", None)
        return
    per_core = max(held) / cores if held else 0.0
    out.add(measure, per_core, f"{per_core:.0f} ({max(held) if held else 0} visitors on {cores} cores; the default: "
            f"{RUNS_PER_CORE})", f"≥ {RUNS_PER_CORE}", lambda v: v >= RUNS_PER_CORE)


def long_rows(out: Any, r: dict) -> None:
    """Long replies (every thought 300 words longer) alone and in a crowd, and one very fast stream."""
    crowds = _crowds(r, long=True)
    _row(out, "long replies: CPU per streamed token, app + run workers, one visitor alone", "≤ 0.35 ms",
         lambda v: v <= 0.35, crowds, lambda sc: sc.get("alone"), lambda s: s.get("cpu_ms_per_token"), _beside)
    counts = sorted({int(n) for _, scale in crowds for n in scale.get("runs", {})})
    for n in counts:
        at = _at(n)
        _row(out, f"long replies: CPU per streamed token, app + run workers, {n} visitors", "≤ 0.15 ms",
             lambda v: v <= 0.15, crowds, at, lambda s: s.get("cpu_ms_per_token"), _beside)
        _row(out, f"long replies: {n} visitors vs 1, mode All (wall ratio, errors)", "≤ 1.2, 0 errors",
             lambda v: v <= 1.2, crowds, at, _errors_or("ratio"),
             lambda s: f"{_figure(s, 'ratio')} ({s['wall_s']:.1f} s), {s['errors']} errors")
        _row(out, f"long replies: last frame after the server's last token ({n} visitors, max)", "≤ 0.5 s",
             lambda v: v <= 0.5, crowds, at, lambda s: s.get("last_frame_max_s"),
             lambda s: f"max {_figure(s, 'last_frame_max_s', ' s')}, "
                       f"median {_fmt(s.get('last_frame_median_s'), ' s', 2)}")
    fast = (r.get("app_long") or {}).get("fast", {})
    if fast:
        out.add(f"one visitor, All, {fast['tokens_per_s']:,.0f} tokens/s per stream: last frame after the last token",
                fast["last_frame_max_s"] if not fast["errors"] else math.inf,
                f"{_fmt(fast['last_frame_max_s'], ' s', 2)} ({fast['tokens']} tokens, {fast['errors']} errors)",
                "≤ 0.5 s", lambda v: v <= 0.5)


def load_rows(out: Any, app: dict) -> None:
    """Memory over many sessions, and a flood of submissions with the page loading meanwhile."""
    memory = app.get("memory", {})
    if memory:
        out.add(f"app RSS growth over {memory['runs']} runs from {memory['runs']} sessions", memory["growth_mb"],
                f"{memory['growth_mb']:+.1f} MB ({memory['per_run_kb']:.0f} KB/run), {memory['errors']} errors",
                "< 50 MB", lambda v: v < 50 and not memory["errors"])
    flood = app.get("flood", {})
    if flood:
        kinds = flood["outcomes"]
        answered = kinds["finished"] + kinds["told_full"]
        out.add(f"{flood['submissions']} submissions at once: each told its place or 'full'",
                flood["first_word_max_s"] if answered == flood["submissions"] else math.inf,
                f"{kinds['finished']} ran ({kinds['told_queued']} told their place first), {kinds['told_full']} "
                f"told full, {kinds['http_503'] + kinds['other_errors']} errors; first word ≤ "
                f"{flood['first_word_max_s']:.1f} s", "no error, first word ≤ 5 s", lambda v: v <= 5)
        out.add("page load (GET / + JS + CSS) during that flood", flood["page_max_s"],
                f"max {flood['page_max_s']:.2f} s, p95 {flood['page_p95_s']:.2f} s over {flood['page_loads']} loads "
                f"(quiet: {flood['page_quiet_median_s']} s)", "< 2 s", lambda v: v < 2)


def idle_row(out: Any, idle: dict) -> None:
    """The app with nobody on the page: what its own timers and polls cost (the stand-in's CPU beside it)."""
    if idle:
        per_s = idle["cpu_ms_per_s"]
        out.add("idle app (app + run workers, nobody on the page): CPU per second", idle["app_cpu_ms_per_s"],
                f"{idle['app_cpu_ms_per_s']:.1f} ms/s over {idle['seconds']:.0f} s (stand-in {per_s['stub']:.1f} ms/s "
                "beside it)", "≤ 5 ms/s", lambda v: v <= 5)
