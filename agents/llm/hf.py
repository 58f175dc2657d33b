"""The real model client: ``huggingface_hub.InferenceClient``, streamed, with honest failure messages.

``InferenceClient`` already speaks both the HF router and any OpenAI-compatible
``base_url``; what it leaves to us (see ../shared/NOTES.md) is what this module adds:
retries with backoff for 429/5xx and dropped connections, a retry without ``stop`` for
servers that reject it, a wall-clock deadline per call (its own ``timeout`` is per socket
operation), and turning every failure into one human line. One instance per run: closing
it ends that run's in-flight stream and nobody else's.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from typing import Any

from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled, TextGenerationError
from huggingface_hub.utils import httpx  # httpx2 under its stable alias

from agents.llm import abort
from agents.llm.base import Chunk, LLMFailure, Message, ToolCallDelta
from agents.llm.settings import LLMSettings

RETRY_STATUSES = {429, 502, 503, 504}
MAX_TRIES = 3
RETRY_BUDGET_S = 10.0


class HFInferenceModel:
    """:class:`~agents.llm.base.ChatModel` over ``InferenceClient`` (router or ``base_url``)."""

    def __init__(self, settings: LLMSettings, *, client: InferenceClient | None = None) -> None:
        problem = settings.problem()
        if problem and client is None:
            raise LLMFailure(problem)
        self.settings = settings
        self.model_id = settings.model
        abort.install()
        self._client = client or _make_client(settings)
        self._closed = threading.Event()
        self._stop_rejected = False
        self._thread: int | None = None  # the thread streaming now, so close() can interrupt its read
        self._thread_lock = threading.Lock()  # close() may abort only while that thread is in *our* stream

    def stream(
        self,
        messages: list[Message],
        *,
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Iterator[Chunk]:
        """Stream one reply with retries; raises only :class:`LLMFailure`."""
        deadline = time.monotonic() + self.settings.timeout_s
        kwargs: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature, "tools": tools or None}
        stop = None if self._stop_rejected else (stop or None)
        started = time.monotonic()
        with self._thread_lock:
            self._thread = threading.get_ident()
            abort.clear_thread(self._thread)
        try:
            yield from self._attempts(messages, stop, kwargs, deadline, started)
        finally:
            # Thread ids are reused (pools, later runs): once this stream ends, a late close()
            # must not reach whatever the thread does next.
            with self._thread_lock:
                if self._thread is not None:
                    abort.clear_thread(self._thread)
                self._thread = None

    def _attempts(
        self, messages: list[Message], stop: list[str] | None, kwargs: dict[str, Any], deadline: float, started: float
    ) -> Iterator[Chunk]:
        for attempt in range(1, MAX_TRIES + 1):
            if self._closed.is_set():
                raise LLMFailure("the run was stopped")
            sent_any = False
            try:
                for chunk in self._guarded(self._open(messages, stop, kwargs), deadline):
                    sent_any = True
                    yield chunk
                return
            except HfHubHTTPError as exc:
                status = _status(exc)
                if stop and status in (400, 422) and not sent_any:
                    stop, self._stop_rejected = None, True  # retry once without stop; loops cut client-side
                    continue
                if status in RETRY_STATUSES and not sent_any and self._may_retry(attempt, started, exc):
                    continue
                raise LLMFailure(self._describe_http(exc, status, attempt)) from None
            except LLMFailure:
                raise
            except Exception as exc:  # noqa: BLE001 - every transport failure becomes one line
                if self._closed.is_set():
                    raise LLMFailure("the run was stopped") from None
                if time.monotonic() >= deadline:
                    raise LLMFailure(f"no complete reply within {self.settings.timeout_s:g} s (LLM_TIMEOUT)") from None
                if _is_transient(exc) and not sent_any and self._may_retry(attempt, started, None):
                    continue
                raise LLMFailure(self._describe_transport(exc, sent_any, attempt)) from None

    def _open(self, messages: list[Message], stop: list[str] | None, kwargs: dict[str, Any]) -> Iterator[Any]:
        return self._client.chat_completion(
            messages,
            model=self.settings.model,
            stream=True,
            stop=stop,
            stream_options={"include_usage": True},
            **{k: v for k, v in kwargs.items() if v is not None},
        )

    def _guarded(self, outputs: Iterator[Any], deadline: float) -> Iterator[Chunk]:
        """Convert stream outputs to chunks, closing the stream if the wall-clock deadline passes."""
        timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._client.close)
        timer.daemon = True
        timer.start()
        try:
            for out in outputs:
                if self._closed.is_set():
                    raise LLMFailure("the run was stopped")
                chunk = _to_chunk(out)
                if chunk is not None:
                    yield chunk
        finally:
            timer.cancel()

    def _may_retry(self, attempt: int, started: float, exc: HfHubHTTPError | None) -> bool:
        """Sleep before the next try (exponential backoff with jitter, honouring Retry-After) if budget allows."""
        if attempt >= MAX_TRIES or self._closed.is_set():
            return False
        wait = min(4.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + random.random())
        retry_after = _retry_after(exc) if exc is not None else None
        if retry_after is not None:
            wait = retry_after
        if time.monotonic() - started + wait > RETRY_BUDGET_S:
            return False
        return not self._closed.wait(wait)

    def _describe_http(self, exc: HfHubHTTPError, status: int | None, attempt: int) -> str:
        server = self.settings.redact(str(getattr(exc, "server_message", "") or "")).strip()
        low = server.lower()
        model = self.settings.model
        if status == 429:
            return f"rate-limited by the provider after {attempt} tries — wait a minute or pick another model"
        if status in (401, 403):
            return f"the token was refused (HTTP {status}) — check HF_TOKEN / LLM_API_KEY or sign in again"
        if status == 402:
            return "out of inference credits for this account (HTTP 402) — sign in with your own account or add credits"
        if "not supported by any provider" in low or "no provider" in low:
            return f"model {model} is not served by any enabled provider — pick another model"
        if status == 404:
            return f"model {model} was not found at {self._where()} (HTTP 404)"
        if status in RETRY_STATUSES:
            return f"the provider is unavailable (HTTP {status}) after {attempt} tries — try again shortly"
        detail = f": {server[:200]}" if server else ""
        return f"the model server answered HTTP {status}{detail}"

    def _describe_transport(self, exc: Exception, sent_any: bool, attempt: int) -> str:
        if isinstance(exc, OfflineModeIsEnabled):
            return "HF_HUB_OFFLINE=1 blocks every model request — unset it to call the model"
        if isinstance(exc, TextGenerationError):
            return f"the model server reported an error: {self.settings.redact(str(exc))[:200]}"
        if sent_any:
            return "the connection to the model server dropped mid-reply"
        if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
            return f"the model server did not answer in time after {attempt} tries"
        return f"could not reach the model server at {self._where()} after {attempt} tries ({type(exc).__name__})"

    def _where(self) -> str:
        return self.settings.base_url or "the Hugging Face router"

    def close(self) -> None:
        """End any in-flight stream; later calls fail fast with 'the run was stopped'."""
        self._closed.set()
        with self._thread_lock:
            if self._thread is not None:
                abort.abort_thread(self._thread)
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing must never raise
            pass


def _make_client(settings: LLMSettings) -> InferenceClient:
    if settings.base_url:
        return InferenceClient(base_url=settings.base_url, api_key=settings.token, timeout=settings.timeout_s)
    return InferenceClient(provider=settings.provider, token=settings.token, timeout=settings.timeout_s)


def _to_chunk(out: Any) -> Chunk | None:
    """One ``ChatCompletionStreamOutput`` → :class:`Chunk` (reasoning from ``reasoning`` or ``reasoning_content``)."""
    usage = getattr(out, "usage", None)
    choices = getattr(out, "choices", None) or []
    text = reasoning = ""
    calls: tuple[ToolCallDelta, ...] = ()
    if choices:
        delta = choices[0].delta
        text = delta.content or ""
        reasoning = getattr(delta, "reasoning", None) or _extra(delta, "reasoning_content") or ""
        calls = tuple(
            ToolCallDelta(
                index=getattr(tc, "index", 0) or 0,
                id=getattr(tc, "id", None) or None,
                name=getattr(tc.function, "name", None) or None,
                arguments=getattr(tc.function, "arguments", None) or "",
            )
            for tc in (delta.tool_calls or [])
        )
    prompt = getattr(usage, "prompt_tokens", None) if usage else None
    completion = getattr(usage, "completion_tokens", None) if usage else None
    if not (text or reasoning or calls or usage):
        return None
    return Chunk(text=text, reasoning=reasoning, tool_calls=calls, prompt_tokens=prompt, completion_tokens=completion)


def _extra(obj: Any, key: str) -> Any:
    """Fields the generated types do not declare are kept in the object's dict form."""
    try:
        return obj.get(key) if hasattr(obj, "get") else getattr(obj, key, None)
    except Exception:  # noqa: BLE001
        return None


def _status(exc: HfHubHTTPError) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _retry_after(exc: HfHubHTTPError) -> float | None:
    """Seconds from a numeric ``Retry-After`` header, capped: a UI cannot wait a minute."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return min(max(float(value), 0.0), 5.0) if value is not None else None
    except ValueError:
        return None


def _is_transient(exc: Exception) -> bool:
    return isinstance(exc, (httpx.TransportError, TimeoutError, ConnectionError)) and not isinstance(
        exc, OfflineModeIsEnabled
    )
