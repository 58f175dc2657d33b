"""bench/page.py: docs/performance.md and the README's figures are what ``python -m bench --write`` renders from the
committed results files, the README stays a one-minute read, and the page's tables follow their runs."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from bench import page, report, run_record
from bench.report_table import goals_table, rows

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "bench" / "results"
FRONT_MATTER = {"title": "Think · Act · ReAct", "sdk": "gradio", "python_version": '"3.12"', "app_file": "app.py",
                "hf_oauth": "true"}


def committed() -> list[dict]:
    return run_record.load(COMMITTED)


def a_run(figures: dict, date: str, commit: str = "1234567890", plan: str = "full", speed: float = 20.0,
          **extra: object) -> dict:
    name = f"{date[:10]}-{commit[:7]}-{plan}.json"
    return {"format": run_record.FORMAT, "command": "python -m bench", "plan": plan, "only": None, "commit": commit,
            "dirty": False, "date": date, "seconds": 900, "name": name, "results": copy.deepcopy(figures),
            "machine": {"cores": 2, "speed_ms": {"start": speed, "end": speed + 1.5},
                        "load_average": {"start": 1.0, "end": 0.5}}, **extra}


def test_the_committed_page_is_what_write_renders_from_the_committed_results():
    rendered = page.render(committed(), page.TEMPLATE.read_text(encoding="utf-8"))
    assert (ROOT / "docs" / "performance.md").read_text(encoding="utf-8") == rendered, (
        "docs/performance.md is not what the results render: run python -m bench --write")


def test_the_readmes_headline_figures_are_the_newest_full_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert page.with_headlines(readme, page.headlines(committed())) == readme, (
        "README.md's headline figures are not the newest full run's: run python -m bench --write")
    newest = [run for run in committed() if run_record.is_full(run)][-1]
    block = readme[readme.index(page.BEGIN):readme.index(page.END)]
    assert f"commit {newest['commit'][:7]}" in block and len(re.findall(r"^- .*\*\*", block, re.M)) in range(3, 6)


def test_the_readme_is_a_one_minute_read_under_the_spaces_front_matter():
    data = (ROOT / "README.md").read_bytes()
    assert len(data.decode("utf-8").splitlines()) <= 120 and len(data) <= 8 * 1024
    text = data.decode("utf-8")
    front = text.split("---\n")[1]
    fields = dict(line.split(": ", 1) for line in front.splitlines() if ": " in line)
    assert {k: fields.get(k) for k in FRONT_MATTER} == FRONT_MATTER
    gradio = re.search(r"^gradio(?:\[[^\]]*\])?\s*==\s*([\d.]+)", (ROOT / "requirements.txt").read_text(), re.M)
    assert gradio and fields["sdk_version"] == gradio.group(1)  # the Space runs the gradio the app is tested on
    for link in ("docs/performance.md", "docs/configuration.md", "docs/screenshot.png", "ARCHITECTURE.md"):
        assert f"]({link}" in text, link


def test_a_seeded_file_says_it_was_transcribed_and_the_page_says_so():
    seeded = [run for run in committed() if run.get("transcribed")]
    for run in seeded:
        assert "README.md" in run["transcribed"] and "not written by `python -m bench`" in run["transcribed"]
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    newest = [run for run in committed() if run_record.is_full(run)][-1]
    assert ("**Transcribed by hand:**" in text) == bool(newest.get("transcribed"))


def test_every_committed_full_run_builds_every_row_of_todays_table():
    for run in committed():
        if run_record.is_full(run):
            assert [m for m, *_ in rows(run["results"])], run["name"]
            assert "FAILED" not in goals_table(run["results"]), run["name"]


def test_the_newest_full_run_is_the_page_s_table_and_quick_or_partial_runs_are_not(canned):
    old = a_run(canned, "2026-12-01T08:00:00Z", "aaaaaaa111")
    canned["eval"]["ratio"] = 0.19
    new = a_run(canned, "2026-12-02T08:00:00Z", "bbbbbbb222", speed=30.0)
    quick = a_run({**canned, "eval": {**canned["eval"], "ratio": 0.5}}, "2026-12-03T08:00:00Z", plan="quick")
    partial = a_run(canned, "2026-12-04T08:00:00Z", only=["engine"])
    text = page.render([old, new, quick, partial], "{{newest_run}}\n\n{{newest_table}}\n\n{{runs_table}}")
    assert "of commit bbbbbbb, 2026-12-02" in text and "30.0 → 31.5 ms" in text
    assert goals_table(new["results"]) in text
    side = text.split("| row | goal |", 1)[1].splitlines()
    assert "2026-12-01 aaaaaaa" in side[0] and "2026-12-02 bbbbbbb" in side[0] and "2026-12-03" not in side[0]
    machine = next(line for line in side if line.startswith("| machine speed"))
    assert machine.endswith("| 20.0 → 21.5 ms | 30.0 → 31.5 ms |")
    concurrency = next(line for line in side if line.startswith("| benchmark concurrency"))
    assert concurrency.endswith("| ≤ 0.2 | 0.136 | 0.19 |")


def test_runs_side_by_side_show_a_miss_and_keep_the_newest_runs(canned, monkeypatch):
    runs = [a_run(canned, f"2026-12-{day:02d}T08:00:00Z", f"{day:07d}") for day in range(1, 5)]
    runs[-1]["results"]["app_thread"]["scale"]["runs"]["50"]["errors"] = 2
    monkeypatch.setattr(page, "SIDE_BY_SIDE", 3)
    side = page.runs_table(runs).splitlines()
    assert "2026-12-01" not in side[0] and side[0].count("](../bench/results/") == 3
    crowd = next(line for line in side if line.startswith("| short replies: 50 visitors vs 1"))
    assert crowd.endswith("| 1.12 | 1.12 | errors FAIL |")


def test_a_file_older_than_todays_table_gets_a_line_not_a_crash(canned):
    old = a_run(canned, "2026-12-01T08:00:00Z", "aaaaaaa111")
    del old["results"]["engine"]["overhead_ms_per_call"]  # a key today's table reads with []
    old["results"]["tools"] = {"refusal_median_ms": 0.2}  # read with .get(): a dash, no verdict
    del old["results"]["app"]["idle"]["cpu_ms_per_s"]
    new = a_run(canned, "2026-12-02T08:00:00Z", "bbbbbbb222")
    table = page.runs_table([old, new])
    assert "Today's table cannot read `bench/results/2026-12-01-aaaaaaa-full.json` (KeyError" in table


def test_a_comparison_sets_two_named_files_side_by_side_and_names_the_goals_lost(canned):
    before = a_run(canned, "2026-12-01T08:00:00Z", "aaaaaaa111", plan="quick")
    after = a_run(canned, "2026-12-01T09:00:00Z", "bbbbbbb222", plan="quick")
    after["results"]["engine"]["ratio"] = 1.2
    c = page.Comparison("Issue 49: the app on its framework", before["name"], after["name"])
    text = page.render([before, after], "{{comparisons}}", [c])
    assert text.startswith("### Issue 49: the app on its framework")
    assert "Before: `python -m bench` of commit aaaaaaa" in text
    assert "After: `python -m bench` of commit bbbbbbb" in text
    assert "| All vs slowest mode alone (wall ratio) | ≤ 1.15 | 1.007 | PASS | 1.200 | FAIL |" in text
    assert text.endswith("Goals met before and not after: All vs slowest mode alone (wall ratio).")
    assert page.render([before, before], "{{comparisons}}", [page.Comparison("same", before["name"],
                                                                             before["name"])]).endswith("none.")
    with pytest.raises(page.PageError, match=r"^COMPARISONS \(gone\): no nowhere\.json in bench/results/$"):
        page.render([before], "{{comparisons}}", [page.Comparison("gone", before["name"], "nowhere.json")])


def test_a_comparison_is_one_declared_line():
    assert all(isinstance(c, page.Comparison) for c in page.COMPARISONS)
    names = {run["name"] for run in committed()}
    assert [n for c in page.COMPARISONS for n in (c.before, c.after) if n not in names] == []


@pytest.mark.parametrize(("value", "goal", "shown"), [
    (1.005, "≤ 1.15", "1.00"), (1.23, "≤ 1.5, 0 errors", "1.23"), (0.22, "≤ +0.5 s", "+0.22 s"),
    (109, "≤ 500 ms (max)", "109 ms"), (0.264, "≤ 0.35 ms", "0.264 ms"), (14.3, "< 50 MB", "14.3 MB"),
    (2.0, "≤ 5 ms/s", "2.00 ms/s"), (0.5, "≤ 1 GB", "0.5 GB"), (52.3, "median ≤ 150 ms, both", "52.3 ms"),
    (0.9, "no error, first word ≤ 5 s", "0.9 s"), (50.0, "≥ 50", "50.0"), (float("inf"), "≤ 1.3, 0 errors", "errors"),
    (None, "≤ 2 s", "—"),
])
def test_a_brief_figure_carries_its_goals_unit(value, goal, shown):
    assert page.brief(value, goal) == shown


def test_headlines_name_rows_of_the_table_and_fail_loudly_when_one_is_gone(canned):
    measures = [m for m, *_ in rows(canned)]
    assert [m for _, m in page.HEADLINES if m not in measures] == []
    del canned["sandbox"]["repl"]
    run = a_run(canned, "2026-12-01T08:00:00Z")
    block = page.headlines([run])
    assert "- A sandboxed Python call (median): **—**" in block  # the row is there, its figure is not
    canned["app"]["scale"]["runs"].pop("100")
    canned["app_thread"]["scale"]["runs"].pop("100")
    with pytest.raises(page.PageError, match="has no row 'short replies: 100 visitors vs 1"):
        page.headlines([a_run(canned, "2026-12-01T08:00:00Z")])


def test_the_template_readme_and_an_empty_folder_fail_or_render_plainly():
    with pytest.raises(page.PageError, match=r"no such place: nowhere"):
        page.render([], "{{newest_table}} {{nowhere}}")
    assert page.render([], "{{newest_run}}|{{runs_table}}") == ("No full run of `python -m bench` is recorded "
                                                              "yet.|No full run is recorded yet.")
    with pytest.raises(page.PageError, match="README.md has no headline block"):
        page.with_headlines("# a README without its markers\n", page.headlines([]))


def test_write_renders_both_files_and_a_bad_results_file_is_one_line_and_writes_nothing(
        canned, results_dir, tmp_path, monkeypatch, capsys):
    target, readme = tmp_path / "performance.md", tmp_path / "README.md"
    readme.write_text(f"# README\n\n{page.BEGIN}\nold figures\n{page.END}\n\nthe rest\n", encoding="utf-8")
    monkeypatch.setattr(page, "PAGE", target)
    monkeypatch.setattr(page, "README", readme)
    run = a_run(canned, "2026-12-01T08:00:00Z", "ccccccc333")
    run_record.write({k: v for k, v in run.items() if k != "name"}, results_dir / run["name"])
    assert report.main(["--write"]) == 0
    assert target.read_text(encoding="utf-8") == page.render([run], page.TEMPLATE.read_text(encoding="utf-8"))
    text = readme.read_text(encoding="utf-8")
    assert "old figures" not in text and "commit ccccccc" in text and text.endswith("\n\nthe rest\n")
    capsys.readouterr()
    (results_dir / "broken.json").write_text("[1, 2")
    target.write_text("untouched")
    assert report.main(["--write"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m bench --write: broken.json: not a results file") and err.count("\n") == 1
    assert target.read_text() == "untouched"
    with pytest.raises(SystemExit):
        report.main(["--write", "--quick"])  # --write runs no benchmark
