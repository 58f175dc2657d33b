"""Benchmarking the modes: datasets, the paper's scoring, the concurrent resumable runner, reports.

The modes themselves, the paper's CoT-SC hybrids included, live in :mod:`agents.modes` and are
listed by :mod:`agents.modes.registry`; this package depends on them, never the reverse.

The CLI entry point is :func:`agents.cli.eval_main` (``agents/cli/eval.py``); the app's Benchmark tab uses
:func:`iter_eval` (live progress), :func:`summarise`, :func:`summary_table`,
:func:`reliability_table`, :func:`chart_data` and :func:`write_exports`.
"""

from agents.evaluation.datasets import BUILTIN_FILES, DatasetError, Item, dataset_name, load_dataset
from agents.evaluation.report import (
    PAPER_TABLE1,
    chart_data,
    format_summary,
    paper_figure,
    reliability,
    reliability_table,
    results_csv,
    summarise,
    summary_csv,
    summary_json,
    summary_table,
    write_exports,
)
from agents.evaluation.runner import MAX_K, EvalResult, Progress, iter_eval, make_record, parse_modes, run_eval
from agents.evaluation.scoring import (
    exact_match,
    extract_last_number,
    f1_score,
    fever_label,
    normalize_answer,
    score,
)

__all__ = [
    "BUILTIN_FILES",
    "MAX_K",
    "PAPER_TABLE1",
    "DatasetError",
    "EvalResult",
    "Item",
    "Progress",
    "chart_data",
    "dataset_name",
    "exact_match",
    "extract_last_number",
    "f1_score",
    "fever_label",
    "format_summary",
    "iter_eval",
    "load_dataset",
    "make_record",
    "normalize_answer",
    "paper_figure",
    "parse_modes",
    "reliability",
    "reliability_table",
    "results_csv",
    "run_eval",
    "score",
    "summarise",
    "summary_csv",
    "summary_json",
    "summary_table",
    "write_exports",
]
