"""The Benchmark tab: its pure helpers, Stop closing the run, and ``/benchmark`` driven through gradio_client."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import threading
import time

import gradio as gr
import pytest
from gradio_client import Client, handle_file

from agents.evaluation import summarise
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from agents.modes import RunConfig
from agents.modes.registry import protocol_problem
from ui.benchmark import charts
from ui.benchmark import reliability as rl
from ui.benchmark import tab as bt
from ui.core.settings import app_settings
from ui.core.stream import StopSignal

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
QUESTIONS = [("What is 17 * 23 + 5?", "396"), ("What is 12 * 12?", "144"), ("What is 1000 - 1?", "999")]


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def arith(tmp_path) -> str:
    return write_jsonl(tmp_path / "arith.jsonl", [{"question": q, "answer": a} for q, a in QUESTIONS])


# --- pure helpers -------------------------------------------------------------------------------


def test_clamp_and_clock():
    assert bt.clamp("7", 1, 8, 4) == 7 and bt.clamp(99, 1, 8, 4) == 8 and bt.clamp(0, 1, 8, 4) == 1
    assert bt.clamp(None, 1, 8, 4) == 4 and bt.clamp("x", 1, 8, 4) == 4 and bt.clamp(2.7, 1, 8, 4) == 2
    assert [bt.clock(s) for s in (0, 42, 725, 3723, -3)] == ["0:00", "0:42", "12:05", "1:02:03", "0:00"]


def test_progress_line():
    assert bt.progress_line(0, 30, 0) == "0 / 30 pairs · 0:00 elapsed"
    assert bt.progress_line(12, 30, 42) == "12 / 30 pairs · 0:42 elapsed · ~1:03 left"
    assert bt.progress_line(30, 30, 90, errors=1) == "30 / 30 pairs · 1:30 elapsed · 1 error"
    assert bt.progress_line(3, 30, 9, errors=2).endswith("· 2 errors")


def test_mode_names_accept_ids_and_labels_and_refuse_nonsense():
    assert bt.mode_names(["react", "Think-only (CoT)", "act", "react"]) == ["react", "think", "act"]
    assert bt.mode_names([" CoT-SC → ReAct "]) == ["cot_sc_react"]
    with pytest.raises(bt.BenchmarkError, match="at least one mode"):
        bt.mode_names([])
    with pytest.raises(bt.BenchmarkError, match="Unknown mode.*telepathy"):
        bt.mode_names(["think", "telepathy"])


def test_prepare_builtin_caps_and_clamps():
    plan = bt.prepare("handwritten", None, 3, ["think"], concurrency=50, sc_n=0)
    assert len(plan.items) == 3 and plan.modes == ["think"] and (plan.concurrency, plan.sc_n) == (8, 1)
    assert plan.note == ""
    capped = bt.prepare("hotpotqa", None, 500, ["react"], max_n=4)  # a visitor on the owner's credits
    assert len(capped.items) == 4 and "capped at 4" in capped.note and capped.items[0].dataset == "hotpotqa"


def test_prepare_refuses_with_one_readable_line(tmp_path, arith):
    assert [i.answer for i in bt.prepare(bt.UPLOAD, arith, 10, ["act"]).items] == ["396", "144", "999"]
    bad = tmp_path / "bad.csv"
    bad.write_text("question,gold\nWhat?,42\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    cases = [((bt.UPLOAD, None), "Upload a CSV or JSONL"), ((bt.UPLOAD, str(bad)), r"missing column\(s\) answer"),
             ((bt.UPLOAD, str(tmp_path / "notes.txt")), "unsupported file type .txt"),
             ((bt.UPLOAD, str(tmp_path / "gone.jsonl")), "no such file"), (("squad2", None), "Unknown dataset")]
    for (dataset, upload), message in cases:
        with pytest.raises(bt.BenchmarkError, match=message):
            bt.prepare(dataset, upload, 10, ["think"])


def test_table_and_charts_put_the_papers_figure_beside_ours():
    records = [{"id": "q1", "mode": m, "em": em, "f1": em, "tokens": 100, "scorer": "squad"}
               for m, em in (("think", 0.0), ("react", 1.0))]
    summary = summarise(records, ["think", "react", "act"], "hotpotqa", total_items=1)
    table = bt.table_frame(summary)
    assert list(table["Mode"]) == ["Think-only (CoT)", "ReAct", "Act-only"]
    assert table.loc[2, "EM %"] == "–" and table.loc[1, "EM %"] == 100.0 and table.loc[1, "Paper %"] == 27.4
    spec = json.loads(charts.score_chart(summary).plot)
    encoding = spec["encoding"]
    # one group per mode (a row each, in the table's order), a bar per source inside it, a colour per source
    assert encoding["y"]["field"] == "mode" and encoding["y"]["sort"] == ["Think-only (CoT)", "ReAct", "Act-only"]
    assert encoding["yOffset"]["field"] == encoding["color"]["field"] == "series"
    assert encoding["color"]["scale"]["domain"] == ["this run", "paper (PaLM-540B)"]
    assert encoding["x"]["title"] == "EM %" and encoding["x"]["scale"]["domain"] == [0, 100]
    assert {"mode": "ReAct", "series": "paper (PaLM-540B)", "value": 27.4} in spec["data"]["values"]
    tokens = json.loads(charts.tokens_chart(summary).plot)
    assert tokens["encoding"]["y"]["sort"] == ["Think-only (CoT)", "ReAct", "Act-only"]


def test_the_value_axis_keeps_its_labels_apart_and_short():
    """Few ticks, labels at least LABEL_GAP_PX apart and never flushed into the one before ("850900"); tokens
    read 1.5k, 12k."""
    records = [{"id": "q1", "mode": "react", "em": 1.0, "f1": 1.0, "tokens": 12_345, "scorer": "squad"}]
    summary = summarise(records, ["react"], "hotpotqa", total_items=1)
    for chart in (charts.score_chart(summary), charts.tokens_chart(summary)):
        axis = json.loads(chart.plot)["encoding"]["x"]["axis"]
        assert axis["tickCount"] <= 5 and axis["labelOverlap"] and axis["labelSeparation"] >= 6
        assert axis["labelFlush"] is False
    assert json.loads(charts.tokens_chart(summary).plot)["encoding"]["x"]["axis"]["format"] == "~s"
    assert "format" not in json.loads(charts.score_chart(summary).plot)["encoding"]["x"]["axis"]


def test_the_results_table_has_its_real_headers_before_any_run():
    with gr.Blocks():
        table = bt.build_benchmark_tab(LLMSettings(model="m"), None)["table"]  # type: ignore[arg-type]
    headers = table.value["headers"]
    assert headers[:4] == ["Mode", "n", "EM %", "F1 %"] and "1" not in headers and table.value["data"] == []
    records = [{"id": "q1", "mode": "react", "em": 1.0, "f1": 1.0, "tokens": 10, "scorer": "squad"}]
    assert headers == list(bt.table_frame(summarise(records, ["react"], "hotpotqa", total_items=1)).columns)


def test_export_dir_is_fresh_and_old_ones_go(tmp_path, monkeypatch):
    monkeypatch.setattr(bt, "EXPORT_ROOT", tmp_path / "exports")
    first = bt.export_dir()
    old = time.time() - 2 * bt.EXPORT_TTL_S
    os.utime(first, (old, old))
    second = bt.export_dir()
    assert second != first and os.path.isdir(second) and not os.path.exists(first)


def test_not_configured_and_no_modes_are_messages_not_crashes():
    with gr.Blocks():
        tab = bt.build_benchmark_tab(LLMSettings(model="m"), None)  # type: ignore[arg-type]

    async def frames(*args):
        return [f async for f in tab["handler"](*args)]

    (first,) = asyncio.run(frames("handwritten", None, 3, ["think"]))
    assert first[0].startswith("⚠") and "is not set — no model is configured" in first[0]
    with gr.Blocks():
        tab = bt.build_benchmark_tab(LLMSettings(model="m", base_url="http://127.0.0.1:9/v1"), None)  # type: ignore[arg-type]
    (first,) = asyncio.run(frames("handwritten", None, 3, []))
    assert first[0] == "⚠ Pick at least one mode to benchmark."


# --- Stop closes the run ---------------------------------------------------------------------------


def slow_policy(body: dict) -> StubReply:
    return StubReply(text="Thought: " + "hmm " * 400, token_delay=0.05)


def run_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(("run-close", "eval"))]


def test_closing_the_stream_cancels_the_workers_and_their_model_streams(kit, arith):
    with StubLLMServer(slow_policy) as server:
        plan = bt.prepare(bt.UPLOAD, arith, 3, ["think", "react"], concurrency=2)

        async def start_then_stop() -> tuple:
            frames = bt.benchmark_frames(plan, kit.settings(server), kit.registry(), RunConfig())
            first = await anext(frames)
            while len(server.requests) < 2:
                await asyncio.sleep(0.05)
            await frames.aclose()  # what Gradio's cancel does to the handler
            return first

        first = asyncio.run(start_then_stop())
        assert first[0].startswith("● 0 / 6 pairs")
        deadline = time.monotonic() + 10
        while run_threads() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not run_threads()
        sent = len(server.requests)
        time.sleep(0.5)
        assert len(server.requests) == sent <= 4  # nothing new started after Stop


def test_stop_signal_ends_the_run_with_what_finished(kit, arith):
    """The tab's Stop: the stream closes the run itself and shows the pairs that finished, without an estimate."""
    with StubLLMServer(slow_policy) as server:
        plan = bt.prepare(bt.UPLOAD, arith, 3, ["think", "react"], concurrency=2)
        stop = StopSignal()

        async def start_then_stop() -> list:
            frames = []
            async for frame in bt.benchmark_frames(plan, kit.settings(server), kit.registry(), RunConfig(), stop=stop):
                frames.append(frame)
                if len(server.requests) >= 2:
                    stop.stop()
            return frames

        started = time.monotonic()
        frames = asyncio.run(start_then_stop())
        status, table, score, tokens, files, grounding, reliability = frames[-1]
        assert status.startswith("■ Stopped at 0 / 6 pairs") and "left" not in status, status
        assert time.monotonic() - started < 10 and len(files) == 3 and table is not None
        assert grounding is not None and reliability is not None
        deadline = time.monotonic() + 10
        while (run_threads() or any(r.finished is None for r in server.requests)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not run_threads() and all(r.finished is not None for r in server.requests)  # streams closed
        assert time.monotonic() - started < 10  # at once, not at the end of the 20 s replies


# --- /benchmark through gradio_client --------------------------------------------------------------


@pytest.fixture(scope="module")
def bench(kit):
    with StubLLMServer(toy_policy, latency=0.1) as server:
        with gr.Blocks() as demo:
            with gr.Tab("Benchmark"):
                bt.build_benchmark_tab(kit.settings(server, token="hf_SECRET_TOKEN_XYZ"), kit.registry(),
                                       refresh_s=0.2)
        with kit.launched(demo) as url:
            yield demo, Client(url, verbose=False)


def test_benchmark_event_has_its_own_queue(bench):
    demo, _ = bench
    (fn,) = [f for f in demo.fns.values() if f.api_name == "benchmark"]
    assert fn.concurrency_id == "benchmark" and fn.concurrency_limit == app_settings().bench_concurrency and fn.queue


def test_benchmark_streams_progress_then_table_charts_and_files(bench, arith):
    _, client = bench
    job = client.submit(dataset=bt.UPLOAD, upload=handle_file(arith), n=10, modes=["think", "act", "react"],
                        concurrency=1, sc_n=1, api_name="/benchmark")
    updates = list(job)
    final = job.result()
    live = [u for u in updates if str(u[0]).startswith("●")]
    assert len(live) >= 3 and any(" / 9 pairs" in u[0] and not u[0].startswith("● 0 /") for u in live)
    assert final[0].startswith("✔ Done: 9 / 9 pairs"), final[0]
    table = final[1]
    rows = {row[0]: dict(zip(table["headers"], row, strict=True)) for row in table["data"]}
    assert set(rows) == {"Think-only (CoT)", "Act-only", "ReAct"}
    assert rows["Act-only"]["Accuracy %"] == 100.0 and rows["ReAct"]["Accuracy %"] == 100.0  # via the calculator
    assert rows["Think-only (CoT)"]["Accuracy %"] == 0.0 and all(r["n"] == 3 for r in rows.values())
    assert final[2] and final[3]  # both charts arrived
    grounding = {row[0]: dict(zip(final[5]["headers"], row, strict=True)) for row in final[5]["data"]}
    assert grounding["ReAct"]["Correct answers"] == 3 and grounding["ReAct"]["Paper: correct, hallucinated %"] == 6.0
    files = {os.path.basename(p): p for p in final[4]}
    assert set(files) == {"summary.json", "summary.csv", "results.csv"}
    summary_text = open(files["summary.json"], encoding="utf-8").read()
    assert "SECRET" not in summary_text and json.loads(summary_text)["modes"]["react"]["em"] == 1.0
    with open(files["results.csv"], encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == 9


def test_benchmark_bad_upload_is_the_dataset_message(bench, tmp_path):
    _, client = bench
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "What is 2 + 2?"}\n', encoding="utf-8")
    result = client.predict(dataset=bt.UPLOAD, upload=handle_file(str(bad)), n=5, modes=["act"],
                            api_name="/benchmark")
    assert result[0].startswith("⚠") and "missing column" in result[0] and "answer" in result[0]


@pytest.mark.parametrize(("trials", "calls"), [(1, 2), (2, 5)])
def test_reflexion_in_the_benchmark_takes_the_trials_setting_and_grades_by_the_items_answer(kit, tmp_path, trials,
                                                                                             calls):
    """An item whose answer the toy never gives: every trial is graded wrong against it, so Reflexion makes the
    trials the setting allows (two calls each, a reflection between them); a bad setting is one line."""
    wrong = write_jsonl(tmp_path / "wrong.jsonl", [{"question": "What is 2 + 3?", "answer": "6"}])
    with StubLLMServer(toy_policy, latency=0.01) as server, gr.Blocks():
        tab = bt.build_benchmark_tab(kit.settings(server), kit.registry(), refresh_s=0.05)

        async def frames(*args, **kw):
            return [f async for f in tab["handler"](*args, **kw)]

        (refused,) = asyncio.run(frames(bt.UPLOAD, wrong, 1, ["reflexion"], 1, 1, trials=0))
        assert "Reflexion trials must be a whole number from 1 to 10" in refused[0] and not server.requests
        final = asyncio.run(frames(bt.UPLOAD, wrong, 1, ["reflexion"], 1, 1, trials=trials))[-1]
        assert final[0].startswith("✔ Done: 1 / 1 pairs"), final[0]
        assert len(server.requests) == calls
    assert final[1].iloc[0]["Accuracy %"] == 0.0  # the handler's table, before Gradio serialises it


# --- k tries per item: the runs it will make, the limit, the reliability table ------------------------


def test_the_form_says_how_many_runs_before_the_run():
    assert rl.runs_line(10, 3, ["think", "act", "react"], limit=200) == (
        "**90 runs** if it starts: 10 items × 3 tries × 3 modes, each run one model call or more. "
        "N × k may be at most 200.")
    assert rl.runs_line(1, 1, ["react"], limit=200, visitor_limit=20).startswith(
        "**1 run** if it starts: 1 item × 1 try × 1 mode")
    assert "at most 20 unless signed in, 200 signed in" in rl.runs_line(5, 2, [], limit=200, visitor_limit=20)
    assert rl.runs_line("lots", None, None, limit=200).startswith("**0 runs** if it starts: 1 item × 1 try × 0 modes")
    with gr.Blocks():
        parts = bt.build_benchmark_tab(LLMSettings(model="m"), None)  # type: ignore[arg-type]
    assert parts["runs"].value.startswith("**30 runs** if it starts: 10 items × 1 try × 3 modes")
    assert parts["reliability"].value["headers"] == rl.HEADERS[:] and "pass^1 %" in rl.HEADERS


def test_n_times_k_over_a_visitor_s_limit_is_refused_in_one_line_before_any_call(kit):
    limit = app_settings().bench_visitor_max_n
    with StubLLMServer(toy_policy) as server, gr.Blocks():
        tab = bt.build_benchmark_tab(kit.settings(server), kit.registry(), on_space=True)

        async def frames(**kw):
            return [f async for f in tab["handler"]("handwritten", None, **kw)]

        (refused,) = asyncio.run(frames(n=limit, modes=["think"], k=2))
        assert refused[0].replace("\\", "") == (
            f"⚠ N × k = {limit} × 2 = {2 * limit} tries of each mode, over this app's limit of {limit} (sign in with "
            f"Hugging Face to run up to {app_settings().bench_max_n}): lower N or k.")
        assert len(refused) == 7 and all(isinstance(v, dict) for v in refused[1:])  # the rest left as it was
        (bad,) = asyncio.run(frames(n=1, modes=["think"], k=0))
        assert bad[0].replace("\\", "") == "⚠ k (tries per item) must be a whole number from 1 to 10 (got 0)."
        (tools,) = asyncio.run(frames(n=1, modes=["react", "react_placebo"], protocol="tools"))
        assert tools[0].replace("\\", "") == f"⚠ {protocol_problem(['react_placebo'], 'tools')}"
        assert server.requests == []
    assert len(bt.prepare("handwritten", None, limit // 2, ["think"], max_n=limit, k=2).items) == limit // 2


def test_k_tries_fill_the_reliability_table_and_the_files(bench, arith):
    _, client = bench
    final = client.predict(dataset=bt.UPLOAD, upload=handle_file(arith), n=10, modes=["think", "act"], concurrency=2,
                           sc_n=1, k=3, api_name="/benchmark")
    assert final[0].startswith("✔ Done: 18 / 18 pairs"), final[0]
    table = final[6]  # after the grounding table (5)
    rows = {row[0]: dict(zip(table["headers"], row, strict=True)) for row in table["data"]}
    assert rows["Act-only"]["Right / tries"] == "9 / 9" and rows["Act-only"]["All 3 right / items"] == "3 / 3"
    assert rows["Act-only"]["pass^3 %"] == 100.0 and rows["Act-only"]["Accuracy % (pass@1)"] == 100.0
    assert rows["Think-only (CoT)"]["Right / tries"] == "0 / 9" and rows["Think-only (CoT)"]["pass^3 %"] == 0.0
    assert rows["Think-only (CoT)"]["Tokens per correct"] == "—" and "Cost per correct" not in table["headers"]
    main = {row[0]: row[1] for row in final[1]["data"]}
    assert main == {"Think-only (CoT)": 9, "Act-only": 9}  # n counts the tries
    files = {os.path.basename(p): p for p in final[4]}
    summary = json.loads(open(files["summary.json"], encoding="utf-8").read())
    assert summary["k"] == summary["run"]["k"] == 3 and summary["modes"]["act"]["pass_hat_k"] == 1.0
    with open(files["summary.csv"], encoding="utf-8") as f:
        assert {"pass_at_1", "pass_hat_k", "tokens_per_correct"} <= set(next(csv.reader(f)))
    with open(files["results.csv"], encoding="utf-8") as f:
        results = list(csv.DictReader(f))
    ids = {r["id"] for r in results}
    assert len(ids) == 3 and sorted((r["id"], r["mode"], r["try"]) for r in results) == sorted(
        (i, m, str(t)) for i in ids for m in ("think", "act") for t in (1, 2, 3))
