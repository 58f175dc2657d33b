"""End to end: the runner and the eval CLI through the real HF client against the local stub server.

No monkeypatched client and no network: ``HFInferenceModel`` talks HTTP/SSE to
``StubLLMServer`` on 127.0.0.1, whose toy model finds the arithmetic in the question and
uses the calculator (Act, ReAct) or can only guess (Think).
"""

from __future__ import annotations

import ast
import json
import operator
import time

import pytest

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


def _settled_count(server, quiet_s: float = 0.5, limit_s: float = 10.0) -> int:
    """The server's request count once it has not changed for ``quiet_s``."""
    deadline, count = time.monotonic() + limit_s, len(server.requests)
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        if len(server.requests) == count:
            break
        count = len(server.requests)
    return count


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
    before = _settled_count(server)  # a request the cancelled run sent may reach the busy stub a moment later
    result = run_eval(items, MODES, model_factory=factory_for(server), registry=REGISTRY, concurrency=3, out_dir=out)
    new = server.requests[before:]
    saved = {(json.loads(line)["id"], json.loads(line)["mode"]) for line in first}
    remaining = [(i.id, m) for i in items for m in MODES if (i.id, m) not in saved]
    calls = {"think": 1, "act": 2, "react": 2}
    assert len(new) == sum(calls[m] for _, m in remaining)  # only the rest was asked
    final = [json.loads(line) for line in (out / RESULTS_FILE).read_text().splitlines()]
    assert len(final) == 30 and len({(r["id"], r["mode"]) for r in final}) == 30
    assert result.summary["modes"]["react"]["em"] == 1.0
