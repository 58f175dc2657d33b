"""The load benchmark's stand-in model: the stub's replies served by one asyncio loop (Starlette on uvicorn).

Why a second stub server beside :mod:`agents.llm.stub_server` (the app's toy model, the CLI's ``stub`` and the
tests' server, with fault injection): that one spends a thread per stream and paces with ``time.sleep``, so
under the bench's crowds (hundreds of streams at once) on 2 shared cores it falls behind its own pace, and the
bench would measure the stand-in, not the app. Here every stream is a coroutine on one loop, paced against
absolute times (:meth:`AsyncStubServer._paced`). Same replies, same SSE shape. Only the bench uses it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agents.llm.stub_replies import Responder, StubReply, sse_events
from agents.llm.stub_server import RecordedRequest
from agents.llm.toy_model import toy_policy


class AsyncStubServer:
    """An OpenAI-compatible SSE server on 127.0.0.1 in a background thread; use as a context manager."""

    def __init__(self, responder: Responder | None = None, *, latency: float = 0.0, token_delay: float = 0.0,
                 chunk_chars: int = 8, backlog: int = 2048) -> None:
        self.responder = responder or toy_policy
        self.latency, self.token_delay, self.chunk_chars = latency, token_delay, chunk_chars
        self.requests: list[RecordedRequest] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"]),
                                Route("/v1/models", self._models, methods=["GET"])])
        config = uvicorn.Config(app, loop="asyncio", http="h11", lifespan="off", log_level="warning",
                                access_log=False, backlog=backlog, timeout_keep_alive=30)
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def start(self) -> AsyncStubServer:
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="async-stub-llm", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._server.started:
            raise RuntimeError("the asyncio stub server did not start within 10 s")
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._sock.close()

    def __enter__(self) -> AsyncStubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "stub", "object": "model"}]})

    async def _chat(self, request: Request) -> Response:
        arrived = time.perf_counter()
        body = json.loads(await request.body() or b"{}")
        record = RecordedRequest(body, {k.lower(): v for k, v in request.headers.items()}, arrived)
        self.requests.append(record)  # list.append is atomic; the bench reads a copy from another thread
        reply = self.responder(body)
        if reply.status != 200 or (reply.reject_stop and body.get("stop")):
            record.finished = time.perf_counter()
            return _error(reply, body)
        return StreamingResponse(self._paced(reply, body, record), media_type="text/event-stream")

    async def _paced(self, reply: StubReply, body: dict[str, Any], record: RecordedRequest) -> AsyncIterator[bytes]:
        """The reply's SSE events, each at its due time measured from the request's arrival
        (``arrival + latency + i × token_delay``), so a late wake-up does not push every later token back: the
        replies keep the pace they promise as long as the process gets a little CPU. ``record`` notes the first
        byte and the end, for the bench's "first text after the server's first token"."""
        loop = asyncio.get_running_loop()
        start = loop.time() - (time.perf_counter() - record.started)  # the arrival on the loop's clock
        latency = self.latency if reply.first_token_delay is None else reply.first_token_delay
        delay = self.token_delay if reply.token_delay is None else reply.token_delay
        try:
            for i, event in enumerate(sse_events(reply, body, self.chunk_chars)):
                wait = start + latency + i * delay - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                yield f"data: {event}\n\n".encode()
                if record.first_byte is None:  # resumed: the first chunk has been handed to the socket
                    record.first_byte = time.perf_counter()
            yield b"data: [DONE]\n\n"
        finally:
            record.finished = time.perf_counter()


def _error(reply: StubReply, body: dict[str, Any]) -> Response:
    """A refused request, as the thread stub answers it (a 400 for ``stop``, or the reply's status)."""
    if reply.status == 200:
        return JSONResponse({"error": {"message": "Unsupported parameter: 'stop' is not supported"}}, status_code=400)
    message = reply.error_body or f"stub error {reply.status}"
    return JSONResponse({"error": {"message": message}}, status_code=reply.status, headers=reply.headers)
