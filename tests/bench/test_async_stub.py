"""The bench's asyncio stand-in model serves the thread stub's replies, paced, to the real client."""

from __future__ import annotations

import threading

import pytest
from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError

from agents.llm.stub_server import StubReply, sse_events, toy_policy
from bench.async_stub import AsyncStubServer


def ask(url: str, question: str, **kwargs) -> tuple[str, list]:
    client = InferenceClient(base_url=url)
    try:
        chunks = list(client.chat_completion([{"role": "user", "content": question}], model="stub", stream=True,
                                             stream_options={"include_usage": True}, **kwargs))
    finally:
        client.close()
    return "".join((c.choices[0].delta.content or "") for c in chunks if c.choices), chunks


def test_it_streams_the_same_events_as_the_thread_stub():
    with AsyncStubServer(latency=0.05, token_delay=0.001, chunk_chars=4) as stub:
        text, chunks = ask(stub.url, "What is 6 * 7?")
    body = {"model": "stub", "messages": [{"role": "user", "content": "What is 6 * 7?"}]}
    assert text == toy_policy(body).text and text
    assert chunks[-2].choices[0].finish_reason == "stop" and chunks[-1].usage.total_tokens > 0
    assert len(chunks) == len(sse_events(toy_policy(body), {**body, "stream_options": {"include_usage": True}}, 4))
    (record,) = stub.requests
    assert record.started + 0.05 <= record.first_byte <= record.finished  # first token after the latency


def test_many_streams_at_once_keep_the_promised_pace():
    """30 simultaneous streams: each first token ~latency after its request (loose bound, not a benchmark)."""
    with AsyncStubServer(latency=0.3, token_delay=0.002, chunk_chars=4) as stub:
        threads = [threading.Thread(target=ask, args=(stub.url, f"What is {k} + 1?")) for k in range(30)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert len(stub.requests) == 30
    assert all(0.3 <= r.first_byte - r.started < 2.0 for r in stub.requests)


def test_an_error_reply_is_an_http_error():
    with AsyncStubServer(lambda body: StubReply(status=503, error_body="busy")) as stub:
        with pytest.raises(HfHubHTTPError) as caught:
            ask(stub.url, "hi")
    assert caught.value.response.status_code == 503
    assert stub.requests[0].finished is not None
