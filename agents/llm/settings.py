"""Where the model lives, read once from the environment.

Three ways to get a model, in this order: ``LLM_BASE_URL`` (any OpenAI-compatible server:
Ollama, vLLM, llama.cpp, TGI), a visitor's own token from *Sign in with Hugging Face*, or
``HF_TOKEN`` (the HF router). The token is kept out of ``repr`` and of every message, so
settings can be logged or shown in the UI safely. Every variable goes through the validating
reader of :mod:`agents.settings`: a value out of range is a :class:`~agents.settings.SettingError`
naming the variable and the accepted range, never a silent default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from agents.settings import env_float, env_int, env_text

DEFAULT_MODEL = "openai/gpt-oss-20b"
DEFAULT_TIMEOUT_S = 60.0  # LLM_TIMEOUT: longest wait for the first token, or between two chunks
DEFAULT_MAX_DURATION_S = 600.0  # LLM_MAX_DURATION: longest one call may stream
DEFAULT_MAX_TOKENS = 2048  # LLM_MAX_TOKENS: reasoning models spend part of it on hidden reasoning
ROUTER = "Hugging Face router"
SECONDS_RANGE = (0.1, 86400.0)  # LLM_TIMEOUT and LLM_MAX_DURATION: a tenth of a second to a day
MAX_TOKENS_RANGE = (1, 1_000_000)
MAX_CONCURRENT_RANGE = (0, 1000)  # 0: unlimited, as when unset

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
        ``LLM_MAX_DURATION``, ``LLM_MAX_TOKENS`` and ``LLM_MAX_CONCURRENT`` (unset or empty: the default).

        Raises :class:`~agents.settings.SettingError` (one line, never the token) for a value out of range.
        """
        base_url = env_text("LLM_BASE_URL", None, environ, prefixes=("http://", "https://"))
        # A Hugging Face token goes to Hugging Face only: a base_url server gets LLM_API_KEY or nothing.
        token = env_text("LLM_API_KEY" if base_url else "HF_TOKEN", None, environ, secret=True)
        concurrent = env_int("LLM_MAX_CONCURRENT", 0, *MAX_CONCURRENT_RANGE, environ)
        return cls(
            model=env_text("LLM_MODEL", DEFAULT_MODEL, environ) or DEFAULT_MODEL,
            base_url=base_url.rstrip("/") if base_url else None,
            token=token,
            provider=None if base_url else env_text("LLM_PROVIDER", "auto", environ),
            timeout_s=env_float("LLM_TIMEOUT", DEFAULT_TIMEOUT_S, *SECONDS_RANGE, environ, unit="seconds"),
            max_duration_s=env_float("LLM_MAX_DURATION", DEFAULT_MAX_DURATION_S, *SECONDS_RANGE, environ,
                                     unit="seconds"),
            max_tokens=env_int("LLM_MAX_TOKENS", DEFAULT_MAX_TOKENS, *MAX_TOKENS_RANGE, environ),
            max_concurrent=concurrent or None,
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

