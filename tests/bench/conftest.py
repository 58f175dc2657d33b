"""What each benchmark script prints with ``--json``, cut down to the keys bench/report.py reads.

The figures pass every goal (the app's short replies with visitors 20, 50 and 100, the long ones with 50, each
against both stand-ins; 500 runs, 300 submissions; 32 paused CodeAct sessions, their memory read as PSS; the class
poll's 1 room × 200 phones and 5 rooms × 40). The
shapes are the scripts' own: a key here that a script stops printing fails ``test_bench_runs.py``; a key
report.py starts reading that is missing here fails ``test_report_table.py`` (and so does a key here that
report.py no longer reads). The visitor counts under ``runs`` are strings, as they come back from JSON; so are the
poll's layouts ("ROOMSxPHONES"), each printed with the same keys.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from bench import run_record


def fresh(figures: dict, **changed: object) -> dict:
    """A copy of ``figures`` of its own (a test that moves one figure moves only that one)."""
    return {**copy.deepcopy(figures), **changed}


# one crowd of short replies, as bench_app.py's scale prints it: the median of three rounds, with their spread
CROWD = {"wall_s": 5.0, "ratio": 1.12, "errors": 0, "repeats": 3, "beyond_alone_s": 0.3, "start_max_s": 0.35,
         "start_median_s": 0.3, "first_text_max_ms": 200, "first_text_median_ms": 60, "cpu_ms_per_token": 0.3,
         "app_cpu_ms_per_token": 0.1, "worker_cpu_ms_per_token": 0.2, "tokens": 5400,
         "cpu_s": {"stub": 0.4, "visitors": 0.1},
         "spread": {"ratio": [1.1, 1.14], "beyond_alone_s": [0.28, 0.4], "start_max_s": [0.3, 0.4],
                    "first_text_max_ms": [180, 220], "cpu_ms_per_token": [0.29, 0.31]}}
LONG_ALONE = {"repeats": 3, "cpu_ms_per_token": 0.3, "app_cpu_ms_per_token": 0.1, "worker_cpu_ms_per_token": 0.2,
              "tokens": 1307, "cpu_s": {"stub": 0.2, "visitors": 0.02}, "spread": {"cpu_ms_per_token": [0.29, 0.33]}}
LONG_CROWD = {"wall_s": 9.0, "ratio": 1.05, "errors": 0, "repeats": 3, "cpu_ms_per_token": 0.12,
              "app_cpu_ms_per_token": 0.04, "worker_cpu_ms_per_token": 0.08, "tokens": 65350,
              "cpu_s": {"stub": 2.0, "visitors": 0.3}, "last_frame_max_s": 0.3, "last_frame_median_s": 0.2,
              "spread": {"ratio": [1.03, 1.07], "cpu_ms_per_token": [0.11, 0.13], "last_frame_max_s": [0.25, 0.4]}}

# one layout of the class poll, as bench_poll.py prints it (latencies the worst round's, ratio and CPU the median's)
POLL = {"ratio": 1.02, "ratio_spread": [1.01, 1.04], "wall_s": 9.6, "wall_alone_s": 9.4, "run_errors": 0,
        "vote_seen_max_s": 1.1, "vote_seen_p95_s": 0.95, "vote_seen_median_s": 0.5, "votes": 120, "pairs": 23880,
        "unseen": 0, "errors": 0, "refreshes": 12000, "not_modified": 3000, "refresh_max_ms": 40.0,
        "refresh_p95_ms": 4.0, "page_max_s": 0.5, "page_p95_s": 0.1, "page_loads": 80, "phone_page_max_s": 0.1,
        "phone_page_loads": 80, "join_max_s": 0.4, "cpu_ms_per_phone_s": 0.05, "vote_rate": 4.0,
        "quiet_cpu_ms_per_phone_s": 0.02, "idle_cpu_ms_per_s": 3.0, "client_cpu_s": 1.5}

CANNED: dict = {
    "engine": {"ratio": 1.007, "overhead_ms_per_call": 2.41,
               "pool_walk_ms_per_request": {"pools": 16, "sharded": 0.21, "one_pool": 0.86}},
    "tools": {"refusal_median_ms": 0.17, "refusal_max_ms": 0.66},
    "sandbox": {
        "repl": {"back_to_back": {"median_ms": 120.4, "p95_ms": 160.2, "n": 50},
                 "spaced": {"median_ms": 9.8, "p95_ms": 14.1}, "gap_s": 0.5},
        "step": {"trivial": {"median_ms": 0.8, "p95_ms": 1.3, "n": 50},
                 "busy": {"median_ms": 2.6, "p95_ms": 4.0, "n": 10}, "busy_own_ms": 200.1},
        "start": {"median_ms": 310.0, "max_ms": 420.0, "n": 33},
        "paused": {"sessions": 32, "processes": 32, "pss_mb": 610.0, "rss_mb": 1350.0, "measure": "pss"},
    },
    "eval": {"ratio": 0.136, "concurrent_wall_s": 3.54, "sequential_wall_s": 25.96, "concurrency": 8},
    "app": {
        "cores": 2,
        "scale": {
            "runs": {
                "20": fresh(CROWD), "50": fresh(CROWD),
                "100": fresh(CROWD, ratio=1.41, spread={**CROWD["spread"], "ratio": [1.38, 1.45]}),
            },
        },
        "memory": {"runs": 500, "growth_mb": 12.8, "per_run_kb": 26.2, "errors": 0},
        "flood": {
            "submissions": 300,
            "outcomes": {"finished": 300, "told_queued": 200, "told_full": 0, "http_503": 0, "other_errors": 0},
            "first_word_max_s": 1.6, "page_max_s": 0.93, "page_p95_s": 0.12, "page_loads": 81,
            "page_quiet_median_s": 0.003,
        },
        "idle": {"seconds": 30.0, "app_cpu_ms_per_s": 4.0, "cpu_ms_per_s": {"stub": 2.0}},
    },
    "app_thread": {"scale": {"runs": {"20": fresh(CROWD), "50": fresh(CROWD), "100": fresh(CROWD)}}},
    "app_long": {
        "scale": {"alone": fresh(LONG_ALONE), "runs": {"50": fresh(LONG_CROWD)}},
        "fast": {"tokens_per_s": 1000.0, "last_frame_max_s": 0.2, "tokens": 1307, "errors": 0},
    },
    "app_long_thread": {"scale": {"alone": fresh(LONG_ALONE), "runs": {"50": fresh(LONG_CROWD)}}},
    "poll": {"layouts": {"1x200": fresh(POLL), "5x40": fresh(POLL)}},
    "shares": {
        "flood": {"submissions": 300, "share": 40, "repeats": 3, "started_max": 40, "refused_min": 260,
                  "errors": 0, "other_never_queued": True, "other_first_frame_max_s": 0.4,
                  "other_first_frame_alone_max_s": 0.02, "other_done": True},
        "class": {"phones": 40, "counted": 40, "tap_alone_s": 0.01, "tap_max_s": 0.5, "tap_p95_s": 0.4,
                  "tap_median_s": 0.3},
    },
    "stages": {
        "configs": {
            "short:1": {"replies": "short", "visitors": 1, "cpu_ms_per_token": 0.9,
                        "stages": {"client: HTTP + chunk parse": 0.1, "outside Python (syscalls, lock waits)": 0.8}},
        },
    },
}


@pytest.fixture
def canned() -> dict:
    """A fresh copy of the canned results, ``{script: its JSON}``, as ``python -m bench --json`` prints them."""
    return copy.deepcopy(CANNED)


@pytest.fixture(autouse=True)
def results_dir(tmp_path, monkeypatch) -> Path:
    """Where a test's ``python -m bench`` writes its results files: a folder of its own, never bench/results/."""
    folder = tmp_path / "results"
    monkeypatch.setattr(run_record, "DIR", folder)
    return folder
