"""End to end: the runner and the eval CLI through the real HF client against the local stub server.

No monkeypatched client and no network: ``HFInferenceModel`` talks HTTP/SSE to
``StubLLMServer`` on 127.0.0.1, whose toy model finds the arithmetic in the question and
uses the calculator (Act, ReAct) or can only guess (Think).
"""

from __future__ import annotations

import ast
import json
import operator
import random

import pytest

from agents.evaluate import eval_main
from agents.evaluation.datasets import load_dataset
from agents.evaluation.runner import run_eval
from agents.evaluation.store import RESULTS_FILE
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from tools.registry import ToolRegistry, tool

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


@tool
def calculate(expression: str) -> str:
    """Evaluate + - * / arithmetic (a small stand-in for the project's calculator)."""
    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.BinOp):
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Constant):
            return node.value
        raise ValueError("unsupported")
    value = ev(ast.parse(expression, mode="eval").body)
    return str(int(value) if float(value).is_integer() else value)


REGISTRY = ToolRegistry([calculate])
MODES = ["think", "act", "react"]


@pytest.fixture
def sums(tmp_path):
    rng = random.Random(7)
    path = tmp_path / "sums.jsonl"
    rows = []
    for i in range(10):
        a, b, c = rng.randint(11, 99), rng.randint(11, 99), rng.randint(2, 9)
        rows.append({"id": f"s{i}", "question": f"What is {a} * {b} + {c}?", "answer": str(a * b + c)})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture
def server():
    with StubLLMServer(latency=0.03) as s:
        yield s


def factory_for(server):
    settings = LLMSettings(base_url=server.url, model="stub")
    return lambda: HFInferenceModel(settings)


def max_overlap(server) -> int:
    marks = sorted([(r.started, 1) for r in server.requests] + [(r.finished, -1) for r in server.requests])
    best = now = 0
    for _, step in marks:
        now += step
        best = max(best, now)
    return best


def test_runner_through_the_stub_server_scores_and_overlaps(sums, server, tmp_path):
    items = load_dataset(str(sums))
    result = run_eval(items, MODES, model_factory=factory_for(server), registry=REGISTRY, concurrency=4,
                      out_dir=tmp_path / "out")
    modes = result.summary["modes"]
    assert {m: modes[m]["em"] for m in MODES} == {"think": 0.0, "act": 1.0, "react": 1.0}
    assert result.summary["metric"] == "accuracy"  # every gold answer is a number
    assert all(modes[m]["n"] == 10 and modes[m]["error_rate"] == 0 for m in MODES)
    assert modes["react"]["mean_llm_calls"] == 2 and modes["react"]["mean_tool_calls"] == 1
    records = [json.loads(line) for line in (tmp_path / "out" / RESULTS_FILE).read_text().splitlines()]
    assert len(records) == 30
    assert modes["react"]["mean_tokens"] == pytest.approx(
        sum(r["tokens"] for r in records if r["mode"] == "react") / 10)
    assert not any(r["tokens_estimated"] for r in records)  # the server reported usage
    assert 2 <= max_overlap(server) <= 4  # concurrent, and never more than the bound


def test_resume_through_the_stub_server(sums, server, tmp_path):
    items, out = load_dataset(str(sums)), tmp_path / "out"

    def interrupt_after_eight(event):
        if event.done - event.resumed >= 8:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_eval(items, MODES, model_factory=factory_for(server), registry=REGISTRY, concurrency=3, out_dir=out,
                 progress=interrupt_after_eight)
    first = (out / RESULTS_FILE).read_text().splitlines()
    assert 8 <= len(first) < 30
    before = len(server.requests)
    result = run_eval(items, MODES, model_factory=factory_for(server), registry=REGISTRY, concurrency=3, out_dir=out)
    new = server.requests[before:]
    saved = {(json.loads(line)["id"], json.loads(line)["mode"]) for line in first}
    remaining = [(i.id, m) for i in items for m in MODES if (i.id, m) not in saved]
    calls = {"think": 1, "act": 2, "react": 2}
    assert len(new) == sum(calls[m] for _, m in remaining)  # only the rest was asked
    final = [json.loads(line) for line in (out / RESULTS_FILE).read_text().splitlines()]
    assert len(final) == 30 and len({(r["id"], r["mode"]) for r in final}) == 30
    assert result.summary["modes"]["react"]["em"] == 1.0


@pytest.fixture
def stub_env(server, monkeypatch):
    monkeypatch.setenv("LLM_BASE_URL", server.url)
    monkeypatch.setenv("LLM_MODEL", "stub")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return server


def test_cli_json_prints_only_the_summary_object(sums, stub_env, tmp_path, capsys):
    out = tmp_path / "cli"
    argv = ["--dataset", str(sums), "--n", "10", "--modes", "think,act,react", "--concurrency", "4",
            "--out", str(out), "--json"]
    assert eval_main(argv, registry=REGISTRY) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert set(summary["modes"]) == set(MODES)
    for stats in summary["modes"].values():
        assert stats["n"] == 10 and 0 <= stats["em"] <= 1 and 0 <= stats["f1"] <= 1
    assert summary["modes"]["react"]["em"] == 1.0 and summary["modes"]["think"]["em"] == 0.0
    assert "30/30" in captured.err  # the progress bar went to stderr
    assert {"results.jsonl", "summary.json", "summary.csv", "results.csv", "meta.json", "traces"} <= {
        p.name for p in out.iterdir()}

    requests = len(stub_env.requests)
    assert eval_main(argv, registry=REGISTRY) == 0  # same --out: everything is done already
    assert len(stub_env.requests) == requests
    assert json.loads(capsys.readouterr().out)["modes"]["react"]["em"] == 1.0


def test_cli_table_shows_the_papers_figures_for_hotpotqa(stub_env, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert eval_main(["--dataset", "hotpotqa", "--n", "2", "--modes", "think,react"], registry=REGISTRY) == 0
    out = capsys.readouterr().out
    assert "Think-only (CoT)" in out and "29.4" in out and "27.4" in out and "ReAct → CoT-SC 35.1" in out
    runs = list((tmp_path / "runs").iterdir())
    assert len(runs) == 1 and runs[0].name.startswith("hotpotqa-")  # default --out


def test_cli_without_a_model_says_how_to_configure_one(sums, monkeypatch, capsys):
    for name in ("LLM_BASE_URL", "HF_TOKEN", "LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert eval_main(["--dataset", str(sums)], registry=REGISTRY) == 2
    assert LLMSettings.from_env().problem() in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--dataset", "nope"], "error: no dataset named 'nope'"),
    (["--dataset", "hotpotqa", "--modes", "think,tot"], "error: unknown mode(s) tot"),
    (["--dataset", "hotpotqa", "--concurrency", "0"], "must be at least 1"),
    (["--n", "5"], "the following arguments are required: --dataset"),
])
def test_cli_usage_errors_exit_2_with_one_line(argv, message, capsys):
    assert eval_main(argv, registry=REGISTRY) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
