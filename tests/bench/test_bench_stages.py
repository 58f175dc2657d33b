"""bench_stages finds py-spy beside the interpreter as well as on ``PATH``: the README's test command passes from a
virtualenv that is not activated (``.venv/bin/python -m pytest``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(sys.executable).parent


def path_without_this_environment() -> str:
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).absolute() != HERE.absolute())


@pytest.mark.skipif(not os.access(HERE / "py-spy", os.X_OK), reason="py-spy is not installed beside this Python")
def test_py_spy_is_found_beside_the_interpreter_with_a_path_that_does_not_hold_it():
    code = "from bench.bench_stages import py_spy; print(py_spy())"
    env = {**os.environ, "PATH": path_without_this_environment(), "PYTHONPATH": str(ROOT)}
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=60)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()) == HERE / "py-spy"
    version = subprocess.run([found.stdout.strip(), "--version"], capture_output=True, text=True, env=env,
                             timeout=60)
    assert version.returncode == 0 and "py-spy" in version.stdout
