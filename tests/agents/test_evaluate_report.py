"""Summary arithmetic on hand-made records, the paper's figures, the table, chart data and exports."""

from __future__ import annotations

import csv
import io
import json

import pytest

from agents.evaluation.report import (
    PAPER_TABLE1,
    chart_data,
    format_summary,
    paper_figure,
    results_csv,
    summarise,
    summary_csv,
    summary_table,
    write_exports,
)


def rec(mode, em, f1, *, tokens=100, steps=1, tools=1, latency=1.0, error=None, forced=False, scorer="squad"):
    return {"id": f"{mode}-{em}-{f1}-{tokens}", "mode": mode, "em": em, "f1": f1, "tokens": tokens,
            "prompt_tokens": tokens - 10, "completion_tokens": 10, "steps": steps, "llm_calls": steps + 1,
            "tool_calls": tools, "latency_s": latency, "error": error, "forced": forced, "scorer": scorer,
            "question": "q", "gold": "g", "prediction": "p"}


RECORDS = [
    rec("think", 1.0, 1.0, tokens=100, steps=0, tools=0, latency=1.0),
    rec("think", 0.0, 0.5, tokens=200, steps=0, tools=0, latency=2.0),
    rec("think", 0.0, 0.0, tokens=300, steps=0, tools=0, latency=3.0, error="HTTP 503"),
    rec("think", 1.0, 1.0, tokens=400, steps=0, tools=0, latency=6.0, forced=True),
    rec("react", 1.0, 1.0, tokens=1000, steps=3, tools=3, latency=4.0),
    rec("react", 0.0, 0.25, tokens=2000, steps=5, tools=4, latency=8.0, forced=True),
]


def test_summary_arithmetic_by_hand():
    summary = summarise(RECORDS, ["think", "react", "act"], "hotpotqa", total_items=4)
    think, react, act = (summary["modes"][m] for m in ("think", "react", "act"))
    assert summary["metric"] == "em" and summary["items"] == 4 and "accuracy" not in think
    assert think["n"] == 4 and think["em"] == 0.5 and think["f1"] == pytest.approx(2.5 / 4)
    assert think["mean_tokens"] == 250 and think["mean_latency_s"] == 3.0 and think["mean_steps"] == 0
    assert think["mean_prompt_tokens"] == 240 and think["mean_completion_tokens"] == 10
    assert think["error_rate"] == 0.25 and think["forced_rate"] == 0.25
    assert react["n"] == 2 and react["em"] == 0.5 and react["f1"] == 0.625
    assert react["mean_steps"] == 4 and react["mean_tool_calls"] == 3.5 and react["mean_llm_calls"] == 5
    assert react["mean_tokens"] == 1500 and react["forced_rate"] == 0.5 and react["error_rate"] == 0
    assert act["n"] == 0 and act["em"] is None and act["f1"] is None  # nothing ran: no number, not a zero
    assert think["paper"] == 0.294 and react["paper"] == 0.274 and act["paper"] == 0.257
    assert summary["paper"]["figures"]["ReAct → CoT-SC"] == 0.351
    json.dumps(summary)  # JSON-safe


def test_accuracy_datasets_report_accuracy_as_em_and_f1():
    records = [rec("react", 1.0, 1.0, scorer="fever"), rec("react", 0.0, 0.0, scorer="fever")]
    s = summarise(records, ["react"], "fever")["modes"]["react"]
    assert s["accuracy"] == s["em"] == s["f1"] == 0.5 and s["paper"] == 0.609
    custom = summarise([rec("think", 1.0, 1.0, scorer="number")], ["think"], "mysums")
    assert custom["metric"] == "accuracy" and custom["modes"]["think"]["paper"] is None and "paper" not in custom


def test_paper_figures_live_in_one_table():
    assert len(PAPER_TABLE1) == 7
    expected = {"think": (29.4, 56.3), "cot_sc": (33.4, 60.4), "act": (25.7, 58.9), "react": (27.4, 60.9),
                "cot_sc_react": (34.2, 64.6), "react_cot_sc": (35.1, 62.0)}
    for mode, (hotpot, fever) in expected.items():
        assert paper_figure(mode, "hotpotqa") == pytest.approx(hotpot / 100)
        assert paper_figure(mode, "fever") == pytest.approx(fever / 100)
    standard = next(r for r in PAPER_TABLE1 if r.method == "Standard")
    assert (standard.hotpotqa, standard.fever, standard.mode) == (28.7, 57.1, None)
    assert paper_figure("react", "gsm8k") is None and paper_figure("react", "handwritten") is None


def test_summary_table_and_text():
    summary = summarise(RECORDS, ["think", "react"], "hotpotqa", total_items=4)
    headers, rows = summary_table(summary)
    assert headers[:5] == ["Mode", "n", "EM %", "F1 %", "Paper %"]
    assert rows[0][:5] == ["Think-only (CoT)", 4, 50.0, 62.5, 29.4]
    assert rows[1][headers.index("Forced %")] == 50.0 and rows[1][headers.index("Tokens")] == 1500
    text = format_summary(summary)
    assert "Think-only (CoT)" in text and "29.4" in text and "ReAct → CoT-SC 35.1" in text and "Standard 28.7" in text
    fever = summarise([rec("act", 1.0, 1.0, scorer="fever")], ["act"], "fever")
    assert summary_table(fever)[0][2:4] == ["Accuracy %", "Paper %"]


def test_chart_data_is_long_format_with_paper_bars():
    summary = summarise(RECORDS, ["think", "react"], "hotpotqa")
    frame = chart_data(summary)
    assert list(frame.columns) == ["mode", "series", "value"]
    rows = frame.to_dict("records")
    assert {"mode": "ReAct", "series": "this run", "value": 50.0} in rows
    assert {"mode": "ReAct", "series": "paper (PaLM-540B)", "value": 27.4} in rows
    tokens = chart_data(summary, "tokens").to_dict("records")
    assert tokens == [{"mode": "Think-only (CoT)", "series": "this run", "value": 250.0},
                      {"mode": "ReAct", "series": "this run", "value": 1500.0}]
    with pytest.raises(ValueError):
        chart_data(summary, "cost")


def test_exports(tmp_path):
    summary = summarise(RECORDS, ["think", "react"], "hotpotqa")
    paths = write_exports(tmp_path / "x", summary, RECORDS)
    assert set(paths) == {"summary.json", "summary.csv", "results.csv"}
    assert json.loads(paths["summary.json"].read_text())["modes"]["think"]["em"] == 0.5
    rows = list(csv.DictReader(io.StringIO(summary_csv(summary))))
    assert rows[0]["mode"] == "think" and float(rows[0]["em"]) == 0.5 and rows[0]["dataset"] == "hotpotqa"
    results = list(csv.DictReader(io.StringIO(results_csv(RECORDS))))
    assert len(results) == 6 and results[2]["error"] == "HTTP 503"


def test_csv_cells_cannot_run_formulas():
    from agents.evaluation.report import results_csv, safe_cell, summary_csv

    for text in ("=HYPERLINK(\"http://x\")", "=cmd|' /C calc'!A0", "+SUM(1,2)", "@SUM(1,2)", "-2+3", "\tx", "\rx"):
        assert safe_cell(text) == "'" + text
    for value in ("-5", "+3.5", "-1e3", -5, 2.5, None, "plain", ""):
        assert safe_cell(value) == value  # numbers (and text that is just a number) stay numbers
    out = results_csv([{"id": "=1+1", "mode": "react", "question": "@SUM(A1)", "gold": "-7", "em": -0.0}])
    assert "'=1+1" in out and "'@SUM(A1)" in out and ",-7," in out
    assert "'=evil" in summary_csv({"dataset": "=evil", "modes": {"react": {"n": 1}}})


def test_reflexion_has_its_own_papers_figure_beside_it_on_hotpotqa():
    records = [rec("reflexion", 1.0, 1.0), rec("reflexion", 0.0, 0.5), rec("react", 0.0, 0.0)]
    summary = summarise(records, ["react", "reflexion"], "hotpotqa")
    reflexion = summary["modes"]["reflexion"]
    assert reflexion["paper"] == paper_figure("reflexion", "hotpotqa") == 0.54
    assert "Shinn" in reflexion["paper_source"] and "Fig. 4a" in reflexion["paper_source"]
    assert "paper_source" not in summary["modes"]["react"] and summary["modes"]["react"]["paper"] == 0.274
    assert paper_figure("reflexion", "fever") is None and paper_figure("reflexion", "gsm8k") is None
    headers, rows = summary_table(summary)
    assert rows[1][0] == "ReAct + Reflexion" and rows[1][headers.index("Paper %")] == 54.0
    assert "ReAct + Reflexion 54.0" in format_summary(summary)
    bars = chart_data(summary).to_dict("records")
    assert {"mode": "ReAct + Reflexion", "series": "paper (Reflexion, text-davinci-003)", "value": 54.0} in bars
    assert {"mode": "ReAct", "series": "paper (PaLM-540B)", "value": 27.4} in bars
