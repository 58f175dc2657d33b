"""The real model client: ``huggingface_hub.InferenceClient``, streamed, with honest failure messages.

``InferenceClient`` speaks both the HF router and any OpenAI-compatible ``base_url``; this module adds retries for
429/5xx and dropped connections, a reply trusted only when the server says it is finished, limits on silence
(``LLM_TIMEOUT``) and on a whole call (``LLM_MAX_DURATION``), the gate on calls in flight
(``agents/llm/gate.py``), every wait said as it begins and ends (``Chunk.news``), and every failure as one human
line. One instance per run: closing it ends that run's in-flight stream and nobody else's.
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

from agents.events import BACKOFF, QUEUE, TURN, Waited, Waiting
from agents.llm import abort, http_errors, watchdog
from agents.llm.base import Chunk, LLMFailure, Message
from agents.llm.chunks import to_chunk
from agents.llm.gate import Gate, gate_for
from agents.llm.gate import streams as open_streams
from agents.llm.settings import LLMSettings
from patches import hf_stream_parse

log = logging.getLogger(__name__)

MAX_TRIES = 3
RETRY_BUDGET_S = 10.0
MAX_INTERRUPTIONS = 2  # a reply a one-at-a-time server closed is asked for again, in its turn, this many times
ONE_AT_A_TIME = "it may serve one request at a time (llama-cpp-python's server does); set LLM_MAX_CONCURRENT=1"
INTERRUPTED = f"the server closed this reply when another request arrived — {ONE_AT_A_TIME}"
LEARNED = ("the model server closed this reply when another request arrived: it serves one request at a time, so "
           "the app now sends it one at a time, and asks for this reply again in its turn")


class HFInferenceModel:
    """:class:`~agents.llm.base.ChatModel` over ``InferenceClient`` (router or ``base_url``).

    ``InferenceClient``'s own ``timeout`` is per socket operation, hence the limits on silence and on a whole call;
    a server that rejects ``stop`` is asked again without it.
    """

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
        self._gate = _gate_of(settings)
        self._turns = _learns(self._gate)  # a server that may serve one at a time: our calls to it note their chunks
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
        stream that just stops is a failure too. A call that must wait for its gate's slot, or for a
        back-off, says so as the wait begins and ends (``Chunk.news``). A reply a server closed because
        another of ours arrived teaches the gate that the server serves one request at a time (unless
        ``LLM_MAX_CONCURRENT`` is set) and is asked for again in its turn.
        """
        kwargs: dict[str, Any] = {"max_tokens": max_tokens or self.settings.max_tokens,
                                  "temperature": temperature, "tools": tools or None}
        stop = None if self._stop_rejected else (stop or None)
        gate, cut, learned = self._gate, 0, False
        while True:
            waited = yield from self._turn(gate, again=cut > 0, learned=learned)
            try:
                if waited is not None:
                    yield Chunk(news=waited)
                yield from self._call(messages, stop, kwargs)
                return
            except LLMFailure as exc:
                if exc.reason != "interrupted" or not _learns(gate) or cut >= MAX_INTERRUPTIONS:
                    raise
                cut += 1
                learned = gate.learn()  # type: ignore[union-attr]  # _learns: a gate
            finally:
                if gate is not None:
                    gate.release()

    def _turn(self, gate: Gate | None, *, again: bool, learned: bool) -> Iterator[Chunk]:
        """Take a slot of the gate, waiting in line when it has none free (saying so); returns the :class:`Waited`
        to pass on, or None when the call did not wait. ``again``: a reply the server closed is asked for again,
        which the mode must hear even when the slot is free at once (what it streamed is not the reply)."""
        if gate is None or (not again and gate.try_acquire()):
            return None
        cause = QUEUE if gate.limit else TURN
        ahead = gate.ahead
        line = (f"{LEARNED} ({ahead} ahead of it)" if learned else
                f"waiting for a free slot: LLM_MAX_CONCURRENT={gate.limit}, {ahead} ahead of this call" if gate.limit
                else f"waiting for the model server: it serves one request at a time, {ahead} ahead of this one")
        began = time.monotonic()
        yield Chunk(news=Waiting(line, cause, learned=learned))
        if not gate.acquire(self._closed.is_set):
            raise LLMFailure("the run was stopped", reason="stopped")
        return Waited(round(time.monotonic() - began, 3), cause)

    def _call(self, messages: list[Message], stop: list[str] | None, kwargs: dict[str, Any]) -> Iterator[Chunk]:
        """One call under the watchdog's clock, registered as an open stream to its server."""
        ticket = open_streams.opened(self._server)
        clock = watchdog.watch(self.settings.timeout_s, self.settings.max_duration_s, self._expire)
        if self._turns:  # queued in a one-at-a-time server behind our other calls, a call waits; it is not silence
            gate, server = self._gate, self._server
            clock.turn = lambda: open_streams.last_beat(server) if gate.learned else None  # type: ignore[union-attr]
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
                if retry and (yield from self._back_off(attempt, started, exc, clock)):
                    continue
                raise LLMFailure(http_errors.describe(exc, status, attempt, self.settings)) from None
            except LLMFailure:
                raise
            except Exception as exc:  # noqa: BLE001 - every transport failure becomes one line (logged)
                _log_failure(exc, attempt, self._server, stopped=self._closed.is_set())
                failure = self._failure(exc, sent, clock, ticket, attempt)
                if failure is None and (yield from self._back_off(attempt, started, None, clock)):
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
            if self._turns:
                open_streams.beat(self._server)
            self.answered = getattr(out, "model", None) or self.answered
            chunk = to_chunk(out)
            if chunk is not None:
                yield chunk

    def _back_off(self, attempt: int, started: float, exc: HfHubHTTPError | None,
                  clock: watchdog.Watch) -> Iterator[Chunk]:
        """Wait before the next try (exponential backoff with jitter, honouring Retry-After) if the budget allows,
        saying so as the wait begins and ends; returns whether to try again."""
        if attempt >= MAX_TRIES or self._closed.is_set():
            return False
        wait = min(4.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + random.random())
        retry_after = http_errors.retry_after(exc) if exc is not None else None
        if retry_after is not None:
            wait = retry_after
        if time.monotonic() - started + wait > RETRY_BUDGET_S:
            return False
        clock.pause()  # a backoff is not the server's silence
        status = http_errors.status(exc) if exc is not None else None
        why = f"it answered HTTP {status}" if status else "the connection dropped before a reply"
        yield Chunk(news=Waiting(f"waiting for the model server: retry {attempt + 1} in {wait:.1f} s ({why})",
                                 BACKOFF, seconds=round(wait, 2)))
        began = time.monotonic()
        if self._closed.wait(wait):
            return False
        yield Chunk(news=Waited(round(time.monotonic() - began, 3), BACKOFF))
        return True

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


def _gate_of(settings: LLMSettings) -> Gate | None:
    """The gate for this client's calls: the owner's ``LLM_MAX_CONCURRENT``; unset, an automatic gate for an
    ``LLM_BASE_URL`` server (one at a time once it shows it serves one at a time); none for the router (its
    providers serve many) or with ``LLM_MAX_CONCURRENT=0`` (unlimited, by the owner's choice)."""
    limit = settings.max_concurrent
    if limit == 0 or (limit is None and not settings.base_url):
        return None
    return gate_for(settings.server_key(), limit)


def _learns(gate: Gate | None) -> bool:
    """A gate that may learn that its server serves one request at a time (not one the owner set)."""
    return gate is not None and not gate.limit


def _make_client(settings: LLMSettings) -> InferenceClient:
    hf_stream_parse.install()  # the same typed chunks at a fraction of the CPU (checked once per process)
    if settings.base_url:
        # Without a key, huggingface_hub would fill in HF_TOKEN (or a stored login) for any URL; a
        # header of None overrides its default and is dropped before sending, so a base_url server
        # gets LLM_API_KEY or no Authorization header at all — never a Hugging Face token.
        auth = f"Bearer {settings.token}" if settings.token else None
        # The watchdog owns silence (LLM_TIMEOUT): a read queued in a one-at-a-time server behind our other calls
        # waits its turn (watchdog.Watch.turn), which httpx's per-read timeout would cut; it still bounds connects.
        timeout = httpx.Timeout(settings.max_duration_s, connect=settings.timeout_s)
        return InferenceClient(base_url=settings.base_url, timeout=timeout,  # type: ignore[arg-type]
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


def _log_failure(exc: Exception, attempt: int, server: str, *, stopped: bool) -> None:
    """Expected ends of a call (Stop, a dropped or cut stream, a timeout) are one info line; anything
    else keeps its traceback at warning level: a bug must not pass for a flaky server."""
    expected = (_Cut, httpx.HTTPError, OSError, OfflineModeIsEnabled, TextGenerationError)
    if stopped or isinstance(exc, expected):
        log.info("model call attempt %d to %s ended: %s: %s", attempt, server, type(exc).__name__, exc)
    else:
        log.warning("model call attempt %d to %s failed unexpectedly", attempt, server, exc_info=True)


def _is_transient(exc: Exception) -> bool:
    return isinstance(exc, httpx.TransportError | TimeoutError | ConnectionError) and not isinstance(
        exc, OfflineModeIsEnabled)
