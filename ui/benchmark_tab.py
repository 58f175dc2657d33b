"""The Benchmark tab: run a dataset through the chosen modes, with live progress, a table, charts and files.

The run itself is :func:`agents.evaluation.iter_eval`, a *blocking* generator. It runs in a pump
thread that posts each :class:`Progress` to an asyncio queue, so the event loop never blocks and
Gradio's Stop (or a visitor leaving) can always close this handler: ``finally`` closes every model
client the run opened (which ends in-flight streams at once) and tells the pump to close
``iter_eval``, which cancels the pairs not started yet. The event has its own ``concurrency_id`` so
a long benchmark never holds up the Compare tab, and only a few benchmarks run at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from agents.comparison import OpenModels, default_model_factory
from agents.evaluation.datasets import BUILTIN_FILES, DatasetError, Item, load_dataset
from agents.evaluation.hybrids import EVAL_MODES, MODE_LABELS
from agents.evaluation.report import chart_data, summary_table, write_exports
from agents.evaluation.runner import Progress, iter_eval, order_records
from agents.llm.base import ChatModel, ModelBuilder
from agents.llm.settings import LLMSettings
from agents.modes import RunConfig
from agents.settings import DEFAULT_MAX_STEPS, DEFAULT_TEMPERATURE
from tools.registry import ToolRegistry
from ui.inputs import kind_of, lenient, number_problem, protocol_value, settings_problem
from ui.render import plain
from ui.session import Inbox, make_config
from ui.settings import app_settings

log = logging.getLogger(__name__)

UPLOAD = "upload"
DATASETS = [("HotpotQA (the paper's 200-question sample)", "hotpotqa"), ("FEVER (the paper's 200 claims)", "fever"),
            ("GSM8K (first 250 test problems)", "gsm8k"), ("Handwritten (35 mixed questions)", "handwritten"),
            ("Upload your own CSV/JSONL", UPLOAD)]
DEFAULT_MODES = ["think", "act", "react"]
MAX_CONCURRENCY, MAX_SC = 8, 21  # BENCH_MAX_N, BENCH_VISITOR_MAX_N, BENCH_CONCURRENCY: ui/settings.py
REFRESH_S, TICK_S = 0.5, 1.0  # table refresh at most every REFRESH_S; the clock ticks every TICK_S when idle
EXPORT_ROOT = Path(tempfile.gettempdir()) / "think-act-react-benchmark"
EXPORT_TTL_S = 3600.0  # Gradio copies the files into its cache when it sends them; ours can go after an hour
_END = object()


class BenchmarkError(ValueError):
    """A request that cannot run; ``str(exc)`` is the line to show."""


@dataclass(frozen=True)
class Plan:
    """A validated request: the items, modes and knobs, plus a note when N was capped."""

    items: list[Item]
    modes: list[str]
    concurrency: int
    sc_n: int
    note: str = ""


def clamp(value: Any, low: int, high: int, default: int) -> int:
    """An int within [low, high] from whatever a slider or an API client sent."""
    try:
        return min(high, max(low, int(float(value))))
    except (TypeError, ValueError, OverflowError):  # None, text, NaN, infinity
        return default


def mode_names(selected: Sequence[str] | None) -> list[str]:
    """Mode ids from ids or labels (API clients may send either), de-duplicated, in the order given."""
    by_label = {label.lower(): mode for mode, label in MODE_LABELS.items()}
    if selected is not None and not isinstance(selected, list | tuple):
        raise BenchmarkError(f"Modes must be a list of mode names (got {kind_of(selected)}).")
    names, unknown = [], []
    for raw in selected or []:
        key = str(raw).strip().lower()
        name = key if key in EVAL_MODES else by_label.get(key)
        (names if name else unknown).append(name or str(raw))
    if unknown:
        raise BenchmarkError(f"Unknown mode(s) {', '.join(unknown)}; choose from {', '.join(EVAL_MODES)}.")
    if not names:
        raise BenchmarkError("Pick at least one mode to benchmark.")
    return list(dict.fromkeys(names))


def prepare(dataset: str | None, upload: str | None, n: Any, modes: Sequence[str] | None, concurrency: Any = 4,
            sc_n: Any = 5, *, max_n: int | None = None) -> Plan:
    """Validate the form (or an API call) and load the items; every problem is a :class:`BenchmarkError`."""
    names = mode_names(modes)
    if dataset == UPLOAD or (not dataset and upload):
        if not upload:
            raise BenchmarkError("Upload a CSV or JSONL file with question and answer columns first.")
        source = str(upload)
    elif dataset in BUILTIN_FILES:
        source = str(dataset)
    else:
        raise BenchmarkError(f"Unknown dataset {dataset!r}; choose one of {', '.join(BUILTIN_FILES)} or upload a file.")
    limit = app_settings().bench_max_n
    max_n = limit if max_n is None else max_n
    wanted = clamp(n, 1, limit, 10)
    count = min(wanted, max_n)
    try:
        items = load_dataset(source, count)
    except DatasetError as exc:
        raise BenchmarkError(str(exc)) from None
    note = f" (N capped at {max_n}: sign in with Hugging Face to run up to {limit})" if wanted > max_n else ""
    return Plan(items, names, clamp(concurrency, 1, MAX_CONCURRENCY, 4), clamp(sc_n, 1, MAX_SC, 5), note)


def knobs_problem(dataset: Any, n: Any, concurrency: Any, sc_n: Any, model: Any, protocol: Any, max_steps: Any,
                  temperature: Any, tools: Any, registry: ToolRegistry | None) -> str | None:
    """One line for a ``/benchmark`` value an API client sent that no form could (1e400, a list for a name...)."""
    if dataset is not None and not isinstance(dataset, str):
        return f"The dataset must be one of {', '.join(BUILTIN_FILES)} or {UPLOAD!r} (got {kind_of(dataset)})."
    problem = (number_problem(n, "N", 1, app_settings().bench_max_n) or number_problem(concurrency, "Concurrency", 1, MAX_CONCURRENCY)
               or number_problem(sc_n, "CoT-SC samples", 1, MAX_SC))
    if problem or registry is None:
        return problem
    return settings_problem(model=model, protocol=protocol, max_steps=max_steps, temperature=temperature,
                            tools=tools, registry=registry)


def clock(seconds: float) -> str:
    """``0:42``, ``12:05``, ``1:02:03``."""
    minutes, secs = divmod(int(max(0.0, seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def progress_line(done: int, total: int, elapsed: float, errors: int = 0) -> str:
    """``12 / 30 pairs · 0:42 elapsed · ~1:03 left · 1 error`` (the estimate once a pair has finished)."""
    parts = [f"{done} / {total} pairs", f"{clock(elapsed)} elapsed"]
    if 0 < done < total:
        parts.append(f"~{clock(elapsed / done * (total - done))} left")
    if errors:
        parts.append(f"{errors} error{'s' if errors != 1 else ''}")
    return " · ".join(parts)


def table_frame(summary: dict[str, Any]) -> pd.DataFrame:
    """The per-mode table, ``–`` for a missing number (NaN would not survive JSON)."""
    headers, rows = summary_table(summary)
    return pd.DataFrame([["–" if v is None else v for v in row] for row in rows], columns=headers)


def score_plot(summary: dict[str, Any]) -> gr.BarPlot:
    """Score per mode with the paper's figure as its own bar beside it (BarPlot stacks series that share an x)."""
    df = chart_data(summary, "score")
    df["bar"] = [m if s == "this run" else f"{m} (paper)" for m, s in zip(df["mode"], df["series"], strict=True)]
    title = "Accuracy %" if summary.get("metric") == "accuracy" else "EM %"
    return gr.BarPlot(value=df, sort=list(df["bar"]), y_title=title)


def tokens_plot(summary: dict[str, Any]) -> gr.BarPlot:
    df = chart_data(summary, "tokens")
    return gr.BarPlot(value=df, sort=list(df["mode"]))


def export_dir() -> str:
    """A fresh folder per run; folders older than an hour are removed first (a Space's disk is small)."""
    EXPORT_ROOT.mkdir(parents=True, exist_ok=True)
    cutoff = time.time() - EXPORT_TTL_S
    for child in EXPORT_ROOT.iterdir():
        with contextlib.suppress(OSError):
            if child.is_dir() and child.stat().st_mtime < cutoff:
                shutil.rmtree(child, ignore_errors=True)
    return tempfile.mkdtemp(prefix="run-", dir=EXPORT_ROOT)


async def benchmark_frames(plan: Plan, settings: LLMSettings, registry: ToolRegistry, config: RunConfig, *,
                           model_factory: ModelBuilder | None = None, refresh_s: float = REFRESH_S,
                           ) -> AsyncIterator[tuple]:
    """Yield (progress line, table, score chart, tokens chart, files) while the run goes; charts and files at the end."""
    make = default_model_factory(settings) if model_factory is None else (lambda: model_factory(settings))
    stop = threading.Event()
    opened = OpenModels(stop)  # every client this run made, so Stop can close them all (one made later closes at once)

    def factory() -> ChatModel:
        model = make()
        opened.add(model)
        return model

    inbox = Inbox(asyncio.get_running_loop())
    events = iter_eval(plan.items, plan.modes, model_factory=factory, registry=registry, config=config,
                       concurrency=plan.concurrency, sc_n=plan.sc_n)

    def pump() -> None:
        try:
            for progress in events:
                inbox.put(progress)
                if stop.is_set():
                    break
        except Exception as exc:  # shown in the progress line
            log.exception("benchmark run failed")
            inbox.put(exc)
        finally:
            events.close()  # cancels the pairs not started and joins the workers
            inbox.put(_END)

    started, skip = time.monotonic(), gr.skip()
    last: Progress | None = None
    failure: Exception | None = None
    threading.Thread(target=pump, name="bench-pump", daemon=True).start()
    try:
        shown, dirty, ended = 0.0, False, False
        while not ended:
            wait = max(0.0, shown + refresh_s - time.monotonic()) if dirty else TICK_S
            items = await inbox.drain(wait)  # [] when nothing came: time to tick the clock
            for item in items:
                if item is _END:
                    ended = True
                elif isinstance(item, Exception):
                    failure = item
                elif isinstance(item, Progress):
                    last, dirty = item, True
            if not ended and last is not None and (not items or time.monotonic() - shown >= refresh_s):
                errors = sum(1 for r in last.records if r.get("error"))
                line = f"● {progress_line(last.done, last.total, time.monotonic() - started, errors)}{plan.note}"
                yield line, table_frame(last.summary()), skip, skip, skip
                shown, dirty = time.monotonic(), False
    finally:
        stop.set()
        opened.close_all()  # ends in-flight streams now, so the pump soon sees ``stop`` and closes iter_eval
    if last is None:
        yield f"⚠ The run failed: {plain(settings.redact(str(failure)))}", skip, skip, skip, skip
        return
    summary = last.summary()
    summary["wall_s"] = round(time.monotonic() - started, 3)
    summary["run"] = {"model": settings.model, "protocol": config.protocol, "max_steps": config.max_steps,
                      "temperature": config.temperature, "tools": registry.names, "sc_n": plan.sc_n,
                      "concurrency": plan.concurrency}  # never the token or the server address
    records = order_records(last.records, plan.items, plan.modes)
    files = [str(p) for p in write_exports(export_dir(), summary, records).values()]
    line = progress_line(last.done, last.total, time.monotonic() - started,
                         sum(1 for r in records if r.get("error")))
    errors = [r["error"] for r in records if r.get("error")]
    if failure is not None:
        status = f"⚠ Stopped by an error ({plain(settings.redact(str(failure)))}): {line}"
    elif records and len(errors) == len(records):  # never "✔ Done" when nothing worked
        status = f"⚠ The run failed: every pair ended in an error (first: {plain(settings.redact(str(errors[0])))[:300]}): {line}"
    else:
        status = f"✔ Done: {line}"
    yield status + plan.note, table_frame(summary), score_plot(summary), tokens_plot(summary), files


def build_benchmark_tab(settings: LLMSettings, registry: ToolRegistry, *, model_factory: ModelBuilder | None = None,
                        model: gr.Component | None = None, protocol: gr.Component | None = None,
                        max_steps: gr.Component | None = None, temperature: gr.Component | None = None,
                        tools: gr.Component | None = None, on_space: bool = False,
                        refresh_s: float = REFRESH_S) -> dict[str, Any]:
    """Lay out the tab inside the current ``gr.Tab`` and wire ``/benchmark``; returns its components and
    ``"event"`` (and ``"handler"``, for tests). The Settings accordion's components (when given) are inputs too, so a benchmark uses the
    same model, protocol and tools as Compare (absent ones become ``gr.State`` defaults, hidden from the API)."""
    limits = app_settings()
    with gr.Row():
        dataset = gr.Dropdown(DATASETS, value="hotpotqa", label="Dataset", scale=2)
        n = lenient(gr.Slider(1, limits.bench_max_n, value=10, step=1, label="N (items)", scale=2,
                              info=f"Up to {limits.bench_visitor_max_n} unless signed in" if on_space else None))
        concurrency = lenient(gr.Slider(1, MAX_CONCURRENCY, value=4, step=1, label="Concurrency (pairs at once)",
                                        scale=1))
        sc_n = lenient(gr.Slider(1, MAX_SC, value=5, step=1, label="CoT-SC samples", scale=1, info="The paper uses 21"))
    upload = gr.File(label="Your dataset (question and answer columns; optional id, aliases, category, scorer)",
                     file_types=[".csv", ".jsonl", ".json"], type="filepath", visible=False)
    with gr.Row(equal_height=True):
        modes = gr.CheckboxGroup([(MODE_LABELS[m], m) for m in EVAL_MODES], value=DEFAULT_MODES, label="Modes", scale=5)
        run = gr.Button("▶ Run benchmark", variant="primary", scale=0, min_width=150)
        stop = gr.Button("■ Stop", variant="stop", scale=0, min_width=90)
    progress = gr.Markdown("", elem_id="bench-progress")
    table = gr.Dataframe(label="Results per mode (live)", interactive=False, wrap=True)
    with gr.Row():
        score_chart = gr.BarPlot(x="bar", y="value", color="series", label="Score per mode", x_title="Mode",
                                 color_title="", y_lim=[0, 100])
        tokens_chart = gr.BarPlot(x="mode", y="value", color="series", label="Mean tokens per pair", x_title="Mode",
                                  y_title="Tokens", color_title="")
    files = gr.File(label="Download (summary.json, summary.csv, results.csv)", file_count="multiple", interactive=False)
    dataset.change(lambda d: gr.File(visible=d == UPLOAD), dataset, upload, api_visibility="private",
                   show_progress="hidden", queue=False)
    defaults = {"model": settings.model, "protocol": "text", "max_steps": DEFAULT_MAX_STEPS,
                "temperature": DEFAULT_TEMPERATURE, "tools": None}
    given = {"model": model, "protocol": protocol, "max_steps": max_steps, "temperature": temperature, "tools": tools}
    extra = [c if c is not None else gr.State(defaults[k]) for k, c in given.items()]  # keeps the positions

    async def benchmark(dataset: str, upload: str | None = None, n: float = 10, modes: list[str] | None = None,
                        concurrency: float = 4, sc_n: float = 5, model: str | None = None, protocol: str = "text",
                        max_steps: float = DEFAULT_MAX_STEPS, temperature: float = DEFAULT_TEMPERATURE,
                        tools: list[str] | None = None,
                        oauth_token: gr.OAuthToken | None = None):
        """Run N items of a dataset through the chosen modes; streams progress and the table, then charts and files."""
        run_settings = settings.with_overrides(model=model if isinstance(model, str) else None,
                                               token=oauth_token.token if oauth_token else None)
        skip = gr.skip()
        try:
            if problem := knobs_problem(dataset, n, concurrency, sc_n, model, protocol, max_steps, temperature, tools,
                                        registry):
                raise BenchmarkError(problem)
            if problem := run_settings.problem():
                raise BenchmarkError(problem)
            cap = limits.bench_visitor_max_n if on_space and oauth_token is None else limits.bench_max_n
            plan = await asyncio.to_thread(prepare, dataset, upload, n, DEFAULT_MODES if modes is None else modes,
                                           concurrency, sc_n, max_n=cap)  # reading a file must not block the loop
        except BenchmarkError as exc:
            yield f"⚠ {plain(str(exc))}", skip, skip, skip, skip
            return
        enabled = registry.subset(tools if tools is not None else registry.names)
        config = make_config(protocol_value(protocol), max_steps, temperature)
        async for frame in benchmark_frames(plan, run_settings, enabled, config, model_factory=model_factory,
                                            refresh_s=refresh_s):
            yield frame

    event = run.click(benchmark, inputs=[dataset, upload, n, modes, concurrency, sc_n, *extra],
                      outputs=[progress, table, score_chart, tokens_chart, files], api_name="benchmark",
                      concurrency_limit=limits.bench_concurrency, concurrency_id="benchmark", show_progress="hidden",
                      trigger_mode="once")

    async def stopped(line: str) -> str:
        await asyncio.sleep(0.2)  # let the cancelled run's last update land first
        line = re.sub(r" · ~[\d:]+ left", "", line or "")
        return f"■ Stopped at {line.lstrip('● ')}" if line.startswith("●") else line

    stop.click(fn=None, cancels=[event]).then(stopped, inputs=progress, outputs=progress, api_visibility="private",
                                               show_progress="hidden")
    return {"dataset": dataset, "upload": upload, "n": n, "modes": modes, "concurrency": concurrency, "sc_n": sc_n,
            "run": run, "stop": stop, "progress": progress, "table": table, "score_chart": score_chart,
            "tokens_chart": tokens_chart, "files": files, "event": event, "handler": benchmark}
