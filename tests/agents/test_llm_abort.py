"""The two hooks agents/llm/abort.py relies on (huggingface_hub's set_client_factory, and the httpx2 patch in
patches/httpx_backend.py), checked so that an upgrade fails here with a clear message instead of silently
making Stop wait for LLM_TIMEOUT; and the client's failure log."""

from __future__ import annotations

import logging

import httpcore2
import pytest
from huggingface_hub.inference import _client as inference_client
from huggingface_hub.utils import _http as hf_http
from huggingface_hub.utils import httpx

from agents.llm import abort
from patches import httpx_backend


def test_httpx2_still_lets_us_choose_the_network_backend():
    transports = [httpx.HTTPTransport(), httpx.HTTPTransport()]
    backend = abort._Backend()
    try:
        assert httpx_backend.attach_backend(transports, backend), (
            "httpx2 moved HTTPTransport._pool._network_backend: update patches/httpx_backend.py, "
            "or Stop will end a request still waiting for headers only at LLM_TIMEOUT")
        assert all(t._pool._network_backend is backend for t in transports)
    finally:
        for transport in transports:
            transport.close()


def test_the_backend_goes_under_every_shard_or_none():
    good, bad = httpx.HTTPTransport(), object()
    before = good._pool._network_backend
    assert not httpx_backend.attach_backend([good, bad], abort._Backend())
    assert good._pool._network_backend is before
    good.close()


def test_inference_client_still_uses_huggingface_hub_s_shared_session():
    assert callable(getattr(hf_http, "set_client_factory", None)) and callable(hf_http.default_client_factory), (
        "huggingface_hub removed set_client_factory/default_client_factory: "
        "agents/llm/abort.py.install needs a new hook")
    assert getattr(inference_client, "get_session", None) is hf_http.get_session, (
        "InferenceClient no longer sends its requests through huggingface_hub's get_session(): the abortable backend "
        "installed by agents/llm/abort.py would not be used (Stop would wait for LLM_TIMEOUT)")


def test_a_missing_attribute_is_said_in_the_log_and_the_client_still_works(caplog, monkeypatch):
    monkeypatch.setattr(httpx_backend, "problem", lambda transport: "no _pool._network_backend any more")
    with caplog.at_level(logging.WARNING, logger="patches"):
        client = abort._client_factory()
    client.close()
    assert caplog.text.count("patch httpx_backend is off: no _pool._network_backend") == 1  # not once per shard
    assert isinstance(client, httpx.Client)
    assert not any(isinstance(s._pool._network_backend, abort._Backend) for s in client._transport.shards)


def test_the_backend_wraps_httpcore2_s_sync_backend():
    assert isinstance(abort._Backend(), httpcore2.NetworkBackend)
    assert not abort.attach_backend([object()], abort._Backend())  # no transport at all: refused, no exception


class _BrokenClient:
    """An InferenceClient stand-in with a bug: not a server failure, an exception our code did not expect."""

    def chat_completion(self, *args, **kwargs):
        raise KeyError("regression in the client")

    def close(self) -> None:
        pass


def test_an_unexpected_transport_exception_keeps_its_traceback_in_the_log(caplog):
    """The user gets one line; the log gets the traceback, so a bug does not pass for a flaky server."""
    from agents.llm.base import LLMFailure
    from agents.llm.hf import HFInferenceModel
    from agents.llm.settings import LLMSettings

    model = HFInferenceModel(LLMSettings(base_url="http://127.0.0.1:9/v1", model="m"), client=_BrokenClient())
    with caplog.at_level(logging.INFO, logger="agents.llm.hf"), pytest.raises(LLMFailure):
        list(model.stream([{"role": "user", "content": "hi"}]))
    unexpected = [r for r in caplog.records if r.levelno == logging.WARNING and r.exc_info]
    assert unexpected and unexpected[0].exc_info[0] is KeyError


def _paced_server(chunks: int, gap_s: float):
    """A socket server that sends ``chunks`` small chunks ``gap_s`` apart, then closes; (port, thread)."""
    import socket
    import threading
    import time

    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            for _ in range(chunks):
                conn.sendall(b"data: {}\n\n")
                time.sleep(gap_s)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener.getsockname()[1], thread


def _reads_until_closed(port: int, read_every: float) -> tuple[int, bytes]:
    stream = abort._Backend(read_every).connect_tcp("127.0.0.1", port, timeout=5)
    reads, data = 0, b""
    try:
        while chunk := stream.read(65536, timeout=5):
            reads, data = reads + 1, data + chunk
    finally:
        stream.close()
    return reads, data


def test_a_flowing_stream_is_read_in_batches_and_nothing_is_lost():
    """40 chunks 5 ms apart: read as they come, ~40 reads; read at most every 50 ms, a handful, same bytes."""
    port, server = _paced_server(40, 0.005)
    reads, data = _reads_until_closed(port, abort.READ_EVERY_S)
    server.join(5)
    assert data == b"data: {}\n\n" * 40
    assert reads <= 12, reads  # ~0.2 s of stream in 50 ms batches (generous for a busy machine)


def test_a_slow_stream_gets_no_extra_sleep():
    """Chunks 120 ms apart: each read already waited longer than the batch interval, so none sleeps first."""
    import time

    port, server = _paced_server(5, 0.12)
    started = time.monotonic()
    reads, data = _reads_until_closed(port, abort.READ_EVERY_S)
    server.join(5)
    assert data == b"data: {}\n\n" * 5 and reads == 5
    assert time.monotonic() - started < 0.6 + abort.READ_EVERY_S  # the server's own 0.6 s, plus one batch at most


def test_batched_reads_are_a_run_workers_and_have_their_own_switch(monkeypatch):
    def read_every() -> float:
        client = abort._client_factory()
        try:
            backend = client._transport.shards[0]._pool._network_backend
            assert isinstance(backend, abort._Backend)  # the abort stays whatever the batching
            return backend._read_every
        finally:
            client.close()

    assert read_every() == 0.0  # the engine used directly (CLI, Benchmark tab): each chunk as it comes
    monkeypatch.setattr(abort, "_read_every", 0.0)  # undone after the test
    abort.batch_reads()  # what a run worker does at boot
    assert read_every() == abort.READ_EVERY_S
    monkeypatch.setenv("APP_PATCHES_OFF", "httpx_batched_reads")
    assert read_every() == 0.0
