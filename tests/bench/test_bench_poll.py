"""The class poll's benchmark (bench_poll.py): how a vote's delay is read off what each phone saw, and a run at the
smallest size (a room of 3 phones, then 2 rooms of 2) through the real app, printing what the report reads."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench import report
from bench.phones import Phone, summary
from tests.bench.test_bench_runs import missing


def phone(room: int, seen: list[tuple[float, int]]) -> Phone:
    p = Phone(room, f"ROOM{room}", conn=None)  # type: ignore[arg-type] - summary never touches the wire
    p.times, p.versions = [t for t, _ in seen], [v for _, v in seen]
    return p


def test_a_votes_delay_is_each_other_phone_of_its_room_seeing_a_version_that_counts_it():
    voter = phone(0, [(0.0, 1), (10.2, 2)])  # its own answer: not "another phone seeing it"
    quick, slow = phone(0, [(0.5, 1), (10.6, 3)]), phone(0, [(0.7, 1), (10.9, 2), (11.7, 3)])
    never = phone(0, [(0.9, 1)])  # still on version 1 when the phones stopped
    elsewhere = phone(1, [(0.1, 1)])  # another room: its versions are its own
    votes = [{"sent": 10.0, "version": 2, "room": 0, "phone": voter}]
    c = SimpleNamespace(votes=votes, phones=[voter, quick, slow, never, elsewhere], refresh_ms=[1.0, 3.0],
                        joins_s=[0.2], fresh=2, not_modified=5, ticks=3, errors=[])
    s = summary(c, 0.5)
    assert (s["pairs"], s["unseen"], s["votes"]) == (2, 1, 1)
    assert s["vote_seen_max_s"] == pytest.approx(0.9) and s["vote_seen_median_s"] == pytest.approx(0.75)
    assert (s["refresh_max_ms"], s["not_modified"], s["errors"]) == (3.0, 5, 0)


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_the_smallest_run_prints_every_figure_the_report_reads(canned):
    result = report.run(*report.SMOKE["poll"], timeout=180)
    assert "failed" not in result, result
    assert list(result["layouts"]) == ["1x3", "2x2"]
    assert missing(canned["poll"], result) == []
    for s in result["layouts"].values():
        assert s["errors"] == 0 and s["unseen"] == 0, s["error_samples"]
        assert s["votes"] > 0 and s["pairs"] > 0 and s["not_modified"] > 0  # votes seen; refreshes answered 304
    rows = [r for r in report.rows({"poll": result}) if r[0].startswith("class poll")]
    assert len(rows) == 8
    for measure, figure, goal, met in rows:
        assert "None" not in figure and "—" not in figure and "nan" not in figure, (measure, figure)
        assert (met is None) == (goal == "—"), (measure, figure, goal)
