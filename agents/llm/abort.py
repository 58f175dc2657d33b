"""Let a run interrupt its own blocked HTTP read from another thread.

A request still waiting for the server's headers sits in ``recv()``, which closing its client does not wake;
``shutdown()`` of its socket does. So huggingface_hub's shared httpx client gets a network backend (attached by
``patches/httpx_backend.py``) that notes, per thread, the socket that thread blocks on, and :func:`abort_thread`
shuts down exactly that one: Stop ends a waiting request at once, and no other visitor's connection is touched.
Why it is process-wide: docs/design.md, "Stop that really stops". In a run worker the same backend reads a
flowing stream in batches (:func:`batch_reads`).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from typing import Any

import httpcore2
from huggingface_hub.utils import _http as hf_http
from huggingface_hub.utils import httpx  # httpx2 under its stable alias

from agents.llm import pool
from patches.httpx_backend import attach_backend
from patches.httpx_batched_reads import PATCH as BATCHED_READS

READ_EVERY_S = 0.05  # a flowing stream's socket is read at most this often (well under the 0.1 s frame interval)
_read_every = 0.0  # what this process does: batch_reads() turns it on (the run workers, whose runs feed frames)

log = logging.getLogger(__name__)

_active: dict[int, socket.socket] = {}
_aborted: set[int] = set()  # threads told to stop before they reached a socket
_lock = threading.Lock()
_installed = False


def _enter(sock: socket.socket) -> int:
    """Note that this thread now blocks on ``sock`` (shut it down at once if an abort came first)."""
    tid = threading.get_ident()
    with _lock:
        _active[tid] = sock
        stop = tid in _aborted
    if stop:  # close() came first: fail this read at once rather than wait for the server
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    return tid


def _leave(tid: int, sock: socket.socket) -> None:
    with _lock:
        if _active.get(tid) is sock:
            del _active[tid]


class _Stream(httpcore2.NetworkStream):
    """Delegates to the real stream, registering the socket while this thread blocks on it (every read of
    every streamed chunk passes here: plain calls, no context manager).

    With ``read_every`` > 0, a read less than that after the last one waits out the rest first, unless the
    last read found the buffer full (more is waiting) or had itself waited that long (a slow stream gains
    nothing). A write (a new request on a kept-alive connection) starts afresh."""

    def __init__(self, inner: httpcore2.NetworkStream, read_every: float = 0.0) -> None:
        self._inner = inner
        self._sock = inner.get_extra_info("socket")
        self._read_every = read_every
        self._next_read = 0.0  # monotonic time before which a read first sleeps

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._read_every and (wait := self._next_read - time.monotonic()) > 0:
            time.sleep(wait)
        tid = _enter(self._sock)
        started = time.monotonic()
        try:
            data = self._inner.read(max_bytes, timeout)
        finally:
            _leave(tid, self._sock)
        ended = time.monotonic()
        flowing = len(data) < max_bytes and ended - started < self._read_every
        self._next_read = ended + self._read_every if flowing else 0.0
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._next_read = 0.0
        tid = _enter(self._sock)
        try:
            self._inner.write(buffer, timeout)
        finally:
            _leave(tid, self._sock)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        tid = _enter(self._sock)
        try:
            return _Stream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._read_every)
        finally:
            _leave(tid, self._sock)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore2.NetworkBackend):
    def __init__(self, read_every: float = 0.0) -> None:
        self._inner = httpcore2.SyncBackend()
        self._read_every = read_every

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options), self._read_every)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, timeout, socket_options), self._read_every)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _client_factory() -> Any:
    """huggingface_hub's default client, over :class:`~agents.llm.pool.ShardedTransport` with our backend under
    each shard.

    The hooks, redirects and timeout are copied from huggingface_hub's own factory, which has no parameter for
    the transport. Its limits would be httpx's default of 100 connections (50 visitors running All are 150
    streams at once); each shard has :data:`~agents.llm.pool.SHARD_LIMITS`. Putting the backend there is a
    patch (``patches/httpx_backend.py``): if it cannot be done we keep the client, the log says so, and only
    early aborts are lost.
    """
    default = hf_http.default_client_factory()
    transport = pool.ShardedTransport(lambda: httpx.HTTPTransport(limits=pool.SHARD_LIMITS))
    # else: one log line, a request waiting for headers ends at LLM_TIMEOUT, and no batching
    attach_backend(transport.shards, _Backend(_read_every if BATCHED_READS.wanted() else 0.0))
    client = httpx.Client(event_hooks=default.event_hooks, follow_redirects=default.follow_redirects,
                          timeout=default.timeout, headers=default.headers, transport=transport)
    default.close()
    return client


def install() -> None:
    """Install the abortable backend for huggingface_hub's shared client (idempotent)."""
    global _installed
    with _lock:  # held until the factory is set: a thread that finds it installed must get the abortable client
        if _installed:
            return
        hf_http.set_client_factory(_client_factory)
        _installed = True


def batch_reads(seconds: float = READ_EVERY_S) -> None:
    """Read flowing streams at most every ``seconds`` in this process (a run worker calls it before any client is
    made: the shared client's backend takes the value when it is built).

    A thread woken for every token costs 3-5x the work of the token itself on a small VM, so a read that comes soon
    after the last one first lets the socket gather what the server sends meanwhile. Frames go out every 0.1 s at
    most, so the screen loses nothing, but a call ends up to ``seconds`` after its last token: the engine used
    directly (the CLI, the Benchmark tab, bench_engine.py's per-call overhead) reads each chunk as it comes.
    """
    global _read_every
    _read_every = seconds


def clear_thread(thread_id: int) -> None:
    """Forget an earlier abort of this thread id (ids are reused by new threads)."""
    with _lock:
        _aborted.discard(thread_id)


def abort_thread(thread_id: int) -> bool:
    """Shut down the socket ``thread_id`` is blocked on now, and any it blocks on later until
    :func:`clear_thread`; True when a socket was shut down now."""
    with _lock:
        _aborted.add(thread_id)
        sock = _active.get(thread_id)
    if sock is None:
        return False
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    return True
