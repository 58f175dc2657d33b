"""bench/report_table.py and bench/report.py on canned results (tests/bench/conftest.py): the rows, goals and
verdicts, without a benchmark."""

from __future__ import annotations

import argparse
import copy
import importlib
import re
from pathlib import Path

import pytest

from bench import report, report_table

ROOT = Path(__file__).resolve().parents[2]

# every row of the table, in order, with its goal (the canned short replies have visitors 20, 50 and 100, the long 50)
ROWS = [
    ("All vs slowest mode alone (wall ratio)", "≤ 1.15"),
    ("orchestration overhead per LLM call", "≤ 5 ms"),
    ("model client's connection-pool walks, 300 streams starting at once: CPU per request", "—"),
    ("short replies: 20 visitors vs 1, mode All (wall ratio, errors)", "≤ 1.3, 0 errors"),
    ("short replies: 50 visitors vs 1, mode All (wall ratio, errors)", "≤ 1.3, 0 errors"),
    ("short replies: 100 visitors vs 1, mode All (wall ratio, errors)", "≤ 1.5, 0 errors"),
    ("short replies: slowest first panel text, 50 visitors, beyond one visitor alone", "≤ +0.5 s"),
    ("short replies: 100 clicks at once, each visitor's first frame (panel text or place) after the click",
     "≤ 0.5 s (max)"),
    ("short replies: first text on screen after the server's first token (50 visitors × 3 panels)", "≤ 500 ms (max)"),
    ("short replies: CPU per streamed token, app + run workers (50 visitors)", "—"),
    ("runs at once per core that hold the crowd goals (APP_CONCURRENCY's default per core)", "≥ 50"),
    ("long replies: CPU per streamed token, app + run workers, one visitor alone", "≤ 0.35 ms"),
    ("long replies: CPU per streamed token, app + run workers, 50 visitors", "≤ 0.15 ms"),
    ("long replies: 50 visitors vs 1, mode All (wall ratio, errors)", "≤ 1.2, 0 errors"),
    ("long replies: last frame after the server's last token (50 visitors, max)", "≤ 0.5 s"),
    ("one visitor, All, 1,000 tokens/s per stream: last frame after the last token", "≤ 0.5 s"),
    ("app RSS growth over 500 runs from 500 sessions", "< 50 MB"),
    ("300 submissions at once: each told its place or 'full'", "no error, first word ≤ 5 s"),
    ("page load (GET / + JS + CSS) during that flood", "< 2 s"),
    ("idle app (app + run workers, nobody on the page): CPU per second", "≤ 5 ms/s"),
    *[row for who in ("200 phones in one room", "5 rooms × 40 phones") for row in (
        (f"class poll, {who} refreshing at 1 Hz: the teacher's run (All) vs without the phones (wall ratio, errors)",
         "≤ 1.1, 0 errors"),
        (f"class poll, {who}: a new vote on every other phone of its room (max)", "≤ 2 s, 0 errors"),
        (f"class poll, {who}: page load meanwhile (teacher's: GET / + JS + CSS; phone's: page + first JSON)", "≤ 2 s"),
        (f"class poll, {who}: the app's CPU per phone per second (app + run workers, beyond idle)", "—"))],
    ("one address's flood of 300 runs without cookies: another network's run starts (its first frame)",
     "≤ APP_RUNS_PER_ADDRESS started, never queued, ≤ 5 s"),
    ("a class of 40 phones behind one address, voting at once: the slowest tap to its answer", "all counted, ≤ 2 s"),
    ("benchmark concurrency (concurrent ÷ sequential wall)", "≤ 0.2"),
    ("sandbox call latency (python_repl, trivial program)", "median ≤ 150 ms, both"),
    ("CodeAct step overhead (one session: step wall − the program's own time)", "median ≤ 100 ms, both"),
    ("CodeAct session start (host process + guest, to the end of a first step x = 1)", "—"),
    ("32 paused CodeAct sessions: their host processes' memory in all", "≤ 1 GB"),
    ("calculator refusal (9**9**9)", "median ≤ 5 ms"),
]
NO_GOAL = {ROWS.index(r) for r in ROWS if r[1] == "—"}
POLL_RUN = ROWS[20][0]  # 200 phones in one room: the teacher's run
POLL_VOTE, POLL_PAGE = ROWS[25][0], ROWS[26][0]  # 5 rooms × 40 phones: a new vote, page loads


def cells(text: str) -> list[list[str]]:
    """The first table's body rows as [measure, figure, goal, verdict] (header and separator left out)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("| ")), len(lines))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("| ")), len(lines))
    return [[c.strip() for c in line.strip()[1:-1].split("|")] for line in lines[start + 2 : end]]


def row(text: str, measure: str) -> list[str]:
    found = [r for r in cells(text) if r[0] == measure]
    assert len(found) == 1, f"{measure!r} in\n{text}"
    return found[0]


def test_every_row_appears_with_its_goal_and_passes_on_the_readmes_figures(canned):
    table = cells(report.table(canned))
    assert [(m, g) for m, _, g, _ in table] == ROWS
    assert [v for *_, v in table] == ["" if i in NO_GOAL else "PASS" for i in range(len(ROWS))]
    assert all("None" not in f and "—" not in f and "nan" not in f for _, f, _, _ in table), table


def test_the_performance_page_quotes_the_same_rows_and_goals(canned):
    lines = (ROOT / "docs" / "performance.md").read_text().split("## The newest full run", 1)[1].splitlines()
    start = lines.index("| measure | figure | goal | |")
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    quoted = cells("\n".join(lines[start:end]))
    assert [(m, g) for m, _, g, _ in quoted] == [(m, g) for m, _, g, _ in cells(report.table(canned))]


def test_canned_results_hold_exactly_what_the_report_reads(canned):
    """Each canned figure shows in the table: drop one and the table changes or cannot be built."""
    whole = report.table(canned)

    def leaves(d: dict, path: tuple = ()) -> list[tuple]:
        """Paths to every figure; "*" stands for every visitor count or poll layout (the scripts print the same keys
        for each)."""
        if all(re.fullmatch(r"\d+(x\d+)?", k) for k in d):
            return leaves(next(iter(d.values())), (*path, "*"))
        return [p for k, v in d.items() for p in (leaves(v, (*path, k)) if isinstance(v, dict) else [(*path, k)])]

    def drop(d: dict, path: tuple) -> None:
        for key in (list(d) if path[0] == "*" else [path[0]]):
            if len(path) > 1:
                drop(d[key], path[1:])
            else:
                del d[key]

    for path in leaves(canned):
        cut = copy.deepcopy(canned)
        drop(cut, path)
        try:
            assert report.table(cut) != whole, f"report.py does not read {'.'.join(path)}: drop it from CANNED"
        except (KeyError, TypeError):
            pass  # report.py reads it (with [], so a script that stops printing it breaks the table)


@pytest.mark.parametrize(("path", "value", "measure", "verdict"), [
    (("engine", "ratio"), 1.15, "All vs slowest mode alone (wall ratio)", "PASS"),
    (("engine", "ratio"), 1.2, "All vs slowest mode alone (wall ratio)", "FAIL"),
    (("sandbox", "repl", "back_to_back", "median_ms"), 150.0, "sandbox call latency (python_repl, trivial program)",
     "PASS"),
    (("sandbox", "repl", "back_to_back", "median_ms"), 151.0, "sandbox call latency (python_repl, trivial program)",
     "FAIL"),
    (("sandbox", "repl", "spaced", "median_ms"), 151.0, "sandbox call latency (python_repl, trivial program)", "FAIL"),
    (("sandbox", "step", "trivial", "median_ms"), 101.0,
     "CodeAct step overhead (one session: step wall − the program's own time)", "FAIL"),
    (("sandbox", "step", "busy", "median_ms"), 101.0,
     "CodeAct step overhead (one session: step wall − the program's own time)", "FAIL"),
    (("sandbox", "paused", "pss_mb"), 1025.0, "32 paused CodeAct sessions: their host processes' memory in all",
     "FAIL"),
    (("sandbox", "paused", "rss_mb"), 1400.0, "32 paused CodeAct sessions: their host processes' memory in all",
     "PASS"),  # the goal is on PSS when it could be read; the RSS sum counts shared pages once per process
    (("app", "scale", "runs", "50", "errors"), 1, "short replies: 50 visitors vs 1, mode All (wall ratio, errors)",
     "FAIL"),
    (("app", "scale", "runs", "50", "ratio"), 1.31, "short replies: 50 visitors vs 1, mode All (wall ratio, errors)",
     "FAIL"),
    (("app_thread", "scale", "runs", "50", "ratio"), 1.31,
     "short replies: 50 visitors vs 1, mode All (wall ratio, errors)", "FAIL"),  # both stand-ins must hold it
    (("app_thread", "scale", "runs", "50", "beyond_alone_s"), 0.51,
     "short replies: slowest first panel text, 50 visitors, beyond one visitor alone", "FAIL"),
    (("app", "scale", "runs", "100", "start_max_s"), 0.51,
     "short replies: 100 clicks at once, each visitor's first frame (panel text or place) after the click", "FAIL"),
    (("app_long_thread", "scale", "alone", "cpu_ms_per_token"), 0.36,
     "long replies: CPU per streamed token, app + run workers, one visitor alone", "FAIL"),
    (("app_long", "scale", "runs", "50", "cpu_ms_per_token"), 0.16,
     "long replies: CPU per streamed token, app + run workers, 50 visitors", "FAIL"),
    (("app_long", "scale", "runs", "50", "last_frame_max_s"), 0.51,
     "long replies: last frame after the server's last token (50 visitors, max)", "FAIL"),
    (("app_long", "fast", "errors"), 1,
     "one visitor, All, 1,000 tokens/s per stream: last frame after the last token", "FAIL"),
    (("app", "memory", "errors"), 2, "app RSS growth over 500 runs from 500 sessions", "FAIL"),
    (("app", "flood", "outcomes", "finished"), 263, "300 submissions at once: each told its place or 'full'",
     "FAIL"),  # one of 300 neither ran nor was told 'full'
    (("app", "flood", "page_max_s"), 1.99, "page load (GET / + JS + CSS) during that flood", "PASS"),
    (("app", "flood", "page_max_s"), 2.0, "page load (GET / + JS + CSS) during that flood", "FAIL"),
    (("poll", "layouts", "1x200", "ratio"), 1.1, POLL_RUN, "PASS"),
    (("poll", "layouts", "1x200", "ratio"), 1.11, POLL_RUN, "FAIL"),
    (("poll", "layouts", "1x200", "run_errors"), 1, POLL_RUN, "FAIL"),
    (("poll", "layouts", "5x40", "vote_seen_max_s"), 2.01, POLL_VOTE, "FAIL"),
    (("poll", "layouts", "5x40", "unseen"), 1, POLL_VOTE, "FAIL"),  # a phone that never saw a vote
    (("poll", "layouts", "5x40", "errors"), 1, POLL_VOTE, "FAIL"),
    (("poll", "layouts", "5x40", "phone_page_max_s"), 2.01, POLL_PAGE, "FAIL"),
    (("poll", "layouts", "5x40", "join_max_s"), 2.01, POLL_PAGE, "FAIL"),
])
def test_a_verdict_follows_its_figure(canned, path, value, measure, verdict):
    target = canned
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    text = report.table(canned)
    assert row(text, measure)[3] == verdict
    others = [r[3] for r in cells(text) if r[0] != measure]
    assert set(others) == {"PASS", ""}  # one figure moved, one verdict moved


def test_main_exits_1_when_a_figure_fails(canned, monkeypatch, capsys):
    plans = [*report.FULL.items(), *report.SMOKE.items()]
    monkeypatch.setattr(report, "run", lambda script, args: canned[next(n for n, p in plans if p[1] is args)])
    assert report.main(["--smoke"]) == 0
    assert "`python -m bench --smoke`" in capsys.readouterr().out
    canned["eval"]["ratio"] = 0.5
    assert report.main([]) == 1
    assert row(capsys.readouterr().out, "benchmark concurrency (concurrent ÷ sequential wall)")[3] == "FAIL"


def test_a_failed_or_missing_script_is_named_and_its_rows_have_no_verdict(canned):
    canned["engine"] = {"failed": "ModuleNotFoundError: No module named 'agents'"}
    canned["app"] = {"failed": "timed out after 900 s"}
    del canned["tools"], canned["sandbox"]
    text = report.table(canned)
    sandbox = [r for r in ROWS if "sandbox" in r[0] or "CodeAct" in r[0]]
    assert len(sandbox) == 4
    for measure, goal in ROWS[:3] + sandbox + ROWS[-1:]:  # engine's rows, the sandbox's and the calculator's
        _, figure, shown_goal, verdict = row(text, measure)
        assert (shown_goal, verdict) == (goal, "") and "—" in figure, (measure, figure)
    assert row(text, "benchmark concurrency (concurrent ÷ sequential wall)")[3] == "PASS"  # eval ran: unchanged
    failed = [line for line in text.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 2 and failed[0].startswith("FAILED engine: ") and "ModuleNotFoundError" in failed[0]
    assert failed[1] == "FAILED app: timed out after 900 s"
    assert not any(r[3] for r in cells(report.table({})))  # nothing ran: every row, no verdict, no crash


def test_main_exits_2_when_a_benchmark_did_not_run(canned, monkeypatch, capsys):
    canned["tools"] = {"failed": "timed out after 900 s"}
    monkeypatch.setattr(report, "run", lambda script, args: canned[next(n for n, p in report.FULL.items()
                                                                        if p[1] is args)])
    assert report.main([]) == 2  # its rows have no verdict: that must not read as a pass
    assert "FAILED tools: timed out after 900 s" in capsys.readouterr().out
    assert report.main(["--json"]) == 2 and '"failed": "timed out after 900 s"' in capsys.readouterr().out


def test_no_first_text_matched_is_a_dash_not_a_crash(canned):
    for name in ("app", "app_thread"):
        for key in ("first_text_max_ms", "first_text_median_ms"):
            canned[name]["scale"]["runs"]["50"][key] = None  # what bench_app.py prints when nothing matched
        del canned[name]["scale"]["runs"]["50"]["spread"]["first_text_max_ms"]
    measure = "short replies: first text on screen after the server's first token (50 visitors × 3 panels)"
    assert row(report.table(canned), measure)[1:] == ["async: max —, median — · thread: max —, median —",
                                                      "≤ 500 ms (max)", ""]


def test_the_runs_per_core_row_is_the_largest_crowd_that_held_with_both_stand_ins(canned):
    measure = "runs at once per core that hold the crowd goals (APP_CONCURRENCY's default per core)"
    assert row(report.table(canned), measure)[1].startswith("50 (100 visitors on 2 cores")
    canned["app_thread"]["scale"]["runs"]["100"]["ratio"] = 1.6  # 100 visitors held with one stand-in only
    assert row(report.table(canned), measure)[1:] == ["25 (50 visitors on 2 cores; the default: 50)", "≥ 50", "FAIL"]


def test_run_reports_a_script_that_does_not_start():
    result = report.run("no_such_script", [])
    assert set(result) == {"failed"} and isinstance(result["failed"], str)
    assert re.search(r"can't open file|No such file", result["failed"])


class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def test_every_plan_passes_flags_the_scripts_accept(monkeypatch):
    """FULL, QUICK and SMOKE: each script's own argparse parses them (the smoke run only tries SMOKE's)."""
    real_parse = argparse.ArgumentParser.parse_args

    def capture(self, args=None, namespace=None):
        raise _Parsed(self)

    assert set(report.FULL) == set(report.QUICK) == set(report.SMOKE)
    for plan in (report.FULL, report.QUICK, report.SMOKE):
        for name, (script, flags) in plan.items():
            module = importlib.import_module(f"bench.bench_{script}")
            with monkeypatch.context() as m:
                m.setattr(argparse.ArgumentParser, "parse_args", capture)
                with pytest.raises(_Parsed) as parsed:
                    module.main()
            parsed.value.parser.allow_abbrev = False  # a plan's flag must be spelled out, not a prefix of one
            try:
                assert real_parse(parsed.value.parser, ["--json", *flags]).json
            except SystemExit:
                pytest.fail(f"bench_{script}.py refuses {name}'s {flags}")


def test_figures_give_each_rows_value_in_its_goals_unit_the_worse_stand_in_or_infinity_for_errors(canned):
    assert [(m, g, met) for m, _, g, met in report_table.figures(canned)] == [
        (m, g, met) for m, _, g, met in report.rows(canned)]
    values = {m: v for m, v, *_ in report_table.figures(canned)}
    assert values["32 paused CodeAct sessions: their host processes' memory in all"] == pytest.approx(610 / 1024)
    canned["app_thread"]["scale"]["runs"]["50"]["beyond_alone_s"] = 0.45
    canned["app"]["scale"]["runs"]["20"]["errors"] = 1
    values = {m: v for m, v, *_ in report_table.figures(canned)}
    assert values["short replies: slowest first panel text, 50 visitors, beyond one visitor alone"] == 0.45
    assert values["short replies: 20 visitors vs 1, mode All (wall ratio, errors)"] == float("inf")
