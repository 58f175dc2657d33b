"""A crowd of visitors, measured: what each saw against the stand-in's own times, and the CPU it cost.

Used by bench_app.py and bench_stages.py. Times are ``perf_counter`` (CLOCK_MONOTONIC on Linux), shared by the
visitors', the app's and the stand-in's processes, so a visitor's first text can be set against the stand-in's
first token. :func:`summary` folds repeated crowds into one figure each (the median run) and the spread.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

from agents.prompts import system_prompt
from bench.loadkit import MODES, Visit, pct, visit
from tools.calculator import calculate
from tools.registry import ToolRegistry


def question(i: int) -> str:
    return f"What is 17 * 23 + {i}?"


def crowd(url: str, questions: list[str], *, stagger: float = 0.0, timeout: float = 180.0) -> tuple[float, list[Visit]]:
    """All visitors submit at the same instant (or spread over ``stagger`` s); wall = start → last result."""
    visits: list[Visit | None] = [None] * len(questions)
    barrier = threading.Barrier(len(questions) + 1)

    def one(k: int) -> None:
        barrier.wait()
        if stagger:
            time.sleep(stagger * k / len(questions))
        visits[k] = visit(url, questions[k], timeout=timeout)

    threads = [threading.Thread(target=one, args=(k,), daemon=True) for k in range(len(questions))]
    for t in threads:
        t.start()
    start = time.perf_counter()
    barrier.wait()
    for t in threads:
        t.join(timeout + 10)
    done = [v for v in visits if v is not None]
    return max((v.end or start) for v in done) - start, done


def system_prompts() -> dict[str, str]:
    """Each mode's system prompt as the app sends it (the bench's registry: the calculator only)."""
    registry = ToolRegistry([calculate])
    return {system_prompt(m, registry, max_steps=5): m for m in MODES}


def request_times(requests: list[dict]) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (question, mode): the stub's first token and the end of its last reply for that visitor's mode.
    Comparable with the visitors' clocks: ``perf_counter`` is CLOCK_MONOTONIC on Linux, shared by the processes."""
    times: dict[tuple[str, str], tuple[float, float]] = {}
    prompts = system_prompts()
    for r in requests:
        messages = r["body"].get("messages") or [{}]
        user = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
        mode = prompts.get(str(messages[0].get("content") or ""))
        if r["first_byte"] is None or mode is None:
            continue
        key = (user.removeprefix("Question: ").strip(), mode)
        first, last = times.get(key, (r["first_byte"], r["finished"] or r["first_byte"]))
        times[key] = (min(first, r["first_byte"]), max(last, r["finished"] or r["first_byte"]))
    return times


def first_text_delays(visits: list[Visit], requests: list[dict]) -> list[float]:
    """Per visitor × mode: the visitor's first text of that panel − the stub's first token of that mode."""
    times = request_times(requests)
    delays = []
    for v in visits:
        for mode, seen in v.first_text.items():
            if (v.question, mode) in times:
                delays.append(seen - times[(v.question, mode)][0])
    return delays


def last_frame_lags(visits: list[Visit], requests: list[dict]) -> list[float]:
    """Per visitor: its last frame (the run's end on its screen) − the end of the stub's last reply to it."""
    times = request_times(requests)
    lags = []
    for v in visits:
        ends = [times[(v.question, mode)][1] for mode in MODES if (v.question, mode) in times]
        if ends and v.end is not None and not v.error:
            lags.append(v.end - max(ends))
    return lags


def errors_of(visits: list[Visit]) -> list[str]:
    out = [v.error for v in visits if v.error]
    out += [f"no final answer in {[m for m, a in zip(MODES, v.answers, strict=True) if not a]}: {v.status[:120]}"
            for v in visits if not v.error and not all(v.answers)]
    return out


def measured_crowd(stack: Any, n: int, *, stagger: float = 0.0, base: int = 0) -> dict:
    """``n`` visitors at once (fresh questions from ``base``), measured: wall, errors, when each run started and
    showed its first text, the last frame against the stand-in's own times, and the CPU of every process (the app
    and its run workers, the stand-in, the visitors: all share the cores) per streamed token."""
    stack.ask_stub("clear")
    cpu0 = stack.cpu()
    wall, visits = crowd(stack.url, [question(base + 1000 * n + k) for k in range(n)], stagger=stagger)
    cpu = {k: v - cpu0[k] for k, v in stack.cpu().items()}
    dump = stack.ask_stub("dump")
    delays = first_text_delays(visits, dump["requests"])
    lags = last_frame_lags(visits, dump["requests"])
    errors = errors_of(visits)
    tokens = max(1, dump["chunks"])
    # "start": the first frame a visitor gets (panel text or a queue place) after the click
    starts = [v.first_update - v.start for v in visits if v.first_update is not None]
    panels = [seen - v.start for v in visits for seen in v.first_text.values()]
    return {
        "wall_s": round(wall, 2), "errors": len(errors), "error_samples": errors[:3],
        "llm_requests": len(dump["requests"]), "tokens": dump["chunks"],
        # None when no first text could be matched to its request (then the row has no verdict)
        "first_text_max_ms": round(max(delays) * 1000) if delays else None,
        "first_text_p95_ms": round(pct(delays, 0.95) * 1000) if delays else None,
        "first_text_median_ms": round(statistics.median(delays) * 1000) if delays else None,
        "first_text_samples": len(delays), "cpu_s": {k: round(v, 2) for k, v in cpu.items()},
        "start_max_s": round(max(starts), 3) if starts else None,
        "start_median_s": round(statistics.median(starts), 3) if starts else None,
        # the slowest panel's first text after its visitor's click
        "first_panel_max_s": round(max(panels), 3) if panels else None,
        "app_cpu_ms_per_token": round(cpu["app"] * 1000 / tokens, 3),
        "worker_cpu_ms_per_token": round(cpu["workers"] * 1000 / tokens, 3),
        "cpu_ms_per_token": round((cpu["app"] + cpu["workers"]) * 1000 / tokens, 3),
        "stub_cpu_ms_per_token": round(cpu["stub"] * 1000 / tokens, 3),
        "visitors_cpu_ms_per_token": round(cpu["visitors"] * 1000 / tokens, 3),
        # the visitor's last frame after the stand-in's last token to it (the run's end reaching the screen)
        "last_frame_max_s": round(max(lags), 2) if lags else None,
        "last_frame_median_s": round(statistics.median(lags), 2) if lags else None,
        "updates_median": statistics.median(v.updates for v in visits),
    }


SPREAD_KEYS = ("wall_s", "ratio", "cpu_ms_per_token", "first_text_max_ms", "start_max_s", "first_panel_max_s",
               "beyond_alone_s", "last_frame_max_s")


def summary(runs: list[dict], by: str) -> dict:
    """Repeated crowds as one: each figure the median of its rounds (the middle one of three), under ``spread``
    its [lowest, highest], with ``repeats``; what is not a figure (samples, counts) from the median round by
    ``by``."""
    ordered = sorted(runs, key=lambda r: (r.get(by) is None, r.get(by) or 0))
    out = dict(ordered[(len(ordered) - 1) // 2])
    for key, value in out.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            values = [r[key] for r in runs if isinstance(r.get(key), int | float)]
            out[key] = round(statistics.median(values), 3)
        elif isinstance(value, dict) and all(isinstance(v, float) for v in value.values()):  # cpu_s
            out[key] = {k: round(statistics.median(r[key][k] for r in runs), 2) for k in value}
    out["repeats"] = len(runs)
    out["spread"] = {key: [min(values), max(values)] for key in SPREAD_KEYS
                     if (values := [r[key] for r in runs if r.get(key) is not None])}
    out["error_samples"] = [e for r in runs for e in r["error_samples"]][:3]
    out["errors"] = sum(r["errors"] for r in runs)
    return out
