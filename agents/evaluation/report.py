"""From records to what people read: the per-mode summary, the paper's figures, tables, charts, files.

All metrics are fractions 0–1 in the summary and its JSON; tables show percentages. For
FEVER and GSM8K the score is accuracy, reported under ``accuracy`` and also as ``em`` and
``f1`` (a label or number is either right or wrong, so all three agree), so every summary
has ``em``, ``f1`` and ``n`` for every mode. With k tries per item each try is one record, so
``n`` counts tries; :func:`reliability` adds pass@1, pass^k and the cost per correct answer
(:func:`reliability_table` shows them in a table of their own).
"""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import strict_json
from agents.evaluation.grounded import grounding_stats
from agents.evaluation.tables import text_table
from agents.llm import pricing
from agents.modes import ablation
from agents.modes.registry import list_modes, table_title


@dataclass(frozen=True)
class PaperRow:
    """One row of the ReAct paper's Table 1: HotpotQA EM and FEVER accuracy, in percent as printed."""

    method: str
    hotpotqa: float
    fever: float

    @property
    def mode(self) -> str | None:
        """Our mode for this row, when we have one (the mode whose spec names this ``paper_row``)."""
        return next((s.id for s in list_modes() if s.paper_row == self.method), None)


PAPER_SOURCE = "ReAct (Yao et al., ICLR 2023), Table 1, PaLM-540B"
PAPER_TABLE1: tuple[PaperRow, ...] = (
    PaperRow("Standard", 28.7, 57.1),
    PaperRow("CoT", 29.4, 56.3),
    PaperRow("CoT-SC", 33.4, 60.4),
    PaperRow("Act", 25.7, 58.9),
    PaperRow("ReAct", 27.4, 60.9),
    PaperRow("CoT-SC → ReAct", 34.2, 64.6),
    PaperRow("ReAct → CoT-SC", 35.1, 62.0),
)


@dataclass(frozen=True)
class PaperFigure:
    """A figure from the paper that introduced a later mode (not the ReAct paper's Table 1), as a fraction."""

    method: str  # the mode whose spec names this ``paper_row``
    dataset: str
    value: float
    source: str
    series: str  # its bar's name in the score chart

    @property
    def mode(self) -> str | None:
        return next((s.id for s in list_modes() if s.paper_row == self.method), None)


# Reflexion (Shinn et al., NeurIPS 2023), Fig. 4a: on 100 HotpotQA questions, graded by exact match against the
# ground truth, ReAct + Reflexion climbs from about 0.32 to about 0.54 over ~6 trials, while ReAct alone does not
# improve across trials (both figures read off the plot). Another model than Table 1's (the paper's code uses
# text-davinci-003) and more trials than our default of 3 (`eval --trials 6`).
REFLEXION_SOURCE = ("Reflexion (Shinn et al., NeurIPS 2023), Fig. 4a, HotpotQA EM after ~6 trials, read off the plot; "
                    "ReAct alone ≈ 32 there; text-davinci-003, not PaLM-540B")
LATER_FIGURES: tuple[PaperFigure, ...] = (
    PaperFigure("ReAct + Reflexion", "hotpotqa", 0.54, REFLEXION_SOURCE, "paper (Reflexion, text-davinci-003)"),
)
# Where the reliability table's figures come from (docs/benchmark.md says more of each).
PASS_K_SOURCE = ("τ-bench (Yao, Shinn, Razavi & Narasimhan, 2024, arXiv 2406.12045): pass^k, an item counted only if "
                 "all k tries succeed; there pass^8 < 25 % on retail for gpt-4o")
COST_SOURCE = ("AI Agents That Matter (Kapoor et al., 2024, arXiv 2407.01502): report an agent's cost beside its "
               "accuracy")
NO_FIGURE = "—"  # a per-correct figure with no correct answer to divide by
ACCURACY_DATASETS = ("fever", "gsm8k")
_MEANS = {"mean_steps": "steps", "mean_llm_calls": "llm_calls", "mean_tool_calls": "tool_calls",
          "mean_tokens": "tokens", "mean_prompt_tokens": "prompt_tokens",
          "mean_completion_tokens": "completion_tokens", "mean_latency_s": "latency_s"}


def paper_figure(mode: str, dataset: str) -> float | None:
    """The paper's figure for ``mode`` on ``dataset`` as a fraction (HotpotQA EM, FEVER accuracy), else None:
    the ReAct paper's Table 1, or for a later mode its own paper's (:data:`LATER_FIGURES`)."""
    if dataset not in ("hotpotqa", "fever"):
        return None
    row = next((r for r in PAPER_TABLE1 if r.mode == mode), None)
    if row is None:
        later = later_figure(mode, dataset)
        return None if later is None else later.value
    return round(getattr(row, dataset) / 100, 4)


def later_figure(mode: str, dataset: str | None) -> PaperFigure | None:
    """``mode``'s figure on ``dataset`` from the paper that introduced it, if it has one."""
    return next((f for f in LATER_FIGURES if f.dataset == dataset and f.mode == mode), None)


def headline_metric(records: Sequence[dict[str, Any]], dataset: str) -> str:
    """"accuracy" for label or number answers (FEVER, GSM8K, a numeric custom set), else "em"."""
    if dataset in ACCURACY_DATASETS:
        return "accuracy"
    if records and all(r.get("scorer") in ("fever", "number") for r in records):
        return "accuracy"
    return "em"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def mode_summary(records: Sequence[dict[str, Any]], metric: str = "em",
                 price: pricing.Price | None = None) -> dict[str, Any]:
    """n, em, f1 (and accuracy), means per pair, error and forced-answer rates; None where n is 0. With a
    ``price``, ``cost_usd`` (all pairs' tokens × price) and ``cost_estimated`` (some pair's tokens are)."""
    out: dict[str, Any] = {"n": len(records), "em": _mean([r["em"] for r in records]),
                           "f1": _mean([r["f1"] for r in records])}
    if metric == "accuracy":
        out["accuracy"] = out["em"]
    for name, key in _MEANS.items():
        out[name] = _mean([float(r.get(key) or 0) for r in records])
    out["error_rate"] = _mean([float(bool(r.get("error"))) for r in records])
    out["forced_rate"] = _mean([float(bool(r.get("forced"))) for r in records])
    if price is not None:
        out["cost_usd"] = sum(price.cost(int(r.get("prompt_tokens") or 0), int(r.get("completion_tokens") or 0))
                              for r in records)
        out["cost_estimated"] = any(bool(r.get("tokens_estimated")) for r in records)
    return out


def _right(record: dict[str, Any]) -> bool:
    return float(record.get("em") or 0) >= 1


def reliability(records: Sequence[dict[str, Any]], k: int, cost_usd: float | None = None) -> dict[str, Any]:
    """One mode's reliability and price (each record one try of an item):

    ``pass_at_1`` (right tries / tries: the mode's EM or accuracy), ``pass_hat_k`` (of the items whose k tries
    all finished, the share right on every one: τ-bench's pass^k), their counts, and the cost (``cost_usd``,
    the mode's priced tokens) and tokens per correct answer; None where there is nothing to divide by."""
    tries: dict[str, list[bool]] = defaultdict(list)
    for number, record in enumerate(records):  # a record without an id is an item of its own
        tries[str(record.get("id", f"#{number}"))].append(_right(record))
    correct = sum(sum(t) for t in tries.values())
    complete = [t for t in tries.values() if len(t) >= k]
    passed = sum(all(t) for t in complete)
    tokens = sum(int(r.get("tokens") or 0) for r in records)
    out: dict[str, Any] = {
        "k": k, "tries": len(records), "correct": correct,
        "pass_at_1": correct / len(records) if records else None,
        "pass_hat_k": passed / len(complete) if complete else None,
        "pass_hat_k_items": len(complete), "pass_hat_k_passed": passed,
        "tokens_per_correct": tokens / correct if correct else None,
        "tokens_estimated": any(bool(r.get("tokens_estimated")) for r in records),
    }
    if cost_usd is not None:
        out["cost_per_correct_usd"] = cost_usd / correct if correct else None
    return out


def summarise(records: Sequence[dict[str, Any]], modes: Sequence[str], dataset: str,
              *, total_items: int | None = None, price: pricing.Price | None = None, k: int = 1) -> dict[str, Any]:
    """The run's summary: ``{"dataset", "metric", "items", "k", "modes": {mode: {...}}, "paper": {...}}``, and the
    ``price`` its costs used (``price`` or else the process's, ``agents.llm.pricing.price_of``) when one is known.
    ``k``: the tries per item (:func:`reliability`)."""
    metric = headline_metric(records, dataset)
    price = price or pricing.price_of()
    summary: dict[str, Any] = {"dataset": dataset, "metric": metric, "items": total_items, "k": k, "modes": {}}
    if price is not None:
        summary["price"] = price.to_dict()
    for mode in modes:
        mine = [r for r in records if r["mode"] == mode]
        stats = mode_summary(mine, metric, price)
        stats["grounding"] = grounding_stats(mine)  # its own table (grounded.py)
        stats.update(reliability(mine, k, stats.get("cost_usd")))
        stats["paper"] = paper_figure(mode, dataset)
        if (later := later_figure(mode, dataset)) is not None:
            stats["paper_source"] = later.source
        summary["modes"][mode] = stats
    if dataset in ("hotpotqa", "fever"):
        summary["paper"] = {"source": PAPER_SOURCE, "metric": "em" if dataset == "hotpotqa" else "accuracy",
                            "figures": {r.method: round(getattr(r, dataset) / 100, 4) for r in PAPER_TABLE1}}
    return summary


# --- for people -----------------------------------------------------------------------------------


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100 * value, 1)


def _num(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def summary_table(summary: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Headers and one row per mode, scores and rates in percent: for ``gr.Dataframe`` and the CLI; with a price,
    a "Cost (total)" column after "Tokens" (``≈ $0.0004``, ``~$0.0004`` when some tokens are estimated)."""
    accuracy = summary.get("metric") == "accuracy"
    score_cols = ["Accuracy %"] if accuracy else ["EM %", "F1 %"]
    priced = any("cost_usd" in s for s in summary["modes"].values())
    headers = ["Mode", "n", *score_cols, "Paper %", "Steps", "Tool calls", "Tokens", *(["Cost (total)"] * priced),
               "Latency s", "Errors %", "Forced %"]
    rows = []
    for mode, s in summary["modes"].items():
        scores = [_pct(s["em"])] if accuracy else [_pct(s["em"]), _pct(s["f1"])]
        rows.append([table_title(mode), s["n"], *scores, _pct(s.get("paper")), _num(s["mean_steps"]),
                     _num(s["mean_tool_calls"]), _num(s["mean_tokens"], 0),
                     *([pricing.cost_text(s.get("cost_usd"), bool(s.get("cost_estimated")))] * priced),
                     _num(s["mean_latency_s"], 2), _pct(s["error_rate"]), _pct(s["forced_rate"])])
    return headers, rows


def reliability_table(summary: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Headers and one row per mode: pass@1 (the EM or accuracy over every try) and pass^k with their counts, then
    the cost per correct answer (with a price) and the tokens per correct answer, each in a column of its own
    (``~`` where some tokens are estimated); :data:`NO_FIGURE` where no answer was correct."""
    k = int(summary.get("k") or 1)
    score = "Accuracy %" if summary.get("metric") == "accuracy" else "EM %"
    priced = any("cost_per_correct_usd" in s for s in summary["modes"].values())
    headers = ["Mode", f"{score} (pass@1)", "Right / tries", f"pass^{k} %", f"All {k} right / items",
               *(["Cost per correct"] * priced), "Tokens per correct"]
    rows = []
    for mode, s in summary["modes"].items():
        none_right = not s.get("correct")
        cost = pricing.cost_text(s.get("cost_per_correct_usd"), bool(s.get("cost_estimated")))
        tokens: Any = s.get("tokens_per_correct")
        tokens = f"~{round(tokens)}" if tokens is not None and s.get("tokens_estimated") else tokens and round(tokens)
        rows.append([table_title(mode), _pct(s.get("pass_at_1")), f"{s.get('correct', 0)} / {s.get('tries', 0)}",
                     _pct(s.get("pass_hat_k")), f"{s.get('pass_hat_k_passed', 0)} / {s.get('pass_hat_k_items', 0)}",
                     *([NO_FIGURE if none_right else cost] * priced),
                     NO_FIGURE if none_right or tokens is None else tokens])
    return headers, rows


def format_summary(summary: dict[str, Any]) -> str:
    """A plain-text table for the terminal, with the paper's whole Table 1 line under it, then the reliability
    table (:func:`reliability_table`) and its sources."""
    title = f"{summary.get('dataset')}: {summary.get('items') or '?'} items, score = {summary.get('metric')}"
    out = [title, *text_table(*summary_table(summary))]
    paper = summary.get("paper")
    if paper:
        figures = " · ".join(f"{k} {100 * v:.1f}" for k, v in paper["figures"].items())
        out.append(f"Paper ({paper['source']}), {paper['metric']} %: {figures}")
    for mode in summary["modes"]:
        if (later := later_figure(mode, summary.get("dataset"))) is not None:
            out.append(f"Paper ({later.source}), %: {later.method} {100 * later.value:.1f}")
    k = int(summary.get("k") or 1)
    out += ["", f"Reliability and cost, {k} tr{'y' if k == 1 else 'ies'} per item:",
            *text_table(*reliability_table(summary)), f"pass^k: {PASS_K_SOURCE}", f"Cost: {COST_SOURCE}"]
    if set(ablation.MODES) & set(summary["modes"]):
        out.append(f"Placebo ablation: {ablation.SOURCE}; whether it holds here is what this run measures")
    return "\n".join(out)


def chart_data(summary: dict[str, Any], what: str = "score") -> Any:
    """Long-format bars for ``gr.BarPlot(x="mode", y="value", color="series")``.

    ``what="score"``: this run's headline score (%) per mode beside the paper's figure where
    it exists; ``what="tokens"``: mean tokens per pair. A pandas DataFrame when pandas is
    installed (it comes with gradio), else a list of dicts with the same columns.
    """
    if what not in ("score", "tokens"):
        raise ValueError("what must be 'score' or 'tokens'")
    rows: list[dict[str, Any]] = []
    for mode, s in summary["modes"].items():
        label = table_title(mode)
        if what == "tokens":
            rows.append({"mode": label, "series": "this run", "value": _num(s["mean_tokens"], 0) or 0.0})
            continue
        rows.append({"mode": label, "series": "this run", "value": _pct(s["em"]) or 0.0})
        if s.get("paper") is not None:
            later = later_figure(mode, summary.get("dataset"))
            series = later.series if later is not None else "paper (PaLM-540B)"
            rows.append({"mode": label, "series": series, "value": _pct(s["paper"])})
    try:
        import pandas as pd
    except ImportError:  # the CLI does not need pandas
        return rows
    return pd.DataFrame(rows, columns=["mode", "series", "value"])


# --- files ----------------------------------------------------------------------------------------

RESULT_COLUMNS = ["id", "mode", "try", "category", "question", "gold", "prediction", "parsed", "em", "f1", "steps",
                  "llm_calls", "tool_calls", "prompt_tokens", "completion_tokens", "latency_s", "error", "forced",
                  "trace"]


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER_TEXT = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def safe_cell(value: Any) -> Any:
    """A cell a spreadsheet will not run as a formula (OWASP "CSV injection": prefix a single quote).

    Questions, answers and dataset names come from uploaded files and model output, so any text
    starting with ``= + - @``, a tab or a carriage return gets a leading ``'``. Numbers, and text
    that is just a number (a gold answer of "-5"), stay as they are.
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER_TEXT.fullmatch(value):
        return "'" + value
    return value


def results_csv(records: Sequence[dict[str, Any]]) -> str:
    """One row per (item, mode) pair: the answer, its score and its numbers (text cells made formula-safe)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=RESULT_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: safe_cell(v) for k, v in record.items()} for record in records)
    return buf.getvalue()


def summary_csv(summary: dict[str, Any]) -> str:
    """One row per mode with every summary number (fractions, not percentages)."""
    modes = {m: _flat(s) for m, s in summary["modes"].items()}
    keys = list(dict.fromkeys(k for s in modes.values() for k in s))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["dataset", "mode", *keys])
    for mode, s in modes.items():
        row = [summary.get("dataset"), mode, *("" if s.get(k) is None else s.get(k) for k in keys)]
        writer.writerow([safe_cell(v) for v in row])
    return buf.getvalue()


def _flat(stats: dict[str, Any]) -> dict[str, Any]:
    """A mode's summary with its nested blocks (``grounding``) as ``block.key`` columns."""
    return {f"{k}.{n}" if isinstance(v, dict) else k: x for k, v in stats.items()
            for n, x in (v.items() if isinstance(v, dict) else [(None, v)])}


def summary_json(summary: dict[str, Any]) -> str:
    return strict_json.dumps(summary, indent=1, ensure_ascii=False)


def write_exports(out_dir: str | Path, summary: dict[str, Any], records: Sequence[dict[str, Any]]) -> dict[str, Path]:
    """Write ``summary.json``, ``summary.csv`` and ``results.csv`` into ``out_dir`` (for downloads)."""
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    files = {"summary.json": summary_json(summary), "summary.csv": summary_csv(summary),
             "results.csv": results_csv(records)}
    paths = {}
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
        paths[name] = folder / name
    return paths
