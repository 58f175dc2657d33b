"""bench/bench_routes.py runs against the app's own FastAPI app and prints every figure it names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_runs_and_prints_its_figures_as_json():
    done = subprocess.run([sys.executable, "bench/bench_routes.py", "--n", "40", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout)
    assert figures["routes"] > 4
    for key in ("match_us_without", "match_us_with", "ratio", "override_us", "override_us_with_sub_dependency"):
        assert figures[key] > 0, key
