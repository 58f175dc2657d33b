"""A bad APP_*/BENCH_*/LLM_* setting stops ``python app.py`` with one line naming the variable and the accepted
range, never a traceback (the settings themselves: tests/ui/core/test_app_settings.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("env", "line"), [
    ({"APP_CONCURRENCY": "abc"}, "error: APP_CONCURRENCY must be an integer from 1 to 1000, got 'abc'"),
    ({"LLM_TIMEOUT": "soon"}, "error: LLM_TIMEOUT must be a number of seconds from 0.1 to 86400, got 'soon'"),
    ({"APP_MCP": "2"}, "error: APP_MCP must be one of 1/0, true/false, on/off, yes/no, got '2'"),
    ({"APP_MCP_SERVERS": '[{"name": "facts", "url": "https://x.org/", "headers": {"Authorization": "Bearer ${T}"}}]'},
     "error: APP_MCP_SERVERS, server 'facts', header 'Authorization': ${T} must name a secret: a name ending in "
     "_TOKEN, _KEY, _SECRET or _PASSWORD (e.g. T_TOKEN), which the app keeps out of its other processes"),
])
def test_python_app_py_exits_with_one_line_and_no_traceback(env, line):
    """The line comes from app.main(), after every module was imported: so no import reads a setting either."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_", "APP_", "BENCH_"))}
    done = subprocess.run([sys.executable, "app.py"], env={**clean, **env, "GRADIO_ANALYTICS_ENABLED": "False"},
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [line] and done.stdout == ""
