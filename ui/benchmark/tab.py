"""The Benchmark tab: a dataset through the chosen modes, k tries each, with live progress, tables, charts, files.

The run itself is an :class:`agents.evaluation.runner.EvalRun`, streamed by the same adapter as a
Compare run (``ui/core/stream.py``): polled from the event loop, closed from any thread. Stop (or a visitor
leaving) closes it: the pairs not started are cancelled and every open model client is closed, which
ends in-flight streams at once; the pairs already finished are kept and shown. The event has its own
``concurrency_id`` so a long benchmark never holds up the Compare tab, and only a few benchmarks run at a time.
"""

import asyncio
import contextlib
import re
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from agents.comparison import default_model_factory
from agents.evaluation import grounded
from agents.evaluation.datasets import BUILTIN_FILES, DatasetError, Item, load_dataset
from agents.evaluation.report import reliability_table, summary_table, write_exports
from agents.evaluation.runner import EvalRun, Progress, order_records
from agents.llm.base import ModelBuilder
from agents.llm.settings import LLMSettings
from agents.modes import RunConfig
from agents.modes.reflexion import DEFAULT_TRIALS, TRIALS
from agents.modes.registry import list_modes, mode_ids, protocol_problem
from agents.settings import DEFAULT_MAX_STEPS, DEFAULT_TEMPERATURE
from tools.page_tools import PageToolError, page_tools_of, with_page_tools
from tools.registry import ToolRegistry
from ui.benchmark import charts, reliability
from ui.benchmark.layout import DEFAULT_MODES, MAX_CONCURRENCY, MAX_SC, UPLOAD, layout
from ui.benchmark.open_in_compare import BenchFolder, RunFolders
from ui.benchmark.progress import clock, progress_line  # noqa: F401 - clock: also read as tab.clock
from ui.core.admission import OverQuota, RunQuota
from ui.core.handlers import PAGE_EVENT
from ui.core.inputs import (
    kind_of,
    make_config,
    number_problem,
    protocol_value,
    settings_problem,
)
from ui.core.render import plain
from ui.core.settings import app_settings
from ui.core.stream import Outcome, Stops, StopSignal, session_of, stream
from ui.core.visitors import visitor

_NO_ESTIMATE = re.compile(r" · ~[\d:]+ left")
TAB = "benchmark"  # the tab's Stop key in :class:`~ui.core.stream.Stops`
REFRESH_S = 0.5  # table refresh at most every REFRESH_S (the clock ticks every stream.TICK_S when idle)
EXPORT_ROOT = Path(tempfile.gettempdir()) / "think-act-react-benchmark"
EXPORT_TTL_S = 3600.0  # Gradio copies the files into its cache when it sends them; ours can go after an hour


class BenchmarkError(ValueError):
    """A request that cannot run; ``str(exc)`` is the line to show."""


@dataclass(frozen=True)
class Plan:
    """A validated request: the items, modes and knobs (``k`` tries per item), plus a note when N was capped."""

    items: list[Item]
    modes: list[str]
    concurrency: int
    sc_n: int
    note: str = ""
    k: int = 1
    trials: int = DEFAULT_TRIALS  # Reflexion's


def clamp(value: Any, low: int, high: int, default: int) -> int:
    """An int within [low, high] from whatever a slider or an API client sent."""
    try:
        return min(high, max(low, int(float(value))))
    except (TypeError, ValueError, OverflowError):  # None, text, NaN, infinity
        return default


def mode_names(selected: Sequence[str] | None) -> list[str]:
    """Mode ids from ids or labels (API clients may send either), de-duplicated, in the order given."""
    known = mode_ids()
    by_label = {s.table_title.lower(): s.id for s in list_modes()}
    if selected is not None and not isinstance(selected, list | tuple):
        raise BenchmarkError(f"Modes must be a list of mode names (got {kind_of(selected)}).")
    names, unknown = [], []
    for raw in selected or []:
        key = str(raw).strip().lower()
        name = key if key in known else by_label.get(key)
        (names if name else unknown).append(name or str(raw))
    if unknown:
        raise BenchmarkError(f"Unknown mode(s) {', '.join(unknown)}; choose from {', '.join(known)}.")
    if not names:
        raise BenchmarkError("Pick at least one mode to benchmark.")
    return list(dict.fromkeys(names))


def prepare(dataset: str | None, upload: str | None, n: Any, modes: Sequence[str] | None, concurrency: Any = 4,
            sc_n: Any = 5, *, max_n: int | None = None, k: int = 1) -> Plan:
    """Validate the form (or an API call) and load the items; every problem is a :class:`BenchmarkError`.
    N is capped at ``max_n``; the items × ``k`` tries beyond it are refused (before any model call)."""
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
    sign_in = f"sign in with Hugging Face to run up to {limit}" if max_n < limit else "BENCH_MAX_N"
    note = f" (N capped at {max_n}: {sign_in})" if wanted > max_n else ""
    if len(items) * k > max_n:
        raise BenchmarkError(f"N × k = {len(items)} × {k} = {len(items) * k} tries of each mode, over this app's "
                             f"limit of {max_n} ({sign_in}): lower N or k.")
    return Plan(items, names, clamp(concurrency, 1, MAX_CONCURRENCY, 4), clamp(sc_n, 1, MAX_SC, 5), note, k)


@dataclass(frozen=True)
class Asked:
    """A ``/benchmark`` request's values as sent: a form's, or an API client's (anything at all)."""

    dataset: Any
    n: Any
    concurrency: Any
    sc_n: Any
    model: Any
    protocol: Any
    max_steps: Any
    temperature: Any
    tools: Any


def asked_problem(asked: Asked, registry: ToolRegistry | None) -> str | None:
    """One line for a ``/benchmark`` value an API client sent that no form could (1e400, a list for a name...)."""
    if asked.dataset is not None and not isinstance(asked.dataset, str):
        return f"The dataset must be one of {', '.join(BUILTIN_FILES)} or {UPLOAD!r} (got {kind_of(asked.dataset)})."
    problem = (number_problem(asked.n, "N", 1, app_settings().bench_max_n)
               or number_problem(asked.concurrency, "Concurrency", 1, MAX_CONCURRENCY)
               or number_problem(asked.sc_n, "CoT-SC samples", 1, MAX_SC))
    if problem or registry is None:
        return problem
    return settings_problem(model=asked.model, protocol=asked.protocol, max_steps=asked.max_steps,
                            temperature=asked.temperature, tools=asked.tools, registry=registry)


def table_frame(summary: dict[str, Any], table: Any = summary_table) -> pd.DataFrame:
    """A per-mode table (``table``: the main one, or :func:`reliability_table`), ``–`` for a missing number (NaN
    would not survive JSON)."""
    headers, rows = table(summary)
    return pd.DataFrame([["–" if v is None else v for v in row] for row in rows], columns=headers)


def grounding_frame(summary: dict[str, Any]) -> pd.DataFrame:
    """The grounding shares per mode beside the paper's (``agents/evaluation/grounded.py``), ``–`` where none."""
    headers, rows = grounded.grounding_table(summary)
    return pd.DataFrame([["–" if v is None else v for v in row] for row in rows], columns=headers)


def export_dir() -> str:
    """A fresh folder per run; folders older than an hour are removed first (a Space's disk is small)."""
    EXPORT_ROOT.mkdir(parents=True, exist_ok=True)
    cutoff = time.time() - EXPORT_TTL_S
    for child in EXPORT_ROOT.iterdir():
        with contextlib.suppress(OSError):
            if child.is_dir() and child.stat().st_mtime < cutoff:
                shutil.rmtree(child, ignore_errors=True)
    return tempfile.mkdtemp(prefix="run-", dir=EXPORT_ROOT)


class BenchView:
    """A benchmark's picture for the stream adapter: :class:`Progress` in; (progress line, table,
    score chart, tokens chart, files, grounding table, reliability table) out — charts, files, grounding at the end."""

    def __init__(self, plan: Plan, settings: LLMSettings, registry: ToolRegistry, config: RunConfig) -> None:
        self.plan, self.settings, self.registry, self.config = plan, settings, registry, config
        self.started = time.monotonic()
        self.last: Progress | None = None

    def add(self, progress: Progress) -> bool:
        self.last = progress
        return False  # a table is not urgent: it refreshes at most every refresh_s

    def line(self, records: list[dict[str, Any]]) -> str:
        """``3 / 6 pairs · 0:04 elapsed · ~0:04 left · 1 error``."""
        assert self.last is not None
        errors = sum(1 for r in records if r.get("error"))
        return progress_line(self.last.done, self.last.total, time.monotonic() - self.started, errors)

    def running(self) -> tuple | None:
        if self.last is None:
            return None
        skip, summary = gr.skip(), self.last.summary()
        return (f"● {self.line(self.last.records)}{self.plan.note}", table_frame(summary), skip, skip, skip, skip,
                table_frame(summary, reliability_table))

    async def end(self, outcome: Outcome) -> tuple:
        """The summary, charts and files of every finished pair, whether the run ended, stopped or failed."""
        skip, redact = gr.skip(), self.settings.redact
        if self.last is None:
            failed = f"⚠ The run failed: {plain(redact(str(outcome.failure)))}"
            line = "■ Stopped before it started." if outcome.stopped else failed
            return line, skip, skip, skip, skip, skip, skip
        summary = self.last.summary()
        summary["wall_s"] = round(time.monotonic() - self.started, 3)
        summary["run"] = {"model": self.settings.model, "protocol": self.config.protocol,
                          "max_steps": self.config.max_steps, "temperature": self.config.temperature,
                          "tools": self.registry.names, "sc_n": self.plan.sc_n, "k": self.plan.k,
                          "concurrency": self.plan.concurrency}  # never the token or the server address
        records = order_records(self.last.records, self.plan.items, self.plan.modes)
        files = await asyncio.to_thread(write_files, summary, records)
        line = self.line(records)
        errors = [r["error"] for r in records if r.get("error")]
        if outcome.stopped:
            status = "■ Stopped at " + _NO_ESTIMATE.sub("", line)  # no time left to estimate for a run that is over
        elif outcome.failure is not None:
            status = f"⚠ Stopped by an error ({plain(redact(str(outcome.failure)))}): {line}"
        elif records and len(errors) == len(records):  # never "✔ Done" when nothing worked
            first = plain(redact(str(errors[0])))[:300]
            status = f"⚠ The run failed: every pair ended in an error (first: {first}): {line}"
        else:
            status = f"✔ Done: {line}"
        return (status + self.plan.note, table_frame(summary), charts.score_chart(summary),
                charts.tokens_chart(summary), files, grounding_frame(summary), table_frame(summary, reliability_table))


def write_files(summary: dict[str, Any], records: list[dict[str, Any]]) -> list[str]:
    """summary.json, summary.csv and results.csv in a fresh folder (off the event loop)."""
    return [str(p) for p in write_exports(export_dir(), summary, records).values()]


def benchmark_frames(plan: Plan, settings: LLMSettings, registry: ToolRegistry, config: RunConfig, *,
                     model_factory: ModelBuilder | None = None, refresh_s: float = REFRESH_S,
                     stop: StopSignal | None = None, out_dir: str | None = None) -> AsyncIterator[tuple]:
    """Yield (progress line, table, score chart, tokens chart, files, grounding, reliability) while the run goes;
    charts, files and grounding at the end. ``out_dir`` keeps each pair's record and trace (for Open in Compare)."""
    make = default_model_factory(settings) if model_factory is None else (lambda: model_factory(settings))
    run = EvalRun(plan.items, plan.modes, model_factory=make, registry=registry, config=config,
                  concurrency=plan.concurrency, sc_n=plan.sc_n, out_dir=out_dir, trials=plan.trials, k=plan.k)
    return stream(run, BenchView(plan, settings, registry, config), stop=stop, throttle=refresh_s)


class BenchmarkTab:
    """The ``/benchmark`` handler and the tab's Stop, bound to one app's backend."""

    def __init__(self, settings: LLMSettings, registry: ToolRegistry | None, *, stops: Stops,
                 model_factory: ModelBuilder | None = None, on_space: bool = False,
                 refresh_s: float = REFRESH_S, folders: RunFolders | None = None, runs: RunQuota | None = None) -> None:
        self.settings, self.registry, self.stops = settings, registry, stops
        self.runs = runs  # a benchmark is one of its visitor's live runs (ui/core/admission.RunQuota)
        self.folders = folders or RunFolders()  # each visitor's latest run folder (ui/benchmark/open_in_compare.py)
        self.model_factory, self.on_space, self.refresh_s = model_factory, on_space, refresh_s

    async def benchmark(self, dataset: str, upload: str | None = None, n: float = 10, modes: list[str] | None = None,
                        concurrency: float = 4, sc_n: float = 5, model: str | None = None, protocol: str = "text",
                        max_steps: float = DEFAULT_MAX_STEPS, temperature: float = DEFAULT_TEMPERATURE,
                        tools: list[str] | None = None, trials: float | None = None, k: float | None = None,
                        page_tools: Any = None, oauth_token: gr.OAuthToken | None = None,
                        request: gr.Request | None = None):
        """Run N items of a dataset through the chosen modes, ``k`` tries each (default 1); streams progress and
        the tables, then charts and files. ``page_tools``: the visitor's tools written on the page (Settings' Add a
        tool), usable like the app's."""
        llm_settings = self.settings.with_overrides(model=model if isinstance(model, str) else None,
                                                    token=oauth_token.token if oauth_token else None)
        skip, registry = gr.skip(), self.registry
        try:
            if registry is not None:  # the visitor's tools written on the page, after the app's
                registry = with_page_tools(registry, page_tools_of(page_tools, registry.names))
            asked = Asked(dataset, n, concurrency, sc_n, model, protocol, max_steps, temperature, tools)
            if problem := asked_problem(asked, registry) or (TRIALS.problem(trials) if trials is not None else None) \
                    or reliability.k_problem(k):
                raise BenchmarkError(problem)
            if problem := llm_settings.problem():
                raise BenchmarkError(problem)
            limits = app_settings()
            cap = limits.bench_visitor_max_n if self.on_space and oauth_token is None else limits.bench_max_n
            plan = await asyncio.to_thread(prepare, dataset, upload, n, DEFAULT_MODES if modes is None else modes,
                                           concurrency, sc_n, max_n=cap, k=reliability.tries(k))  # off the loop
            if problem := protocol_problem(plan.modes, protocol_value(protocol) or "text"):
                raise BenchmarkError(problem)
        except (BenchmarkError, PageToolError) as exc:
            yield f"⚠ {plain(str(exc))}", skip, skip, skip, skip, skip, skip
            return
        assert registry is not None  # knobs_problem refuses no request without one; prepare needs none
        enabled = registry.subset(tools if tools is not None else registry.names)
        config = make_config(protocol_value(protocol) or "text", max_steps, temperature)
        try:  # one of the visitor's live runs for as long as it streams
            release = self.runs.take(visitor(request)) if self.runs is not None else (lambda: None)
        except OverQuota as exc:
            yield f"⚠ {plain(str(exc))}", skip, skip, skip, skip, skip, skip
            return
        try:
            async for frame in self._frames(plan, llm_settings, enabled, config, trials, request):
                yield frame
        finally:
            release()

    async def _frames(self, plan: Plan, llm_settings: LLMSettings, enabled: ToolRegistry, config: RunConfig,
                      trials: float | None, request: gr.Request | None) -> AsyncIterator[tuple]:
        """The checked benchmark's frames, its folder remembered for Open in Compare."""
        out_dir = await asyncio.to_thread(export_dir)  # the pairs' traces, so an item opens in Compare
        self.folders.remember(session_of(request), BenchFolder.ran(Path(out_dir), tuple(i.id for i in plan.items),
                                                                   llm_settings.model, enabled, config))
        with self.stops.signal(session_of(request), TAB) as stop:
            plan = replace(plan, trials=DEFAULT_TRIALS if trials is None else TRIALS.whole(trials))
            async for frame in benchmark_frames(plan, llm_settings, enabled, config, model_factory=self.model_factory,
                                                refresh_s=self.refresh_s, stop=stop, out_dir=out_dir):
                yield frame

    async def stop(self, request: gr.Request | None = None) -> None:
        """The tab's Stop: ends this visitor's benchmark, which shows what finished (pairs done are saved)."""
        self.stops.stop(session_of(request), TAB)


@dataclass(frozen=True)
class Shared:
    """The Settings accordion's components a benchmark reads as Compare does; absent ones become ``gr.State``
    defaults, hidden from the API. ``page_tools``: the visitor's tools written on the page."""

    model: gr.Component | None = None
    protocol: gr.Component | None = None
    max_steps: gr.Component | None = None
    temperature: gr.Component | None = None
    tools: gr.Component | None = None
    trials: gr.Component | None = None
    page_tools: gr.State | None = None


def build_benchmark_tab(settings: LLMSettings, registry: ToolRegistry, shared: Shared | None = None, *,
                        model_factory: ModelBuilder | None = None, on_space: bool = False,
                        refresh_s: float = REFRESH_S, stops: Stops | None = None,
                        runs: RunQuota | None = None) -> dict[str, Any]:
    """Lay out the tab inside the current ``gr.Tab`` and wire ``/benchmark``; returns its components and
    ``"event"`` (and ``"handler"``, for tests). The Settings accordion's components (when given) are inputs too,
    so a benchmark uses the same model, protocol and tools as Compare (absent ones become ``gr.State`` defaults,
    hidden from the API)."""
    parts = layout(on_space, toy=settings.toy)
    parts["dataset"].change(lambda d: gr.File(visible=d == UPLOAD), parts["dataset"], parts["upload"],
                            **PAGE_EVENT)
    defaults = {"model": settings.model, "protocol": "text", "max_steps": DEFAULT_MAX_STEPS,
                "temperature": DEFAULT_TEMPERATURE, "tools": None, "trials": DEFAULT_TRIALS}
    shared = shared or Shared()
    given = {f.name: getattr(shared, f.name) for f in fields(shared) if f.name != "page_tools"}
    extra = [c if c is not None else gr.State(defaults[k]) for k, c in given.items()]  # keeps the positions
    extra += [parts["k"], *([shared.page_tools] if shared.page_tools is not None else [])]  # the visitor's: last
    tab = BenchmarkTab(settings, registry, stops=stops if stops is not None else Stops(), model_factory=model_factory,
                       on_space=on_space, refresh_s=refresh_s, runs=runs)
    inputs = [parts[k] for k in ("dataset", "upload", "n", "modes", "concurrency", "sc_n")]
    outputs = [parts[k] for k in ("progress", "table", "score_chart", "tokens_chart", "files", "grounding",
                                  "reliability")]
    event = parts["run"].click(tab.benchmark, inputs=[*inputs, *extra], outputs=outputs,
                               api_name="benchmark", concurrency_limit=app_settings().bench_concurrency,
                               concurrency_id="benchmark",
                               show_progress="hidden", trigger_mode="once")
    # Stop ends this visitor's benchmark, which renders its own stopped frame (see ui/core/stream.py)
    parts["stop"].click(tab.stop, **PAGE_EVENT)
    reliability.wire_runs_line(parts, on_space)
    return {**parts, "event": event, "handler": tab.benchmark, "folders": tab.folders}
