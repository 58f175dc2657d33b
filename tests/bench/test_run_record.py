"""bench/run_record.py: what a run of ``python -m bench`` records, where its file goes, and which runs write one.

``report.run`` is replaced by the canned results (tests/bench/conftest.py), so no benchmark runs; the results
folder is the test's own (conftest's ``results_dir``).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bench import report, run_record

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def canned_runs(canned, monkeypatch) -> dict:
    """``report.run`` answers every plan's benchmark with its canned figures (and the speed probe at once)."""
    plans = [*report.FULL.items(), *report.QUICK.items(), *report.SMOKE.items()]
    monkeypatch.setattr(report, "run", lambda script, args: canned[next(n for n, p in plans if p[1] is args)])
    monkeypatch.setattr(report, "speed_ms", lambda: 21.5)
    return canned


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.json")) if folder.exists() else []


def test_a_full_run_records_its_command_plan_commit_machine_and_raw_figures(canned_runs, results_dir, capsys):
    assert report.main([]) == 0
    out = capsys.readouterr()
    [name] = files(results_dir)
    run = run_record.read(results_dir / name)
    assert run["format"] == run_record.FORMAT and run["command"] == "python -m bench" and run["plan"] == "full"
    assert run["results"] == canned_runs  # exactly what --json prints
    assert json.loads(json.dumps(canned_runs)) == run["results"]
    assert run["benchmarks"]["engine"] == "python bench/bench_engine.py --json --repeats 3"
    assert set(run["benchmarks"]) == set(report.FULL) and run["only"] is None
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode == 0:  # a checkout (CI's copy of the tree has no .git: "unknown")
        assert run["commit"] == head.stdout.strip()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", run["date"])
    assert name == f"{run['date'][:10]}-{run['commit'][:7]}-full.json"
    machine = run["machine"]
    assert machine["cores"] >= 1 and machine["python"].startswith("3.")
    assert machine["speed_ms"] == {"start": 21.5, "end": 21.5}
    assert set(machine["load_average"]) == {"start", "end"} and min(machine["load_average"].values()) >= 0
    assert run_record.summary(run) in out.out and f"results: {results_dir / name}" in out.err


def test_quick_and_smoke_runs_write_a_file_only_when_asked_marked_with_their_plan(canned_runs, results_dir):
    assert report.main(["--smoke"]) == 0 and report.main(["--quick", "--json"]) == 0
    assert files(results_dir) == []  # what tests/bench runs leaves nothing behind
    assert report.main(["--smoke", "--record"]) == 0
    [name] = files(results_dir)
    assert name.endswith("-smoke.json") and run_record.read(results_dir / name)["plan"] == "smoke"
    assert not run_record.is_full(run_record.read(results_dir / name))


def test_record_path_chooses_the_file_and_no_record_skips_it(canned_runs, results_dir, tmp_path):
    assert report.main(["--no-record"]) == 0
    assert files(results_dir) == []
    chosen = tmp_path / "elsewhere" / "mine.json"
    assert report.main(["--quick", "--record", str(chosen)]) == 0
    assert run_record.read(chosen)["command"] == f"python -m bench --quick --record {chosen}"
    assert files(results_dir) == []
    with pytest.raises(SystemExit):
        report.main(["--record", "--no-record"])


def test_part_of_a_plan_is_recorded_only_when_asked_and_is_never_a_full_run(canned_runs, results_dir):
    assert report.main(["--only", "engine", "tools"]) == 0
    assert files(results_dir) == []
    assert report.main(["--only", "engine", "--record"]) == 0
    [name] = files(results_dir)
    run = run_record.read(results_dir / name)
    assert name.endswith("-full-partial.json") and run["only"] == ["engine"] and list(run["results"]) == ["engine"]
    assert not run_record.is_full(run)


def test_the_same_commit_measured_again_that_day_gets_the_next_name(results_dir):
    run = {"date": "2026-11-28T10:00:00Z", "commit": "aeeee051b70", "plan": "full", "only": None}
    first = run_record.write(run, run_record.default_path(run))
    second = run_record.write(run, run_record.default_path(run))
    assert (first.name, second.name) == ("2026-11-28-aeeee05-full.json", "2026-11-28-aeeee05-full-2.json")
    assert run_record.default_path(run).name == "2026-11-28-aeeee05-full-3.json"


def test_only_the_apps_named_settings_are_recorded_never_a_secret(monkeypatch):
    monkeypatch.setenv("APP_PATCHES_OFF", "page_cache")
    monkeypatch.setenv("APP_SECRET", "s3cret")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    run = run_record.record("python -m bench", "quick", {}, None, {}, date="2026-12-01T00:00:00Z", seconds=1.0,
                            machine={"cores": 2, "speed_ms": {"start": 1, "end": 1},
                                     "load_average": {"start": 0, "end": 0}})
    assert run["settings"] == {"APP_PATCHES_OFF": "page_cache"}
    assert "secret" not in json.dumps(run)


def test_load_reads_every_file_oldest_first_and_names_one_it_cannot_read(results_dir):
    base = {"format": run_record.FORMAT, "command": "python -m bench", "plan": "full", "commit": "abc", "seconds": 1,
            "machine": {}, "results": {}}
    for name, date in (("b.json", "2026-12-02T08:00:00Z"), ("a.json", "2026-12-03T08:00:00Z"),
                       ("c.json", "2026-11-28")):
        run_record.write({**base, "date": date}, results_dir / name)
    assert [r["name"] for r in run_record.load()] == ["c.json", "b.json", "a.json"]
    (results_dir / "d.json").write_text("{not json")
    with pytest.raises(run_record.BadResults, match=r"^d\.json: not a results file"):
        run_record.load()
    (results_dir / "d.json").write_text(json.dumps({"format": run_record.FORMAT, "plan": "full"}))
    with pytest.raises(run_record.BadResults, match=r"^d\.json: a results file without command, commit, date"):
        run_record.load()
