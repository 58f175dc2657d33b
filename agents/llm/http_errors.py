"""A model server's HTTP error as the one line a user reads (``HFInferenceModel`` raises it as an ``LLMFailure``).

Servers say the same things in their own words and body shapes (the HF router, OpenAI, vLLM, llama.cpp, TGI);
this module reads the status, the server's message and an OpenAI-shaped ``error.code``, and says what happened
and what to do, with any secret redacted from the server's words.
"""

from __future__ import annotations

import re

from huggingface_hub.errors import HfHubHTTPError

from agents.llm import discovery
from agents.llm.settings import LLMSettings

RETRY_STATUSES = {429, 502, 503, 504}
# How servers word a request longer than the context window (OpenAI and vLLM, llama.cpp, TGI, others).
CONTEXT_WORDS = re.compile(r"maximum context length|context (length|window|size)|exceeds the available context|"
                           r"tokens? \+ `?max_new_tokens`? must be <=|prompt is too long|input is too long", re.I)
CONTEXT_ADVICE = "start a new question, lower the max tokens, or pick a model with a longer context"


def describe(exc: HfHubHTTPError, status: int | None, attempt: int, settings: LLMSettings) -> str:
    """The line for an HTTP error that ends a call (after ``attempt`` tries)."""
    server = server_words(exc, settings)
    low = server.lower()
    model = settings.model
    if discovery.names_missing_model(status, f"{low} {body_code(exc).lower()}"):
        return discovery.missing_model_line(settings)
    if status == 429:
        return f"rate-limited by the provider after {attempt} tries — wait a minute or pick another model"
    if status in (401, 403):
        return f"the token was refused (HTTP {status}) — check HF_TOKEN / LLM_API_KEY or sign in again"
    if status == 402:
        return "out of inference credits for this account (HTTP 402) — sign in with your own account or add credits"
    if "not supported by any provider" in low or "no provider" in low:
        return f"model {model} is not served by any enabled provider — pick another model"
    if status == 404 and settings.base_url:
        return (f"the server at {settings.where()} has no /chat/completions (HTTP 404) — LLM_BASE_URL usually "
                "ends in /v1")
    if status == 404:
        return f"model {model} was not found at {settings.where()} (HTTP 404)"
    if status in RETRY_STATUSES:
        return f"the provider is unavailable (HTTP {status}) after {attempt} tries — try again shortly"
    detail = f": {server[:200]}" if server else ""
    return f"the model server answered HTTP {status}{detail}"


def context_overflow(exc: HfHubHTTPError, status: int | None, settings: LLMSettings) -> str | None:
    """The line for a request longer than the model's context window, or None when the error is not that.

    Servers answer it with a 400 (OpenAI, vLLM, llama.cpp: ``context_length_exceeded``), a 413 or a 422 (TGI:
    "`inputs` tokens + `max_new_tokens` must be <= …"). The same request would fail again: no retry."""
    if status not in (400, 413, 422):
        return None
    server = server_words(exc, settings)
    if body_code(exc) != "context_length_exceeded" and not CONTEXT_WORDS.search(server):
        return None
    said = f" (the server: {server[:200]})" if server else ""
    return f"the conversation is longer than the model's context window{said} — {CONTEXT_ADVICE}"


def server_words(exc: HfHubHTTPError, settings: LLMSettings) -> str:
    """What the server said, secrets redacted: the ``message`` of an OpenAI-shaped body (huggingface_hub's own
    reading of one is the repr of its ``error`` dict), else huggingface_hub's reading of the body."""
    said = _body_message(exc) or str(getattr(exc, "server_message", "") or "")
    return settings.redact(said).strip()


def _json_body(exc: HfHubHTTPError) -> object:
    response = getattr(exc, "response", None)
    try:
        return response.json() if response is not None else None
    except Exception:  # noqa: BLE001 - a body that is not JSON (or not read) says nothing more
        return None


def _body_message(exc: HfHubHTTPError) -> str:
    """The message of a JSON error body: ``{"error": {"message": …}}`` (OpenAI, vLLM, llama.cpp) or a top-level
    ``message`` (vLLM's older shape); "" for any other body."""
    data = _json_body(exc)
    if not isinstance(data, dict):
        return ""
    error = data.get("error")
    message = error.get("message") if isinstance(error, dict) else data.get("message")
    return message if isinstance(message, str) else ""


def body_code(exc: HfHubHTTPError) -> str:
    """The ``error.code`` of an OpenAI-shaped error body (``{"error": {"code": …}}``), else ""."""
    data = _json_body(exc)
    error = data.get("error") if isinstance(data, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else ""


def status(exc: HfHubHTTPError) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def retry_after(exc: HfHubHTTPError) -> float | None:
    """Seconds from a numeric ``Retry-After`` header, capped: a UI cannot wait a minute."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return min(max(float(value), 0.0), 5.0) if value is not None else None
    except ValueError:
        return None
