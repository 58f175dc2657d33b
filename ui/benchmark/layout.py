"""The Benchmark tab's form and results, laid out: the datasets it offers, its sliders and the defaults they share
with the ``/benchmark`` API (``ui/benchmark/tab.py`` wires them)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from agents.evaluation import grounded
from agents.evaluation.report import summary_table
from agents.modes.registry import list_modes, mode_ids
from patches.gradio_inputs import lenient
from ui.benchmark import reliability
from ui.core.settings import app_settings

UPLOAD = "upload"
DATASETS = [("HotpotQA (the paper's 200-question sample)", "hotpotqa"), ("FEVER (the paper's 200 claims)", "fever"),
            ("GSM8K (first 250 test problems)", "gsm8k"), ("Handwritten (35 mixed questions)", "handwritten"),
            ("Arithmetic (the hand-written set's 7 arithmetic questions)", "arithmetic"),
            ("Upload your own CSV/JSONL", UPLOAD)]
TOY_DATASET = "arithmetic"  # where the Benchmark tab opens on the toy model: the questions it can answer
TOY_NOTE = ("⚙ **The toy model answers only arithmetic** it can hand to the calculator, so the tab opens on the "
            "arithmetic questions; on HotpotQA, FEVER and GSM8K it says \"I don't know\" and scores 0 (set "
            "`HF_TOKEN` or `LLM_BASE_URL` for a language model).")
DEFAULT_MODES = list(mode_ids("base"))
MAX_CONCURRENCY, MAX_SC = 8, 21  # BENCH_MAX_N, BENCH_VISITOR_MAX_N, BENCH_CONCURRENCY: ui/core/settings.py
TABLE_HEADERS = summary_table({"modes": {}})[0]  # the columns of the default dataset's table (EM % and F1 %)


def layout(on_space: bool, *, toy: bool = False) -> dict[str, Any]:
    """The form, Run/Stop, the runs line, progress, the tables, charts and files; the toy model's note and dataset."""
    limits = app_settings()
    note = gr.Markdown(TOY_NOTE, elem_id="bench-toy-note", visible=toy)
    with gr.Row():
        dataset = gr.Dropdown(DATASETS, value=TOY_DATASET if toy else "hotpotqa", label="Dataset", scale=2)
        n = lenient(gr.Slider(1, limits.bench_max_n, value=10, step=1, label="N (items)", scale=2,
                              info=f"Up to {limits.bench_visitor_max_n} unless signed in" if on_space else None))
        k = reliability.k_slider()
        concurrency = lenient(gr.Slider(1, MAX_CONCURRENCY, value=4, step=1, label="Concurrency (pairs at once)",
                                        scale=1))
        sc_n = lenient(gr.Slider(1, MAX_SC, value=5, step=1, label="CoT-SC samples", scale=1, info="The paper uses 21"))
    upload = gr.File(label="Your dataset (question and answer columns; optional id, aliases, category, scorer)",
                     file_types=[".csv", ".jsonl", ".json"], type="filepath", visible=False)
    with gr.Row(equal_height=True):
        modes = gr.CheckboxGroup([(s.table_title, s.id) for s in list_modes()], value=DEFAULT_MODES, label="Modes",
                                 scale=5)
        run = gr.Button("▶ Run benchmark", variant="primary", scale=0, min_width=150, elem_id="bench-run")
        stop = gr.Button("■ Stop", variant="stop", scale=0, min_width=90, elem_id="bench-stop")
    runs = reliability.runs_box(DEFAULT_MODES, on_space)  # what a request will run, before it starts
    progress = gr.Markdown("", elem_id="bench-progress")
    # its real headers before any run (without them Gradio shows "1 | 2 | 3"); a run's table brings its own
    table = gr.Dataframe(headers=TABLE_HEADERS, label="Results per mode (live)", interactive=False, wrap=True,
                         elem_id="bench-table")
    second = reliability.table()  # pass@1, pass^k, cost per correct: a table of its own
    with gr.Row():
        # one group of bars per mode, a colour per source (ui/benchmark/charts.py: gr.BarPlot can only stack them)
        score_chart = gr.Plot(label="Score per mode", elem_id="bench-score")
        tokens_chart = gr.Plot(label="Mean tokens per pair", elem_id="bench-tokens")
    # a table of its own: how many answers rest on a claim no observation backs, beside the paper's Table 2
    grounding = gr.Dataframe(headers=grounded.HEADERS, label="Answers with an unbacked claim (string matches), beside "
                             "the paper's hallucination shares (human labels)", interactive=False, wrap=True,
                             elem_id="bench-grounding")
    gr.Markdown(f"{grounded.NOTE} Paper: {grounded.PAPER_SOURCE}.", elem_id="bench-grounding-note")
    files = gr.File(label="Download (summary.json, summary.csv, results.csv)", file_count="multiple", interactive=False)
    return {"dataset": dataset, "upload": upload, "n": n, "k": k, "modes": modes, "concurrency": concurrency,
            "sc_n": sc_n, "run": run, "stop": stop, "runs": runs, "progress": progress, "table": table,
            "reliability": second, "score_chart": score_chart, "tokens_chart": tokens_chart, "files": files,
            "toy_note": note, "grounding": grounding}
