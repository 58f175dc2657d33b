"""The runner on a 10-item set with ScriptedModel factories: all pairs, concurrency, resume, summary arithmetic."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest

from agents.evaluation.datasets import Item
from agents.evaluation.runner import EvalRun, iter_eval, parse_modes, run_eval
from agents.evaluation.store import RESULTS_FILE, ResultStore
from agents.llm.base import Chunk, LLMFailure
from agents.llm.scripted import Request, ScriptedModel
from agents.trace import Trace
from tools.registry import ToolRegistry, tool


@tool
def calculate(expression: str) -> str:
    """Add integers written as a+b."""
    return str(sum(int(x) for x in expression.replace(" ", "").split("+")))


REGISTRY = ToolRegistry([calculate])
ITEMS = [Item(id=f"q{i}", question=f"What is {i}+{i + 1}?", answer=str(2 * i + 1), scorer="number", dataset="sums")
         for i in range(10)]
MODES = ["think", "act", "react"]


def policy(request: Request) -> str:
    """A question-dependent 'model': Think gets even items right; Act and ReAct use the calculator."""
    system, question = request.messages[0]["content"], request.messages[1]["content"]
    last = request.messages[-1]
    a, b = (int(x) for x in re.findall(r"\d+", question)[:2])
    if "without any tools" in system:
        return f"Thinking.\nFinal Answer: {a + b if a % 2 == 0 else a + b + 1}"
    if last["role"] == "user" and last["content"].startswith("Observation:"):
        return f"Final Answer: {last['content'].split(':', 1)[1].strip()}"
    thought = "" if "no Thought lines" in system else "Thought: add.\n"
    return f"{thought}Action: calculate\nAction Input: {a}+{b}"


class Factory:
    """One fresh ScriptedModel per pair; measures how many model calls run at once."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay, self.made, self.active, self.max_active = delay, [], 0, 0
        self.lock = threading.Lock()

    def __call__(self) -> ScriptedModel:
        model = ScriptedModel([self.step] * 8)
        with self.lock:
            self.made.append(model)
        return model

    def step(self, request: Request) -> str:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            time.sleep(self.delay)
            return policy(request)
        finally:
            with self.lock:
                self.active -= 1


def lines(out) -> list[dict]:
    return [json.loads(line) for line in (out / RESULTS_FILE).read_text().splitlines()]


def evaluate(factory, out=None, **kwargs):
    return run_eval(ITEMS, MODES, model_factory=factory, registry=REGISTRY, out_dir=out, **kwargs)


def test_every_pair_runs_once_and_the_summary_adds_up(tmp_path):
    factory = Factory()
    result = evaluate(factory, tmp_path, concurrency=4)
    assert len(factory.made) == 30 and all(m.closed for m in factory.made)  # one fresh model per pair, closed
    assert [(r["id"], r["mode"]) for r in result.records] == [(i.id, m) for i in ITEMS for m in MODES]
    modes = result.summary["modes"]
    assert result.summary["metric"] == "accuracy" and result.summary["items"] == 10
    assert {m: modes[m]["em"] for m in MODES} == {"think": 0.5, "act": 1.0, "react": 1.0}
    assert all(modes[m]["n"] == 10 and modes[m]["f1"] == modes[m]["em"] == modes[m]["accuracy"] for m in MODES)
    # ScriptedModel: 10 prompt tokens per call, completion = words of the reply.
    # think: 10 + 4 ("Thinking. Final Answer: N"); act: 2 calls, 20 + 5 + 3; react: 20 + 7 + 3
    assert {m: modes[m]["mean_tokens"] for m in MODES} == {"think": 14, "act": 28, "react": 30}
    assert {m: modes[m]["mean_llm_calls"] for m in MODES} == {"think": 1, "act": 2, "react": 2}
    assert {m: modes[m]["mean_steps"] for m in MODES} == {"think": 1, "act": 1, "react": 1}  # Think: its one chain
    assert {m: modes[m]["mean_tool_calls"] for m in MODES} == {"think": 0, "act": 1, "react": 1}
    for m in MODES:
        latencies = [r["latency_s"] for r in result.records if r["mode"] == m]
        assert modes[m]["mean_latency_s"] == pytest.approx(sum(latencies) / 10)
        assert modes[m]["error_rate"] == 0 and modes[m]["forced_rate"] == 0 and modes[m]["paper"] is None


def test_results_are_saved_per_pair_with_full_traces(tmp_path):
    result = evaluate(Factory(), tmp_path, concurrency=3)
    saved = lines(tmp_path)
    assert len(saved) == 30 and len({(r["id"], r["mode"]) for r in saved}) == 30
    react = next(r for r in saved if r["id"] == "q3" and r["mode"] == "react")
    assert react["prediction"] == "7" and react["em"] == 1.0 and react["parsed"] == "7"
    trace = Trace.from_dict(json.loads((tmp_path / react["trace"]).read_text()))
    assert trace.answer == "7" and trace.steps[0].observation == "7" and trace.mode == "react"
    assert ResultStore(tmp_path).load_trace(react).answer == "7"
    assert result.out_dir == tmp_path


def test_pairs_run_concurrently_under_the_bound():
    factory = Factory(delay=0.03)
    evaluate(factory, concurrency=4)
    assert 2 <= factory.max_active <= 4
    sequential = Factory(delay=0.0)
    evaluate(sequential, concurrency=1)
    assert sequential.max_active == 1


def test_resume_after_interruption_runs_only_the_rest(tmp_path):
    seen = []

    def stop_after_five(event):
        seen.append(event)
        if event.record is not None and len(seen) > 5:
            raise KeyboardInterrupt

    first = Factory(delay=0.01)
    with pytest.raises(KeyboardInterrupt):
        evaluate(first, tmp_path, concurrency=3, progress=stop_after_five)
    saved = lines(tmp_path)
    done = {(r["id"], r["mode"]) for r in saved}
    assert 5 <= len(saved) < 30 and len(done) == len(saved)
    assert all(r["error"] is None and r["prediction"] for r in saved)  # nothing half-run was recorded
    assert all(m.closed for m in first.made)

    second, starts = Factory(), []
    result = evaluate(second, tmp_path, concurrency=3, progress=starts.append)
    assert starts[0].resumed == len(saved) and starts[0].done == len(saved) and starts[0].record is None
    assert len(second.made) == 30 - len(saved)  # only the rest ran
    final = lines(tmp_path)
    assert len(final) == 30 and len({(r["id"], r["mode"]) for r in final}) == 30
    assert {m: result.summary["modes"][m]["em"] for m in MODES} == {"think": 0.5, "act": 1.0, "react": 1.0}

    third = Factory()
    evaluate(third, tmp_path)
    assert third.made == []  # all done: nothing runs


def test_progress_carries_a_live_summary():
    events = list(iter_eval(ITEMS[:2], MODES, model_factory=Factory(), registry=REGISTRY, concurrency=2))
    assert [e.done for e in events] == list(range(7)) and all(e.total == 6 for e in events)
    first, last = events[0].summary(), events[-1].summary()
    assert first["modes"]["react"]["n"] == 0 and first["modes"]["react"]["em"] is None
    assert last["dataset"] == "sums" and last["items"] == 2
    assert {m: last["modes"][m]["em"] for m in MODES} == {"think": 0.5, "act": 1.0, "react": 1.0}


def test_closing_the_generator_cancels_remaining_pairs(tmp_path):
    factory = Factory(delay=0.05)
    events = iter_eval(ITEMS, MODES, model_factory=factory, registry=REGISTRY, concurrency=2, out_dir=tmp_path)
    assert next(events).record is None
    assert next(events).record is not None
    events.close()
    assert len(factory.made) < 30 and all(m.closed for m in factory.made)
    time.sleep(0.1)
    assert len(lines(tmp_path)) == len({(r["id"], r["mode"]) for r in lines(tmp_path)}) < 30


class Hanging:
    """A model whose reply never comes until it is closed (a hung provider); counts its calls."""

    made: list[Hanging] = []

    def __init__(self) -> None:
        self.model_id, self.closed = "hang", threading.Event()
        Hanging.made.append(self)

    def stream(self, messages, **kwargs):
        self.closed.wait(30)
        raise LLMFailure("the connection was closed")
        yield Chunk(text="")  # a generator, like a real client's stream

    def close(self) -> None:
        self.closed.set()


def test_eval_run_polls_with_a_timeout_and_closes_from_another_thread():
    """What the app's Benchmark Stop needs: poll never blocks past its timeout, and close() from any thread
    ends the in-flight model calls at once (here: hung ones) and leaves no worker behind."""
    Hanging.made.clear()
    run = EvalRun(ITEMS[:4], ["think"], model_factory=Hanging, registry=REGISTRY, concurrency=2).start()
    first = run.poll(timeout=1)
    assert first is not None and first.done == 0 and first.total == 4
    started = time.monotonic()
    assert run.poll(timeout=0.2) is None and not run.done  # nothing finished: None after the timeout
    assert time.monotonic() - started < 1
    while len(Hanging.made) < 2:
        time.sleep(0.01)
    closer = threading.Thread(target=run.close)
    closer.start()
    closer.join(5)
    assert not closer.is_alive() and time.monotonic() - started < 5  # not the models' 30 s
    # the two pairs not started never ran
    assert len(Hanging.made) == 2 and all(m.closed.is_set() for m in Hanging.made)
    while run.poll(timeout=1) is not None:  # what finished before the close (cancelled pairs are not records)
        pass
    assert run.done and run.poll(timeout=0) is None
    assert not [t for t in threading.enumerate() if t.name.startswith("eval")]


def test_a_torn_last_line_is_dropped_and_rerun(tmp_path):
    evaluate(Factory(), tmp_path, concurrency=2)
    text = (tmp_path / RESULTS_FILE).read_text()
    (tmp_path / RESULTS_FILE).write_text(text[: len(text) - 40])  # the process died mid-line
    again = Factory()
    evaluate(again, tmp_path)
    assert len(again.made) == 1
    assert len(lines(tmp_path)) == 30


def test_failures_are_error_records_not_crashes(tmp_path):
    def failing():
        return ScriptedModel([LLMFailure("HTTP 429: rate limited")])

    result = run_eval(ITEMS[:2], ["think"], model_factory=failing, registry=REGISTRY, out_dir=tmp_path)
    think = result.summary["modes"]["think"]
    assert think["error_rate"] == 1.0 and think["em"] == 0.0 and think["n"] == 2
    assert result.records[0]["error"] == "HTTP 429: rate limited" and result.records[0]["prediction"] is None

    def broken_factory():
        raise LLMFailure("No model is configured.")

    result = run_eval(ITEMS[:1], ["react"], model_factory=broken_factory, registry=REGISTRY)
    assert result.records[0]["error"] == "No model is configured."

    result = run_eval(ITEMS[:1], ["react"], model_factory=lambda: ScriptedModel([]), registry=REGISTRY)
    assert result.records[0]["error"].startswith("internal error in react: ScriptMismatch")


def test_hybrid_modes_run_in_the_runner():
    factory = Factory()
    result = run_eval(ITEMS, ["react_cot_sc", "cot_sc_react", "cot_sc"], model_factory=factory, registry=REGISTRY,
                      sc_n=3)
    modes = result.summary["modes"]
    assert modes["react_cot_sc"]["em"] == 1.0  # ReAct answered: no fallback
    assert modes["cot_sc_react"]["em"] == 0.5  # 3/3 samples agree: the majority stands, right or wrong
    assert modes["cot_sc"]["mean_llm_calls"] == 3
    assert modes["cot_sc_react"]["mean_tool_calls"] == 0


def test_without_out_dir_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = evaluate(Factory(), concurrency=2)
    assert len(result.records) == 30 and result.out_dir is None and list(tmp_path.iterdir()) == []


def test_mode_names_are_checked():
    assert parse_modes("think, act,react,think") == ["think", "act", "react"]
    assert parse_modes("react_cot_sc,cot_sc_react") == ["react_cot_sc", "cot_sc_react"]
    with pytest.raises(ValueError, match="unknown mode.*tot"):
        parse_modes("think,tot")
    with pytest.raises(ValueError):
        parse_modes("")


def test_a_question_compare_would_refuse_never_reaches_the_model():
    def factory():
        raise AssertionError("no model may be made for a refused question")

    items = [Item("long", "x" * 2001, "1"), Item("nul", "\x00\x00", "1")]
    result = run_eval(items, ["think", "react"], model_factory=factory, registry=ToolRegistry([]))
    assert len(result.records) == 4
    assert all(r["error"].startswith("not sent to the model:") for r in result.records)
    assert "2,001 characters" in result.records[0]["error"] and "no visible characters" in result.records[2]["error"]


def test_reflexion_trials_are_graded_against_each_items_answer(tmp_path):
    """The runner gives Reflexion the item's answer (``expected``), so no self-check call is made, and ``trials``."""
    result = run_eval(ITEMS[:1], ["reflexion", "react"], model_factory=lambda: ScriptedModel(
        ["Final Answer: 5", "I guessed; next time I will add with the calculator.", "Final Answer: 1"]),
        registry=REGISTRY, out_dir=tmp_path, trials=2)
    reflexion, react = result.records
    assert (reflexion["prediction"], reflexion["em"], reflexion["llm_calls"]) == ("1", 1.0, 3)
    trace = ResultStore(tmp_path).load_trace(reflexion)
    assert [(t["n"], t["correct"], t["by"]) for t in trace.trials] == [(1, False, "expected"), (2, True, "expected")]
    assert react["prediction"] == "5" and react["em"] == 0.0  # the same first reply, without Reflexion
    assert run_eval(ITEMS[:1], ["reflexion"], model_factory=lambda: ScriptedModel(["Final Answer: 1"]),
                    registry=REGISTRY).records[0]["em"] == 1.0  # the default: up to 3 trials, one needed
