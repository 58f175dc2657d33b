"""Where the model lives, read once from the environment.

Three ways to get a model, in this order: ``LLM_BASE_URL`` (any OpenAI-compatible server), a visitor's own token
from *Sign in with Hugging Face*, or ``HF_TOKEN`` (the HF router). A server without ``LLM_MODEL`` is asked which
models it serves (:func:`agents.llm.discovery.resolve_model`); until then ``model`` is empty. The token stays out
of ``repr`` and of every message. Each variable is declared in :mod:`settings` and read through
:func:`settings.read`, so a bad value is one :class:`~settings.SettingError` line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from agents.llm.pricing import OWNER_SOURCE, Price
from settings import SETTINGS, SettingError, read

DEFAULT_MODEL = "openai/gpt-oss-20b"
DEFAULT_TIMEOUT_S = SETTINGS["LLM_TIMEOUT"].default  # longest wait for the first token, or between two chunks
DEFAULT_MAX_DURATION_S = SETTINGS["LLM_MAX_DURATION"].default  # longest one call may stream
DEFAULT_MAX_TOKENS = SETTINGS["LLM_MAX_TOKENS"].default  # reasoning models spend part of it on hidden reasoning
ROUTER = "Hugging Face router"
MAX_TOKENS_RANGE = SETTINGS["LLM_MAX_TOKENS"].bounds

THREE_WAYS = (
    "Three ways to connect a real model: set HF_TOKEN (a Hugging Face token with Inference Providers "
    "permission) to use the Hugging Face router; on the Space, click 'Sign in with Hugging Face' so your own "
    "account pays for your runs; or set LLM_BASE_URL to an OpenAI-compatible server (Ollama, vLLM, llama.cpp, "
    "TGI, LM Studio), e.g. LLM_BASE_URL=http://localhost:11434/v1 — the model it serves is found by itself."
)
NOT_CONFIGURED = f"HF_TOKEN is not set — no model is configured. {THREE_WAYS}"
TOY = "the built-in toy model"
TOY_LIMITS = "it only does arithmetic, through the calculator, and says \"I don't know\" to anything else"
TRY_THE_TOY = (f"No model at hand? `python -m agents stub` serves {TOY} ({TOY_LIMITS}) at "
               "http://127.0.0.1:8800/v1; then set LLM_BASE_URL=http://127.0.0.1:8800/v1.")


def owner_price(environ: Mapping[str, str] | None = None) -> Price | None:
    """``APP_PRICE_INPUT`` and ``APP_PRICE_OUTPUT``: USD per million input and output tokens, both or neither.

    An LLM-side setting despite its ``APP_`` name (the CLI prices its runs too), so it is read here."""
    cost_in, cost_out = read("APP_PRICE_INPUT", environ), read("APP_PRICE_OUTPUT", environ)
    if cost_in is None and cost_out is None:
        return None
    if cost_in is None or cost_out is None:
        missing, given = ("APP_PRICE_INPUT", "APP_PRICE_OUTPUT") if cost_in is None else ("APP_PRICE_OUTPUT",
                                                                                           "APP_PRICE_INPUT")
        raise SettingError(f"{missing} must be set too: APP_PRICE_INPUT and APP_PRICE_OUTPUT go together "
                           "(US dollars per million input and output tokens)", given)
    return Price(cost_in, cost_out, OWNER_SOURCE)


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
    # model calls in flight per process and server; 0: unlimited; None (unset): unlimited until an LLM_BASE_URL
    # server shows it serves one request at a time, then one (agents/llm/gate.py)
    max_concurrent: int | None = None
    models: tuple[str, ...] = ()  # what the base_url server listed at start (GET /models), for the Settings box
    models_error: str | None = None  # why it listed none, when it was asked
    toy: bool = False  # the base_url is the toy model the app started itself (nothing was configured)
    price: Price | None = None  # the owner's APP_PRICE_INPUT / APP_PRICE_OUTPUT; a server's listing comes first

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LLMSettings:
        """Read ``LLM_BASE_URL``, ``LLM_API_KEY``, ``HF_TOKEN``, ``LLM_MODEL``, ``LLM_PROVIDER``, ``LLM_TIMEOUT``,
        ``LLM_MAX_DURATION``, ``LLM_MAX_TOKENS``, ``LLM_MAX_CONCURRENT`` (unset or empty: the default) and the
        owner's price, ``APP_PRICE_INPUT`` and ``APP_PRICE_OUTPUT`` (:func:`owner_price`).

        Raises :class:`~settings.SettingError` (one line, never the token) for a value out of range.
        """
        base_url = read("LLM_BASE_URL", environ)
        # A Hugging Face token goes to Hugging Face only: a base_url server gets LLM_API_KEY or nothing.
        token = read("LLM_API_KEY" if base_url else "HF_TOKEN", environ)
        concurrent = read("LLM_MAX_CONCURRENT", environ)  # None (unset): automatic (agents/llm/gate.py)
        model = read("LLM_MODEL", environ)
        return cls(
            model=model or ("" if base_url else DEFAULT_MODEL),  # "": ask the server (discovery.resolve_model)
            base_url=base_url.rstrip("/") if base_url else None,
            token=token,
            provider=None if base_url else read("LLM_PROVIDER", environ),
            timeout_s=read("LLM_TIMEOUT", environ),
            max_duration_s=read("LLM_MAX_DURATION", environ),
            max_tokens=read("LLM_MAX_TOKENS", environ),
            max_concurrent=concurrent,
            price=owner_price(environ),
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
        if not self.configured:
            return NOT_CONFIGURED
        if not self.model:
            server = f"the server at {self.where()}"
            if self.models_error:
                return (f"LLM_MODEL is not set and {server} listed no models ({self.models_error}) — set LLM_MODEL "
                        "to the name of a model it serves (or type it under Settings → Model).")
            return f"LLM_MODEL is not set — set LLM_MODEL to the name of a model {server} serves."
        return None

    def where(self) -> str:
        """The server calls go to, for people (no user:password@ of a URL)."""
        return re.sub(r"//[^/@]*@", "//", self.base_url) if self.base_url else f"the {ROUTER}"

    def describe(self, answered: str | None = None) -> str:
        """One status line for the UI and CLI, never containing a token; ``answered`` names the model that
        answered when the server named one other than the model asked for."""
        model = answered or self.model
        if self.toy:
            return TOY
        if self.base_url:
            return f"{model or 'no model named'} at {self.where()}"
        if self.token:
            return f"{model} via the {ROUTER} (provider: {self.provider or 'auto'})"
        return "no model configured"

    def server_key(self) -> str:
        """Which server calls go to: concurrency limits and collision detection are per server."""
        return self.base_url or "hf-router"

    def redact(self, text: str) -> str:
        """Remove the token from any text that might echo it (server messages, URLs)."""
        return text.replace(self.token, "hf_***") if self.token and len(self.token) >= 4 else text

