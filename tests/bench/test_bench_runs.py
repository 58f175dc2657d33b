"""Every benchmark really runs: ``python -m bench --smoke --json``, against the local stubs.

``--smoke`` is bench/report.py's smallest plan: every script, every app scenario (2 visitors, 4 runs,
4 submissions, short and long replies, one configuration under py-spy), so every key of the table is
printed. Its figures mean little; what is checked is that each script runs, its JSON parses, it carries every
key report.py reads (the canned shapes of conftest.py), the table builds from it with a figure in every row, and
it writes no results file into bench/results/.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench import report

ROOT = Path(__file__).resolve().parents[2]


def missing(canned: dict, real: object, path: str = "") -> list[str]:
    """Keys of ``canned`` that ``real`` lacks; a dict keyed by visitor counts (or poll layouts, "1x200") is one
    template per key."""
    if not isinstance(real, dict):
        return [path or "."]
    if canned and all(re.fullmatch(r"\d+(x\d+)?", k) for k in canned):
        template = next(iter(canned.values()))
        if not real:
            return [f"{path}.<any>"]
        return [m for k, v in real.items() for m in missing(template, v, f"{path}.{k}")]
    out: list[str] = []
    for k, v in canned.items():
        if k not in real:
            out.append(f"{path}.{k}")
        elif isinstance(v, dict):
            out += missing(v, real[k], f"{path}.{k}")
    return out


def smoke_run(timeout: float = 240) -> tuple[int, str, str]:
    """``python -m bench --smoke --json`` in its own process group (so a hang leaves no app or stub behind), with
    this interpreter's folder off ``PATH``, as the README's test command runs from a venv that is not activated."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_"))}
    venv = Path(sys.executable).parent.absolute()  # as from a virtualenv not activated: its tools are not on PATH
    path = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).absolute() != venv)
    env.update(GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1", PATH=path)
    proc = subprocess.Popen([sys.executable, "-m", "bench", "--smoke", "--json"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"python -m bench --smoke took over {timeout:.0f} s:\n{err[-3000:]}")
    return proc.returncode, out, err


@pytest.mark.slow
@pytest.mark.timeout(300)  # the run's own limit (240 s) must be the one that speaks, not pytest's default
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: py-spy samples the app's run workers, which are "
                                             "non-dumpable, and the sandbox's memory row reads their /proc")
def test_every_benchmark_runs_and_prints_what_the_report_reads(canned):
    committed = sorted((ROOT / "bench" / "results").iterdir())
    code, out, err = smoke_run()
    assert code in (0, 1), err[-3000:]  # 2: a benchmark did not run (1: a tiny run's figure missed its goal)
    assert sorted((ROOT / "bench" / "results").iterdir()) == committed  # a smoke run leaves no results file
    results = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    assert {n: r["failed"] for n, r in results.items() if "failed" in r} == {}, err[-3000:]
    assert set(results) == set(canned)
    assert {n: missing(canned[n], results[n]) for n in canned} == {n: [] for n in canned}
    for name in ("app", "app_thread", "app_long", "app_long_thread"):  # both stand-ins
        assert list(results[name]["scale"]["runs"]) == ["2"], name
    rows = report.rows(results)
    assert list(results["poll"]["layouts"]) == ["1x3", "2x2"]
    assert len(rows) == 34  # one short-reply crowd: two scale rows fewer than the canned table (20, 50, 100)
    for measure, figure, goal, met in rows:
        assert "None" not in figure and "—" not in figure and "nan" not in figure, (measure, figure)
        assert (met is None) == (goal == "—"), (measure, figure, goal)  # a figure for every goal (PASS or FAIL)
    assert "FAILED" not in report.table(results)
