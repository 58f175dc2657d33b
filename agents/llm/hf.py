"""The real model client: ``huggingface_hub.InferenceClient``, streamed, with honest failure messages.

``InferenceClient`` already speaks both the HF router and any OpenAI-compatible
``base_url``; what it leaves to us is what this module adds:
retries with backoff for 429/5xx and dropped connections, a retry without ``stop`` for
servers that reject it, a reply trusted only when the server says it is finished, limits on
silence (``LLM_TIMEOUT``) and on a whole call (``LLM_MAX_DURATION``) — its own ``timeout`` is
per socket operation —, an optional cap on calls in flight (``LLM_MAX_CONCURRENT``), and
turning every failure into one human line. One instance per run: closing it ends that run's
in-flight stream and nobody else's.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled, TextGenerationError
from huggingface_hub.utils import httpx  # httpx2 under its stable alias

from agents.llm import abort, http_errors, watchdog
from agents.llm.base import Chunk, LLMFailure, Message, ToolCallDelta
from agents.llm.gate import gate_for
from agents.llm.gate import streams as open_streams
from agents.llm.settings import LLMSettings
from patches import hf_stream_parse

log = logging.getLogger(__name__)

MAX_TRIES = 3
RETRY_BUDGET_S = 10.0
ONE_AT_A_TIME = "it may serve one request at a time (llama-cpp-python's server does); set LLM_MAX_CONCURRENT=1"
INTERRUPTED = f"the server closed this reply when another request arrived — {ONE_AT_A_TIME}"


class HFInferenceModel:
    """:class:`~agents.llm.base.ChatModel` over ``InferenceClient`` (router or ``base_url``)."""

    def __init__(self, settings: LLMSettings, *, client: InferenceClient | None = None) -> None:
        problem = settings.problem()
        if problem and client is None:
            raise LLMFailure(problem)
        self.settings = settings
        self.model_id = settings.model
        self.answered: str | None = None  # the model the server says answered the last reply (its `model` field)
        abort.install()
        self._client = client or _make_client(settings)
        self._closed = threading.Event()
        self._stop_rejected = False
        self._server = settings.server_key()
        self._gate = gate_for(self._server, settings.max_concurrent)
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
        """Stream one reply with retries; raises only :class:`LLMFailure`.

        The reply is complete only when the server says so (a ``finish_reason``): huggingface_hub
        swallows ``data: [DONE]``, and a server that aborts a request may end the body cleanly, so a
        stream that just stops is a failure too. With ``LLM_MAX_CONCURRENT`` set, the call first
        waits for a slot, saying so with a ``Chunk(waiting=True)``.
        """
        kwargs: dict[str, Any] = {"max_tokens": max_tokens or self.settings.max_tokens,
                                  "temperature": temperature, "tools": tools or None}
        stop = None if self._stop_rejected else (stop or None)
        gate = self._gate
        if gate is not None and not gate.try_acquire():
            yield Chunk(waiting=True)
            if not gate.acquire(self._closed.is_set):
                raise LLMFailure("the run was stopped", reason="stopped")
        try:
            yield from self._call(messages, stop, kwargs)
        finally:
            if gate is not None:
                gate.release()

    def _call(self, messages: list[Message], stop: list[str] | None, kwargs: dict[str, Any]) -> Iterator[Chunk]:
        """One call under the watchdog's clock, registered as an open stream to its server."""
        ticket = open_streams.opened(self._server)
        clock = watchdog.watch(self.settings.timeout_s, self.settings.max_duration_s, self._expire)
        with self._thread_lock:
            self._thread = threading.get_ident()
            abort.clear_thread(self._thread)
        try:
            yield from self._attempts(messages, stop, kwargs, clock, ticket)
        finally:
            watchdog.unwatch(clock)  # before the thread is released: no late abort reaches its next call
            open_streams.closed(self._server, ticket)
            # Thread ids are reused (pools, later runs): once this stream ends, a late close()
            # must not reach whatever the thread does next.
            with self._thread_lock:
                if self._thread is not None:
                    abort.clear_thread(self._thread)
                self._thread = None

    def _expire(self) -> None:
        """The watchdog's verdict: unblock this call's read; the attempt loop reports which limit passed."""
        with self._thread_lock:
            if self._thread is not None:
                abort.abort_thread(self._thread)

    def _attempts(
        self, messages: list[Message], stop: list[str] | None, kwargs: dict[str, Any], clock: watchdog.Watch,
        ticket: int,
    ) -> Iterator[Chunk]:
        started = time.monotonic()
        for attempt in range(1, MAX_TRIES + 1):
            if self._closed.is_set():
                raise LLMFailure("the run was stopped", reason="stopped")
            clock.restart()
            sent = _Sent()
            try:
                outputs = self._open(messages, stop, kwargs)
                sent.responded = True  # chat_completion returns once the headers are in
                for chunk in self._guarded(outputs, clock):
                    sent.add(chunk)
                    yield chunk
                if sent.finish is None:
                    raise _Cut
                return
            except HfHubHTTPError as exc:
                status = http_errors.status(exc)
                if (too_long := http_errors.context_overflow(exc, status, self.settings)) is not None:
                    raise LLMFailure(too_long, reason="context") from None  # the same request fails again
                if stop and status in (400, 422) and not sent.any:
                    stop, self._stop_rejected = None, True  # retry once without stop; loops cut client-side
                    continue
                retry = status in http_errors.RETRY_STATUSES and not sent.any
                if retry and self._may_retry(attempt, started, exc, clock):
                    continue
                raise LLMFailure(http_errors.describe(exc, status, attempt, self.settings)) from None
            except LLMFailure:
                raise
            except Exception as exc:  # noqa: BLE001 - every transport failure becomes one line (logged)
                _log_failure(exc, attempt, self._server, stopped=self._closed.is_set())
                failure = self._failure(exc, sent, clock, ticket, attempt)
                if failure is None and self._may_retry(attempt, started, None, clock):
                    continue
                raise (failure or LLMFailure(self._describe_transport(exc, sent, attempt))) from None

    def _failure(
        self, exc: Exception, sent: _Sent, clock: watchdog.Watch, ticket: int, attempt: int
    ) -> LLMFailure | None:
        """What a failed attempt means for the user, or None when it may be retried (nothing shown yet)."""
        n, s = sent.tokens, self.settings
        if self._closed.is_set():
            return LLMFailure("the run was stopped", reason="stopped", tokens=n)
        if clock.expired == "duration":
            return LLMFailure(f"the reply was cut at {s.max_duration_s:g} s (LLM_MAX_DURATION) after {n} tokens",
                              reason="timeout", tokens=n)
        if clock.expired == "silence" or isinstance(exc, (httpx.TimeoutException, TimeoutError)):
            if not clock.chunks and open_streams.crowded(self._server, ticket):
                return LLMFailure(f"no reply from the model server within {s.timeout_s:g} s (LLM_TIMEOUT) while "
                                  f"other requests of ours were open — {ONE_AT_A_TIME}", reason="busy")
            if not clock.chunks:
                return LLMFailure(f"no reply from the model server within {s.timeout_s:g} s (LLM_TIMEOUT)",
                                  reason="timeout", tokens=n)
            return LLMFailure(f"the model server went silent for {s.timeout_s:g} s mid-reply, after {n} tokens "
                              "(LLM_TIMEOUT)", reason="timeout", tokens=n)
        cut = isinstance(exc, _Cut) or (sent.responded and _is_transient(exc))
        if cut and open_streams.crowded(self._server, ticket):
            return LLMFailure(INTERRUPTED, reason="interrupted", tokens=n)
        if sent.any:
            return LLMFailure(f"the server closed the connection mid-reply after {n} tokens",
                              reason="incomplete", tokens=n)
        if isinstance(exc, _Cut) or _is_transient(exc):
            return None  # nothing of this reply was shown: try again
        return LLMFailure(self._describe_transport(exc, sent, attempt))

    def _open(self, messages: list[Message], stop: list[str] | None, kwargs: dict[str, Any]) -> Iterator[Any]:
        return self._client.chat_completion(
            messages,
            model=self.settings.model,
            stream=True,
            stop=stop,
            stream_options={"include_usage": True},
            **{k: v for k, v in kwargs.items() if v is not None},
        )

    def _guarded(self, outputs: Iterator[Any], clock: watchdog.Watch) -> Iterator[Chunk]:
        """Convert stream outputs to chunks, beating the watchdog's clock on each."""
        for out in outputs:
            if self._closed.is_set():
                raise LLMFailure("the run was stopped", reason="stopped")
            if clock.expired:  # a steady stream past LLM_MAX_DURATION: the watchdog had no read to abort
                raise TimeoutError(clock.expired)
            clock.beat()
            self.answered = getattr(out, "model", None) or self.answered
            chunk = _to_chunk(out)
            if chunk is not None:
                yield chunk

    def _may_retry(self, attempt: int, started: float, exc: HfHubHTTPError | None, clock: watchdog.Watch) -> bool:
        """Sleep before the next try (exponential backoff with jitter, honouring Retry-After) if budget allows."""
        if attempt >= MAX_TRIES or self._closed.is_set():
            return False
        wait = min(4.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + random.random())
        retry_after = http_errors.retry_after(exc) if exc is not None else None
        if retry_after is not None:
            wait = retry_after
        if time.monotonic() - started + wait > RETRY_BUDGET_S:
            return False
        clock.pause()  # a backoff is not the server's silence
        return not self._closed.wait(wait)

    def _describe_transport(self, exc: Exception, sent: _Sent, attempt: int) -> str:
        if isinstance(exc, OfflineModeIsEnabled):
            return "HF_HUB_OFFLINE=1 blocks every model request — unset it to call the model"
        if isinstance(exc, TextGenerationError):
            return f"the model server reported an error: {self.settings.redact(str(exc))[:200]}"
        if isinstance(exc, _Cut) or sent.responded:
            # llama.cpp's server answers a streamed request longer than its context so: 200, and no body
            return (f"the server ended the reply before sending anything, {attempt} times — it may be overloaded, or "
                    "the request may be longer than the model's context window")
        return f"could not reach the model server at {self._where()} after {attempt} tries ({type(exc).__name__})"

    def _where(self) -> str:
        return self.settings.where()

    def close(self) -> None:
        """End any in-flight stream (or wait for a slot); later calls fail fast with 'the run was stopped'."""
        self._closed.set()
        if self._gate is not None:
            self._gate.wake()
        with self._thread_lock:
            if self._thread is not None:
                abort.abort_thread(self._thread)
        try:
            self._client.close()
        except Exception:  # closing must never raise
            log.warning("closing the model client failed", exc_info=True)


def _make_client(settings: LLMSettings) -> InferenceClient:
    hf_stream_parse.install()  # the same typed chunks at a fraction of the CPU (checked once per process)
    if settings.base_url:
        # Without a key, huggingface_hub would fill in HF_TOKEN (or a stored login) for any URL; a
        # header of None overrides its default and is dropped before sending, so a base_url server
        # gets LLM_API_KEY or no Authorization header at all — never a Hugging Face token.
        auth = f"Bearer {settings.token}" if settings.token else None
        return InferenceClient(base_url=settings.base_url, timeout=settings.timeout_s,
                               headers={"authorization": auth})  # type: ignore[dict-item]
    return InferenceClient(provider=settings.provider, token=settings.token, timeout=settings.timeout_s)


class _Cut(Exception):
    """The stream ended without a ``finish_reason``: the server never said the reply was whole."""


class _Sent:
    """What one attempt received: whether headers came, how much was streamed, the finish reason."""

    def __init__(self) -> None:
        self.responded = False
        self.pieces = self.chars = 0
        self.finish: str | None = None

    def add(self, chunk: Chunk) -> None:
        self.finish = chunk.finish_reason or self.finish
        if chunk.text or chunk.reasoning or chunk.tool_calls:
            self.pieces += 1
            self.chars += len(chunk.text) + len(chunk.reasoning) + sum(len(c.arguments) for c in chunk.tool_calls)

    @property
    def any(self) -> bool:
        return self.pieces > 0

    @property
    def tokens(self) -> int:
        """Servers stream about one token per chunk; ~4 characters a token when chunks are bigger."""
        return max(self.pieces, self.chars // 4)


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
    finish = (getattr(choices[0], "finish_reason", None) or None) if choices else None
    prompt = getattr(usage, "prompt_tokens", None) if usage else None
    completion = getattr(usage, "completion_tokens", None) if usage else None
    if not (text or reasoning or calls or usage or finish):
        return None
    return Chunk(text=text, reasoning=reasoning, tool_calls=calls, prompt_tokens=prompt, completion_tokens=completion,
                 finish_reason=finish)


def _extra(obj: Any, key: str) -> Any:
    """Fields the generated types do not declare are kept in the object's dict form."""
    try:
        return obj.get(key) if hasattr(obj, "get") else getattr(obj, key, None)
    except Exception:  # a malformed chunk field reads as absent
        log.warning("could not read %r from a streamed chunk", key, exc_info=True)
        return None


def _log_failure(exc: Exception, attempt: int, server: str, *, stopped: bool) -> None:
    """Expected ends of a call (Stop, a dropped or cut stream, a timeout) are one info line; anything
    else keeps its traceback at warning level: a bug must not pass for a flaky server."""
    expected = (_Cut, httpx.HTTPError, OSError, OfflineModeIsEnabled, TextGenerationError)
    if stopped or isinstance(exc, expected):
        log.info("model call attempt %d to %s ended: %s: %s", attempt, server, type(exc).__name__, exc)
    else:
        log.warning("model call attempt %d to %s failed unexpectedly", attempt, server, exc_info=True)


def _is_transient(exc: Exception) -> bool:
    return isinstance(exc, (httpx.TransportError, TimeoutError, ConnectionError)) and not isinstance(
        exc, OfflineModeIsEnabled
    )
