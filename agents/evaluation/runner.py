"""Run questions × modes (× k tries) concurrently, score each pair as it finishes, and keep every result.

Pairs run on a thread pool bounded by ``concurrency``; each pair gets a fresh model from the
factory (closed when it ends), so a slow or failing pair costs only itself. With ``k`` > 1 each
(item, mode) pair runs k times, each try a pair of its own (its record's ``try``), for pass^k. A finished pair
is scored and appended to the store by the worker that ran it, before anyone is told, so an
interruption (Ctrl-C, the app's Stop, a progress callback that raises) loses nothing
finished; a rerun on the same folder skips the pairs already there.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agents.comparison import ModelFactory, OpenModels, run_one, validate_question
from agents.evaluation.datasets import Item
from agents.evaluation.grounded import record_claims
from agents.evaluation.report import summarise
from agents.evaluation.scoring import score, vote_key
from agents.evaluation.store import Key, ResultStore, key_of
from agents.events import LLMError
from agents.modes import RunConfig
from agents.modes.hybrids import DEFAULT_SC_SAMPLES
from agents.modes.reflexion import DEFAULT_TRIALS
from agents.modes.registry import mode_ids
from agents.trace import Trace
from tools.registry import ToolRegistry

_END = object()  # EvalRun: no more progress will come
MAX_K = 10  # tries per item at most (τ-bench reports up to pass^8)


@dataclass(frozen=True)
class Progress:
    """Where a run stands: ``done`` of ``total`` pairs (``resumed`` of them from an earlier run; each try counts).

    ``record`` is the pair that just finished (None for the first event, sent before any work);
    ``records`` are all finished pairs of this run so far (a snapshot), resumed ones included.
    :meth:`summary` gives the live per-mode summary (what the app's table and chart redraw).
    """

    done: int
    total: int
    resumed: int
    record: dict[str, Any] | None
    records: list[dict[str, Any]] = field(repr=False)
    items: Sequence[Item] = field(default=(), repr=False)
    modes: tuple[str, ...] = ()
    k: int = 1  # tries per (item, mode)

    def summary(self, dataset: str | None = None) -> dict[str, Any]:
        name = dataset or (self.items[0].dataset if self.items else "")
        records = order_records(self.records, self.items, self.modes)
        return summarise(records, self.modes, name, total_items=len(self.items), k=self.k)


@dataclass
class EvalResult:
    """A finished run: its records (dataset order), the per-mode summary, and where they were saved."""

    records: list[dict[str, Any]]
    summary: dict[str, Any]
    out_dir: Path | None


def make_record(item: Item, mode: str, trace: Trace, attempt: int = 1) -> dict[str, Any]:
    """One result line: the item, its try, the scored answer and the trace's numbers (not its events)."""
    scored = score(item.scorer, trace.answer, item.answer, item.aliases)
    return {
        "id": item.id, "mode": mode, "try": attempt, "dataset": item.dataset, "category": item.category,
        "question": item.question, "gold": item.answer, "aliases": list(item.aliases),
        "prediction": trace.answer, "parsed": scored.parsed, "scorer": item.scorer,
        "em": scored.em, "f1": scored.f1,
        "steps": trace.step_count, "llm_calls": trace.llm_calls, "tool_calls": trace.tool_calls,
        "prompt_tokens": trace.prompt_tokens, "completion_tokens": trace.completion_tokens,
        "tokens": trace.prompt_tokens + trace.completion_tokens, "tokens_estimated": trace.tokens_estimated,
        "latency_s": round(trace.elapsed_s, 4), "error": trace.error, "forced": trace.forced,
        "claims": record_claims(trace),  # the answer's grounding marks, counted (agents/evaluation/grounded.py)
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


class _Pairs:
    """What every worker shares: settings, the cancel flag, the store and the open models."""

    def __init__(self, factory: ModelFactory, registry: ToolRegistry, config: RunConfig,
                 store: ResultStore, sc_n: int, trials: int = DEFAULT_TRIALS) -> None:
        self.factory, self.registry, self.store, self.sc_n, self.trials = factory, registry, store, sc_n, trials
        self.cancel = threading.Event()
        self.config = replace(config, cancel=self.cancel)
        self.models = OpenModels(self.cancel)

    def run(self, item: Item, mode: str, attempt: int = 1) -> dict[str, Any] | None:
        """Run, score and save one pair's try; None when it was cancelled before it could finish."""
        if self.cancel.is_set():
            return None
        trace = Trace(mode, item.question)
        problem = validate_question(item.question)
        if problem is not None:  # items made in code skip load_dataset's check: no model call for them either
            trace.add(LLMError(f"not sent to the model: {problem}"))
            return self.store.append(make_record(item, mode, trace, attempt), trace)
        # Each mode gets the options it declares: the hybrids' CoT-SC samples and vote key, Reflexion's trials
        # and the item's answer (its trials are graded against the ground truth, as in the paper).
        for event in run_one(mode, item.question, self.factory, self.registry, self.config, self.models,
                             sc_n=self.sc_n, vote_key=functools.partial(vote_key, item.scorer),
                             trials=self.trials, expected=item.answer):
            trace.add(event)
        trace.finish()
        if self.cancel.is_set() and (trace.answer is None or trace.error):
            return None  # cut short by the cancel (e.g. its stream was closed): run it again next time
        return self.store.append(make_record(item, mode, trace, attempt), trace)

    def stop(self) -> None:
        """Cancel: no new pairs start, running ones stop at their next model call, open streams close."""
        self.cancel.set()
        self.models.close_all()


class EvalRun:
    """Every (item, mode) pair of a benchmark, ``k`` tries each, run on a thread pool: the benchmark's run object.

    Shaped like :class:`agents.comparison.ComparisonRun` so one UI loop drives either: :meth:`poll`
    waits at most ``timeout`` seconds for the next :class:`Progress` (one before any work, then one
    per finished pair; a pair's unexpected exception is raised here), :attr:`done` is True once the
    last one was taken, and :meth:`close` may be called from any thread at any time: it cancels the
    pairs not started, closes every open model client (which ends in-flight streams at once) and
    waits for the workers.
    """

    def __init__(self, items: Sequence[Item], modes: Iterable[str], *, model_factory: ModelFactory,
                 registry: ToolRegistry, config: RunConfig | None = None, concurrency: int = 8,
                 out_dir: str | Path | None = None, sc_n: int = DEFAULT_SC_SAMPLES,
                 trials: int = DEFAULT_TRIALS, k: int = 1) -> None:
        self.items, self.modes, self.k = items, tuple(_check_modes(modes)), max(1, int(k))
        self.store = ResultStore(out_dir)
        self._pairs = _Pairs(model_factory, registry, config or RunConfig(), self.store, sc_n, trials)
        self._concurrency = max(1, int(concurrency))
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._records: list[dict[str, Any]] = []
        self._total = self._resumed = self._remaining = 0
        self._pool: ThreadPoolExecutor | None = None
        self._ended = False

    def start(self) -> EvalRun:
        """Load what an earlier run saved, announce the total, and submit the pairs still to do."""
        wanted = set(self.keys())
        saved = {key: rec for key, rec in self.store.load().items() if key in wanted}
        todo = [(item, mode, attempt) for item in self.items for mode in self.modes for attempt in self.tries
                if (item.id, mode, attempt) not in saved]
        with self._lock:
            self._records = list(saved.values())
            self._total, self._resumed, self._remaining = len(wanted), len(saved), len(todo)
            self._queue.put(self._progress(None))
            if not todo or self._pairs.cancel.is_set():
                self._queue.put(_END)
                return self
            self._pool = ThreadPoolExecutor(max_workers=self._concurrency, thread_name_prefix="eval")
        try:
            for item, mode, attempt in todo:
                self._pool.submit(self._work, item, mode, attempt)
        except RuntimeError:  # closed meanwhile: the pairs not submitted are simply not run
            pass
        return self

    @property
    def tries(self) -> range:
        return range(1, self.k + 1)

    def keys(self) -> list[Key]:
        """Every (item id, mode, try) this run asks for."""
        return [(item.id, mode, attempt) for item in self.items for mode in self.modes for attempt in self.tries]

    @property
    def done(self) -> bool:
        return self._ended

    def poll(self, timeout: float | None = None) -> Progress | None:
        """The next :class:`Progress`, or None if none came within ``timeout`` or the run is over."""
        if self._ended:
            return None
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is _END:
            self._ended = True
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        """Cancel: no new pairs start, running ones stop at once (their streams are closed); joins the workers."""
        self._pairs.stop()
        pool = self._pool
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._queue.put(_END)

    def _work(self, item: Item, mode: str, attempt: int) -> None:
        try:
            record = self._pairs.run(item, mode, attempt)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, as iter_eval always did
            self._queue.put(exc)
            record = None
        with self._lock:
            if record is not None:
                self._records.append(record)
                self._queue.put(self._progress(record))
            self._remaining -= 1
            if self._remaining == 0:
                self._queue.put(_END)

    def _progress(self, record: dict[str, Any] | None) -> Progress:
        return Progress(len(self._records), self._total, self._resumed, record, list(self._records), self.items,
                        self.modes, self.k)


def iter_eval(
    items: Sequence[Item],
    modes: Iterable[str],
    *,
    model_factory: ModelFactory,
    registry: ToolRegistry,
    config: RunConfig | None = None,
    concurrency: int = 8,
    out_dir: str | Path | None = None,
    sc_n: int = DEFAULT_SC_SAMPLES,
    trials: int = DEFAULT_TRIALS,
    k: int = 1,
) -> Iterator[Progress]:
    """Yield a :class:`Progress` before starting and after every finished pair (an :class:`EvalRun`, iterated).

    Closing the generator (Ctrl-C, a dropped visitor) or an exception in the consumer
    cancels the remaining pairs, closes their models and waits for the workers to end.
    """
    run = EvalRun(items, modes, model_factory=model_factory, registry=registry, config=config,
                  concurrency=concurrency, out_dir=out_dir, sc_n=sc_n, trials=trials, k=k)
    try:
        run.start()
        while not run.done:
            progress = run.poll()
            if progress is not None:
                yield progress
    finally:
        run.close()


def run_eval(
    items: Sequence[Item],
    modes: Iterable[str],
    *,
    model_factory: ModelFactory,
    registry: ToolRegistry,
    config: RunConfig | None = None,
    concurrency: int = 8,
    out_dir: str | Path | None = None,
    progress: Callable[[Progress], None] | None = None,
    sc_n: int = DEFAULT_SC_SAMPLES,
    dataset: str | None = None,
    trials: int = DEFAULT_TRIALS,
    k: int = 1,
) -> EvalResult:
    """Run every (item, mode) pair ``k`` times and return the records and the per-mode summary.

    ``progress`` is called after each finished pair (and once at the start); if it raises,
    the run stops and the exception propagates, with everything finished already saved.
    A KeyboardInterrupt does the same.
    """
    modes = _check_modes(modes)
    records: list[dict[str, Any]] = []
    started = time.perf_counter()
    events = iter_eval(items, modes, model_factory=model_factory, registry=registry, config=config,
                       concurrency=concurrency, out_dir=out_dir, sc_n=sc_n, trials=trials, k=k)
    # closing(): if progress raises, stop the workers now, not whenever the traceback lets go of the generator
    with contextlib.closing(events):
        for event in events:
            records = event.records
            if progress is not None:
                progress(event)
    name = dataset or (items[0].dataset if items else "")
    summary = summarise(order_records(records, items, modes), modes, name, total_items=len(items), k=k)
    summary["wall_s"] = round(time.perf_counter() - started, 3)
    return EvalResult(order_records(records, items, modes), summary, Path(out_dir) if out_dir else None)


def order_records(records: list[dict[str, Any]], items: Sequence[Item], modes: Sequence[str]) -> list[dict[str, Any]]:
    """Records in dataset order, then mode order, then try (finishing order is arbitrary under concurrency)."""
    rank = {(item.id, mode): (i, j) for i, item in enumerate(items) for j, mode in enumerate(modes)}
    return sorted((r for r in records if (r["id"], r["mode"]) in rank),
                  key=lambda r: (*rank[(r["id"], r["mode"])], key_of(r)[2]))


def parse_modes(text: str | Iterable[str]) -> list[str]:
    """``"think,act,react"`` (or a list) → validated, de-duplicated mode names."""
    names = text.split(",") if isinstance(text, str) else list(text)
    return _check_modes(n.strip().lower() for n in names if n and n.strip())


def _check_modes(modes: Iterable[str]) -> list[str]:
    modes = list(dict.fromkeys(modes))
    known = mode_ids()
    unknown = [m for m in modes if m not in known]
    if unknown or not modes:
        raise ValueError(f"unknown mode(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(known)}")
    return modes
