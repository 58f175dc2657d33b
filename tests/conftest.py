"""A real model server for the whole session: llama-cpp-python's server running SmolLM2-135M-Instruct.

It sits at the root of tests/ because tests/real_server (the CLI and ``/compare``) and tests/app (the
Stop button in a real browser) both drive it. One server for the whole session; a 135M model on a CPU
is slow, so budgets are small: ``LLM_MAX_TOKENS`` of a few dozen tokens, two steps. Skipped with the reason
when the wheel or the model is not installed; ``.ci/run`` installs both and sets ``REAL_SERVER_REQUIRED=1``,
which turns that skip into a failure, so CI cannot skip them by accident.
"""

from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.pop("SPACE_ID", None)

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.model_servers import llama_server

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _servers_trusted_again() -> Iterator[None]:
    """What one test's stand-in taught this process (a server that serves one request at a time,
    ``agents/llm/gate.py``) never reaches the next test, whose stand-in may get the same port."""
    yield
    from agents.llm import gate

    gate.forget()


@pytest.fixture
def app_copy(tmp_path) -> Path:
    """The app's code copied to ``tmp_path / "repo"`` (no tests, no git): a test adds a module there (a new mode)
    and runs the app or the CLI from it, never touching the real tree."""
    dest = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "runs")
    for name in ("agents", "tools", "ui", "patches", "prompts", "data"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    for name in ("app.py", "settings.py"):
        shutil.copy2(ROOT / name, dest / name)
    return dest


class RealServer:
    """The running server plus what tests read from it: its URL and its log since a mark."""

    def __init__(self, server: llama_server.LlamaServer) -> None:
        self.server = server
        self.url = server.url
        self.model = llama_server.MODEL_ALIAS

    def mark(self) -> int:
        return len(self.server.output())

    def log_since(self, mark: int) -> str:
        return self.server.output()[mark:]

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a CLI run against this server (and nothing of the caller's LLM_/HF_ setup)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_"))}
        env.update(LLM_BASE_URL=self.url, LLM_MODEL=self.model, PYTHONUNBUFFERED="1", **extra)
        return env


@pytest.fixture(scope="session")
def real_server() -> Iterator[RealServer]:
    why = llama_server.missing()
    if why and os.environ.get("REAL_SERVER_REQUIRED") == "1":
        pytest.fail(f"REAL_SERVER_REQUIRED=1 but no real model server can start: {why}", pytrace=False)
    if why:
        pytest.skip(f"no real model server here: {why}")
    with llama_server.LlamaServer(n_ctx=4096, n_threads=2) as server:
        yield RealServer(server)


def pytest_sessionstart(session: pytest.Session) -> None:
    """The sandbox's runtime compiled (or found in its cache) before any test, not inside a test's time limit."""
    from tools.sandbox_wasm import RuntimeMissing, compiled_module

    try:
        compiled_module()
    except RuntimeMissing:
        pass  # the sandbox's tests then fail with the reason
