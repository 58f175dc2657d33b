"""Where the model lives, read once from the environment.

Three ways to get a model, in this order: ``LLM_BASE_URL`` (any OpenAI-compatible server:
Ollama, vLLM, llama.cpp, TGI), a visitor's own token from *Sign in with Hugging Face*, or
``HF_TOKEN`` (the HF router). The token is kept out of ``repr`` and of every message, so
settings can be logged or shown in the UI safely.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

DEFAULT_MODEL = "openai/gpt-oss-20b"
DEFAULT_TIMEOUT_S = 60.0  # LLM_TIMEOUT: longest wait for the first token, or between two chunks
DEFAULT_MAX_DURATION_S = 600.0  # LLM_MAX_DURATION: longest one call may stream
DEFAULT_MAX_TOKENS = 2048  # LLM_MAX_TOKENS: reasoning models spend part of it on hidden reasoning
ROUTER = "Hugging Face router"

NOT_CONFIGURED = (
    "HF_TOKEN is not set — no model is configured. Three ways to get one: set HF_TOKEN (a Hugging Face "
    "token with Inference Providers permission) to use the Hugging Face router; on the Space, click "
    "'Sign in with Hugging Face' so your own account pays for your runs; or set LLM_BASE_URL to a local "
    "OpenAI-compatible server (Ollama, vLLM, llama.cpp, TGI), e.g. "
    "LLM_BASE_URL=http://localhost:11434/v1 LLM_MODEL=qwen2.5:7b."
)


@dataclass(frozen=True)
class LLMSettings:
    """Everything needed to open one model client. ``token`` never appears in ``repr``."""

    model: str = DEFAULT_MODEL
    base_url: str | None = None
    token: str | None = field(default=None, repr=False)
    provider: str | None = "auto"
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_duration_s: float = DEFAULT_MAX_DURATION_S
    max_tokens: int = DEFAULT_MAX_TOKENS
    max_concurrent: int | None = None  # model calls in flight per process; None: unlimited

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LLMSettings:
        """Read ``LLM_BASE_URL``, ``LLM_API_KEY``, ``HF_TOKEN``, ``LLM_MODEL``, ``LLM_PROVIDER``, ``LLM_TIMEOUT``,
        ``LLM_MAX_DURATION``, ``LLM_MAX_TOKENS`` and ``LLM_MAX_CONCURRENT`` (unset, invalid or ≤ 0: the default)."""
        env = os.environ if environ is None else environ
        base_url = (env.get("LLM_BASE_URL") or "").strip() or None
        # A Hugging Face token goes to Hugging Face only: a base_url server gets LLM_API_KEY or nothing.
        token = (env.get("LLM_API_KEY") if base_url else env.get("HF_TOKEN")) or None
        concurrent = _positive(env.get("LLM_MAX_CONCURRENT"), 0.0)
        return cls(
            model=(env.get("LLM_MODEL") or "").strip() or DEFAULT_MODEL,
            base_url=base_url.rstrip("/") if base_url else None,
            token=token.strip() if token else None,
            provider=None if base_url else ((env.get("LLM_PROVIDER") or "").strip() or "auto"),
            timeout_s=_positive(env.get("LLM_TIMEOUT"), DEFAULT_TIMEOUT_S),
            max_duration_s=_positive(env.get("LLM_MAX_DURATION"), DEFAULT_MAX_DURATION_S),
            max_tokens=int(_positive(env.get("LLM_MAX_TOKENS"), DEFAULT_MAX_TOKENS)),
            max_concurrent=int(concurrent) if concurrent >= 1 else None,
        )

    def with_overrides(self, model: str | None = None, token: str | None = None) -> LLMSettings:
        """A copy with a per-run model choice or a signed-in visitor's token (router only)."""
        new = self
        if model and model.strip():
            new = replace(new, model=model.strip())
        if token and not self.base_url:
            new = replace(new, token=token)
        return new

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.token)

    def problem(self) -> str | None:
        """Why no call can be made, or None when a model is reachable in principle."""
        return None if self.configured else NOT_CONFIGURED

    def describe(self) -> str:
        """One status line for the UI and CLI, never containing a token."""
        if self.base_url:
            return f"{self.model} at {re.sub(r'//[^/@]*@', '//', self.base_url)}"  # no user:password@
        if self.token:
            return f"{self.model} via the {ROUTER} (provider: {self.provider or 'auto'})"
        return "no model configured"

    def server_key(self) -> str:
        """Which server calls go to: concurrency limits and collision detection are per server."""
        return self.base_url or "hf-router"

    def redact(self, text: str) -> str:
        """Remove the token from any text that might echo it (server messages, URLs)."""
        return text.replace(self.token, "hf_***") if self.token and len(self.token) >= 4 else text


def _positive(value: str | None, default: float) -> float:
    """A positive finite number from the environment, or ``default``."""
    try:
        number = float(value) if value is not None and value.strip() else default
    except ValueError:
        return default
    return number if 0 < number < float("inf") else default
