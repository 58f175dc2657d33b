"""The model client's pool shards (agents/llm/pool.py): each thread keeps one shard, threads are dealt evenly,
and the shared client sends real requests through them."""

from __future__ import annotations

import threading
from collections import Counter

from huggingface_hub.utils import httpx

from agents.llm import abort, pool


def _recording_shards(count: int) -> tuple[pool.ShardedTransport, list[str]]:
    served: list[str] = []
    made = iter(range(count))

    def shard() -> httpx.BaseTransport:
        name = f"shard-{next(made)}"

        def handle(request: httpx.Request) -> httpx.Response:
            served.append(name)
            return httpx.Response(200, text=name)

        return httpx.MockTransport(handle)

    return pool.ShardedTransport(shard, shards=count), served


def test_a_thread_keeps_its_shard_and_threads_are_dealt_evenly():
    transport, served = _recording_shards(4)
    client = httpx.Client(transport=transport)
    per_thread: dict[int, set[str]] = {}

    def calls(i: int) -> None:
        per_thread[i] = {client.get("http://model.test/v1/models").text for _ in range(3)}

    threads = [threading.Thread(target=calls, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
        thread.join()  # one at a time: dealt in order
    assert all(len(names) == 1 for names in per_thread.values())  # a thread's requests share one pool
    assert Counter(served) == {f"shard-{i}": 6 for i in range(4)}  # 8 threads over 4 shards, 3 requests each
    client.close()


def test_closing_the_transport_closes_every_shard():
    closed: list[int] = []

    class Shard(httpx.BaseTransport):
        def close(self) -> None:
            closed.append(1)

    pool.ShardedTransport(Shard, shards=5).close()
    assert len(closed) == 5


def test_the_shared_client_sends_through_its_shards():
    """A real request over 127.0.0.1 through the client huggingface_hub uses, with our backend under each shard."""
    import socketserver
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        client = abort._client_factory()
        try:
            assert isinstance(client._transport, pool.ShardedTransport)
            assert len(client._transport.shards) == pool.SHARDS
            assert client.get(f"http://127.0.0.1:{server.server_address[1]}/").text == "ok"
        finally:
            client.close()
            server.shutdown()
