"""``python -m agents eval``: benchmark the modes on a dataset and print the paper's table beside ours.

    python -m agents eval --dataset hotpotqa --n 50 --modes think,act,react --concurrency 8
    python -m agents eval --dataset my_questions.csv --json

Results are appended to ``<out>/results.jsonl`` as pairs finish, so Ctrl-C loses nothing finished and rerunning
with the same ``--out`` continues. Progress goes to stderr; stdout gets the table, or with ``--json`` only the
summary object (fractions 0–1; docs/benchmark.md).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from agents import strict_json
from agents.cli.exits import EXIT_INTERRUPTED, EXIT_OK, UsageError, check_model_flags, llm_settings
from agents.comparison import default_model_factory
from agents.evaluation.datasets import BUILTIN_FILES, DatasetError, Item, dataset_name, load_dataset
from agents.evaluation.grounded import format_grounding
from agents.evaluation.report import format_summary, write_exports
from agents.evaluation.runner import MAX_K, Progress, parse_modes, run_eval
from agents.evaluation.store import ResultStore
from agents.llm.settings import DEFAULT_MAX_TOKENS, TRY_THE_TOY
from agents.modes import RunConfig
from agents.modes.hybrids import DEFAULT_SC_SAMPLES
from agents.modes.reflexion import DEFAULT_TRIALS, MAX_TRIALS
from agents.modes.registry import mode_ids, protocol_problem
from agents.settings import DEFAULT_MAX_STEPS, DEFAULT_TEMPERATURE, PROTOCOLS, TEMPERATURE_RANGE
from tools import default_registry
from tools.registry import ToolRegistry

HELP = "score the modes on HotpotQA, FEVER, GSM8K or your own CSV/JSONL"
DESCRIPTION = "Benchmark Think-only, Act-only, ReAct (and the paper's hybrids) on a question set."


def configure(parser: argparse.ArgumentParser) -> None:
    """The ``eval`` flags (a contract: scripts and tests drive them)."""
    parser.add_argument("--dataset", required=True,
                        help=f"{' | '.join(BUILTIN_FILES)} | PATH to a .csv or .jsonl with question,answer columns")
    parser.add_argument("--n", type=int, default=50, help="use the first N items (0 = all; default 50)")
    base = ",".join(mode_ids("base"))
    parser.add_argument("--modes", default=base,
                        help=f"comma-separated, from: {', '.join(mode_ids())} (default {base})")
    parser.add_argument("--concurrency", type=int, default=8, help="pairs run at once (default 8)")
    parser.add_argument("--out",
                        help="results folder; rerun with the same one to resume (default runs/<dataset>-<time>)")
    parser.add_argument("--json", action="store_true", help="print only the summary as JSON on stdout")
    parser.add_argument("--protocol", choices=list(PROTOCOLS), default="text",
                        help="Act/ReAct action format: the paper's text (default) or native tool calls")
    parser.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS, help="step budget per run")
    parser.add_argument("--model", help="model id (overrides LLM_MODEL)")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help="longest reply per model call, in tokens "
                             f"(default: LLM_MAX_TOKENS or {DEFAULT_MAX_TOKENS})")
    parser.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE,
                        help=f"sampling temperature, {TEMPERATURE_RANGE[0]:g}-{TEMPERATURE_RANGE[1]:g} "
                             f"(default {DEFAULT_TEMPERATURE:g}; above 0 for k tries that can differ)")
    parser.add_argument("--sc-n", type=int, default=DEFAULT_SC_SAMPLES,
                        help=f"CoT-SC samples for the hybrid modes (paper: 21; default {DEFAULT_SC_SAMPLES})")
    parser.add_argument("--trials", type=int, default=DEFAULT_TRIALS,
                        help=f"Reflexion's trials per item, 1-{MAX_TRIALS}, graded against the item's answer "
                             f"(its paper's figure is after ~6; default {DEFAULT_TRIALS})")
    parser.add_argument("--k", type=int, default=1,
                        help=f"tries per item and mode, 1-{MAX_K}, for pass^k (an item counts only if every try is "
                             "right; default 1, 3-5 with a real model at a temperature above 0)")


def run(args: argparse.Namespace, *, registry: ToolRegistry | None = None) -> int:
    """Run the benchmark; bad input or no model raises :class:`UsageError`, Ctrl-C returns ``EXIT_INTERRUPTED``.

    ``registry`` defaults to ``tools.default_registry()``; tests pass a small one of their own.
    """
    check_model_flags(args.model, args.max_tokens, args.temperature)
    modes, config, items = _plan(args)
    settings = llm_settings(model=args.model)
    if settings.problem():
        hint = "" if settings.configured else f" {TRY_THE_TOY}"
        raise UsageError(f"{settings.problem()}{hint}", show_usage=False)
    config = replace(config, max_tokens=config.max_tokens or settings.max_tokens)
    if registry is None:
        registry = default_registry()
    name = dataset_name(args.dataset)
    out = Path(args.out or f"runs/{name}-{datetime.now():%Y%m%d-%H%M%S}")
    ResultStore(out).write_meta({
        "dataset": args.dataset, "n": len(items), "modes": modes, "model": settings.describe(),
        "protocol": args.protocol, "max_steps": args.max_steps, "max_tokens": config.max_tokens, "sc_n": args.sc_n,
        "temperature": config.temperature, "trials": args.trials, "k": args.k,
        "started": datetime.now().isoformat(timespec="seconds"),
    })
    bar = _ProgressBar()
    try:
        result = run_eval(items, modes, model_factory=default_model_factory(settings), registry=registry,
                          config=config, concurrency=args.concurrency, out_dir=out, progress=bar.update,
                          sc_n=args.sc_n, dataset=name, trials=args.trials, k=args.k)
    except KeyboardInterrupt:
        bar.close()
        wanted = {(item.id, mode, t) for item in items for mode in modes for t in range(1, args.k + 1)}
        saved = len(wanted & set(ResultStore(out).load()))
        print(f"\ninterrupted: {saved} of {len(wanted)} pairs are saved in {out}; "
              f"rerun with --out {out} to finish the rest", file=sys.stderr)
        return EXIT_INTERRUPTED
    bar.close()
    result.summary["out_dir"] = str(out)
    write_exports(out, result.summary, result.records)
    if args.json:
        print(strict_json.dumps(result.summary, ensure_ascii=False))
    else:
        print(format_summary(result.summary))
        print(f"\n{format_grounding(result.summary)}")
        print(f"\nResults, traces and CSV/JSON exports: {out}  (wall time {result.summary['wall_s']:.1f} s)")
    return EXIT_OK


def _plan(args: argparse.Namespace) -> tuple[list[str], RunConfig, list[Item]]:
    """The modes, run settings and items the flags ask for; anything unusable is a :class:`UsageError`."""
    try:
        modes = parse_modes(args.modes)
        if args.concurrency < 1 or args.n < 0 or args.sc_n < 1:
            raise ValueError("--concurrency and --sc-n must be at least 1, and --n at least 0")
        if not 1 <= args.trials <= MAX_TRIALS:
            raise ValueError(f"--trials must be between 1 and {MAX_TRIALS}")
        if not 1 <= args.k <= MAX_K:
            raise ValueError(f"--k must be between 1 and {MAX_K}")
        if problem := protocol_problem(modes, args.protocol):
            raise ValueError(problem)
        config = RunConfig(protocol=args.protocol, max_steps=args.max_steps, max_tokens=args.max_tokens,
                           temperature=args.temperature)
        return modes, config, load_dataset(args.dataset, args.n or None)
    except (ValueError, DatasetError) as exc:  # one line, as this command always printed them
        raise UsageError(str(exc), show_usage=False) from None


class _ProgressBar:
    """tqdm on stderr, created on the first event so it starts at the resumed count."""

    def __init__(self) -> None:
        self.bar = None

    def update(self, event: Progress) -> None:
        from tqdm import tqdm

        if self.bar is None:
            resumed = f" ({event.resumed} already done)" if event.resumed else ""
            self.bar = tqdm(total=event.total, initial=event.done, file=sys.stderr, unit="pair",
                            desc=f"eval{resumed}", dynamic_ncols=True)
            return
        self.bar.update(event.done - self.bar.n)
        if event.record is not None:
            self.bar.set_postfix_str(f"{event.record['mode']} {event.record['id']}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
