"""``python -m agents eval`` (moved from tests/agents/test_evaluate_e2e.py with the CLI into agents/cli/):
the summary JSON, the paper's table, resuming, and one-line usage errors with exit code 2.

Through the real HF client against the local stub server, whose toy model uses the calculator.
"""

from __future__ import annotations

import json

import pytest

from agents.cli import eval_main
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from tools.calculator import calculate
from tools.registry import ToolRegistry

REGISTRY = ToolRegistry([calculate])
MODES = ["think", "act", "react"]


@pytest.fixture
def server():
    with StubLLMServer(latency=0.03) as s:
        yield s


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


def test_cli_k_runs_each_item_k_times_and_reports_pass_hat_k(sums, stub_env, tmp_path, capsys):
    out = tmp_path / "k"
    argv = ["--dataset", str(sums), "--n", "2", "--modes", "think,react", "--k", "3", "--out", str(out)]
    assert eval_main([*argv, "--json"], registry=REGISTRY) == 0
    summary = json.loads(capsys.readouterr().out)
    react, think = summary["modes"]["react"], summary["modes"]["think"]
    assert summary["k"] == 3 and (react["tries"], react["correct"], react["pass_hat_k"]) == (6, 6, 1.0)
    assert (think["tries"], think["correct"], think["pass_hat_k"], think["tokens_per_correct"]) == (6, 0, 0.0, None)
    assert len((out / "results.jsonl").read_text().splitlines()) == 12
    assert json.loads((out / "meta.json").read_text())["k"] == 3
    requests = len(stub_env.requests)
    assert eval_main(argv, registry=REGISTRY) == 0  # same --out: every try is done already
    assert len(stub_env.requests) == requests
    table = capsys.readouterr().out
    assert "Reliability and cost, 3 tries per item:" in table and "pass^3 %" in table and "6 / 6" in table


def test_cli_temperature_reaches_every_try_s_request(sums, stub_env, tmp_path, capsys):
    out = tmp_path / "t"
    argv = ["--dataset", str(sums), "--n", "1", "--modes", "think", "--k", "2", "--temperature", "0.7"]
    assert eval_main([*argv, "--out", str(out), "--json"], registry=REGISTRY) == 0
    assert [r.body["temperature"] for r in stub_env.requests] == [0.7, 0.7]
    assert json.loads((out / "meta.json").read_text())["temperature"] == 0.7


def test_cli_table_shows_the_papers_figures_for_hotpotqa(stub_env, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert eval_main(["--dataset", "hotpotqa", "--n", "2", "--modes", "think,react"], registry=REGISTRY) == 0
    out = capsys.readouterr().out
    assert "Think-only (CoT)" in out and "29.4" in out and "27.4" in out and "ReAct → CoT-SC 35.1" in out
    runs = list((tmp_path / "runs").iterdir())
    assert len(runs) == 1 and runs[0].name.startswith("hotpotqa-")  # default --out


def test_cli_runs_reflexion_graded_against_each_items_answer(sums, stub_env, tmp_path, capsys):
    """Each item's answer reaches Reflexion: the toy computes it in trial 1, graded by exact match (no check call)."""
    argv = ["--dataset", str(sums), "--n", "3", "--modes", "react,reflexion", "--trials", "2", "--out",
            str(tmp_path / "r"), "--json"]
    assert eval_main(argv, registry=REGISTRY) == 0
    modes = json.loads(capsys.readouterr().out)["modes"]
    assert modes["reflexion"]["em"] == modes["react"]["em"] == 1.0
    assert modes["reflexion"]["mean_llm_calls"] == modes["react"]["mean_llm_calls"] == 2
    assert json.loads((tmp_path / "r" / "meta.json").read_text())["trials"] == 2


def test_cli_table_shows_reflexions_own_papers_figure_on_hotpotqa(stub_env, tmp_path, capsys):
    argv = ["--dataset", "hotpotqa", "--n", "1", "--modes", "reflexion", "--trials", "2", "--out", str(tmp_path / "h")]
    assert eval_main(argv, registry=REGISTRY) == 0
    out = capsys.readouterr().out
    assert "ReAct + Reflexion" in out and "54" in out and "Shinn et al." in out


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
    (["--dataset", "hotpotqa", "--trials", "0"], "--trials must be between 1 and 10"),
    (["--dataset", "hotpotqa", "--k", "0"], "--k must be between 1 and 10"),
    (["--dataset", "hotpotqa", "--k", "three"], "argument --k: invalid int value: 'three'"),
    (["--dataset", "hotpotqa", "--temperature", "2.5"], "--temperature must be between 0 and 2"),
    (["--dataset", "hotpotqa", "--modes", "react,react_placebo", "--protocol", "tools"],
     "error: ReAct (placebo example) runs under the text protocol only"),
])
def test_cli_usage_errors_exit_2_with_one_line(argv, message, capsys):
    assert eval_main(argv, registry=REGISTRY) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_invalid_environment_variable_is_one_line_and_exit_2(sums, stub_env, monkeypatch, capsys):
    monkeypatch.setenv("LLM_MAX_TOKENS", "lots")
    assert eval_main(["--dataset", str(sums)], registry=REGISTRY) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["python -m agents eval: error: LLM_MAX_TOKENS must be an integer "
                                        "from 1 to 1000000, got 'lots'"]
    assert not stub_env.requests
