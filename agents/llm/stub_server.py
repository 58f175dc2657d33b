"""A local OpenAI-compatible server for tests, benchmarks and offline demos.

The real ``InferenceClient`` is pointed at it with ``base_url``, so every test exercises the real HTTP, SSE
and error paths. Replies are scripted (a FIFO of :class:`StubReply`) or made by a responder; latency and
faults are injectable per reply (:class:`StubReply`'s fields) or per server (:class:`StubLLMServer`). Run
standalone (``python -m agents stub``) it answers with the toy model (:mod:`agents.llm.toy_model`), so the
app and CLI can be tried offline.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents.llm.stub_replies import Responder, StubReply, sse_events
from agents.llm.toy_model import talkative, toy_policy

__all__ = ["RecordedRequest", "Responder", "StubLLMServer", "StubReply", "sse_events", "talkative", "toy_policy"]



@dataclass
class RecordedRequest:
    body: dict[str, Any]
    headers: dict[str, str]
    started: float
    first_byte: float | None = None
    finished: float | None = None
    counted: bool = False  # counted in the server's requests in flight (until its last event is on its way)
    cut: bool = False  # one_at_a_time: the server ended this reply because another request waited


class StubLLMServer:
    """Threaded SSE server on 127.0.0.1; use as a context manager. ``url`` ends in ``/v1``.

    ``one_at_a_time=True`` behaves like llama-cpp-python 0.3's server with its default ``interrupt_requests=True``
    (``llama_cpp/server/app.py``, seen on it too): every request gets its headers at once, then waits for the one
    model behind two locks (a request waiting for the model holds the outer one); the reply in flight, after each
    chunk it sends, sees the outer lock taken and ends — ``data: [DONE]`` without a ``finish_reason``, then the
    connection closes mid-body. So of three requests sent together the first two are closed and the third is
    served; a reply's time is known exactly (``first_token_delay`` once it has the model, ``token_delay`` a chunk).
    ``serial=True`` queues requests for the one model without a word (no headers) until their turn.
    ``GET /v1/models`` lists ``models`` (``None``: no such endpoint, a 404);
    ``unknown_model="ollama" | "vllm" | "openai"`` refuses a request for a model not listed the way that server
    does (a 404 with its body; OpenAI's carries ``"code": "model_not_found"``). ``price=(input, output)`` (USD
    per million tokens) lists that price on every model, in the Hugging Face router's shape (one live provider,
    "stub", with ``pricing``), so a test prices a run through the same HTTP listing as the router's.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency: float = 0.0,
        token_delay: float = 0.0,
        chunk_chars: int = 8,
        port: int = 0,
        one_at_a_time: bool = False,
        serial: bool = False,
        models: tuple[str, ...] | None = ("stub",),
        unknown_model: str | None = None,
        price: tuple[float, float] | None = None,
    ) -> None:
        if unknown_model not in (None, *UNKNOWN_MODEL):
            raise ValueError(f"unknown_model must be one of {sorted(UNKNOWN_MODEL)}, not {unknown_model!r}")
        self.responder = responder or toy_policy
        self.models, self.unknown_model, self.price = models, unknown_model, price
        self.latency, self.token_delay, self.chunk_chars = latency, token_delay, chunk_chars
        self.one_at_a_time = one_at_a_time
        self.serial = serial  # requests queue for the single model, unanswered (Ollama with OLLAMA_NUM_PARALLEL=1)
        self._model_lock = threading.Lock()  # serial: the single model
        self._outer, self._inner = threading.Lock(), threading.Lock()  # one_at_a_time: llama-cpp-python's two locks
        self.max_in_flight = 0  # most requests ever streamed at once (tests of LLM_MAX_CONCURRENT)
        self._in_flight = 0
        self.requests: list[RecordedRequest] = []
        self.model_lists = 0  # GET /v1/models requests answered (a named model is used unchecked: none)
        self._script: collections.deque[StubReply] = collections.deque()
        self._held: dict[str, StubReply] = {}  # replies whose request was refused for `stop`, by conversation
        self._lock = threading.Lock()
        self._shutdown = threading.Event()
        self._httpd = _QuietServer(("127.0.0.1", port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    def listed(self, model: str) -> dict[str, Any]:
        """How ``GET /v1/models`` lists ``model``: with the router's ``providers[].pricing`` when priced."""
        return _listing_entry(model, self.price)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def landed(self, record: RecordedRequest) -> None:
        """A request leaves the count in flight: before its last event is written, not when its handler thread
        returns (on a busy machine that thread may run again only after the client has sent its next call, which
        would count two calls at once that never overlapped)."""
        with self._lock:
            if record.counted:
                record.counted = False
                self._in_flight -= 1

    @property
    def in_flight(self) -> int:
        """Requests being answered right now (a paused run must leave none open)."""
        with self._lock:
            return self._in_flight

    def script(self, *replies: StubReply | str) -> StubLLMServer:
        """Queue replies served before the responder is consulted (strings become text replies)."""
        with self._lock:
            self._script.extend(StubReply(text=r) if isinstance(r, str) else r for r in replies)
        return self

    def next_reply(self, body: dict[str, Any]) -> StubReply:
        with self._lock:
            held = self._held.pop(_conversation(body), None)
            if held is not None:  # the retry without `stop` of a refused request
                return held
            if self._script:
                return self._script.popleft()
        return self.responder(body)

    def start(self) -> StubLLMServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="stub-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._shutdown.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> StubLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def server_seconds(self) -> float:
        """Total time the server spent on requests (first byte of request → end of body)."""
        return sum((r.finished or r.started) - r.started for r in self.requests)


class _QuietServer(ThreadingHTTPServer):
    """Clients abandon streams on purpose (the cut at ``Observation``, Stop): not worth a traceback."""

    request_queue_size = 128  # bursts of visitors connect at once; the default backlog of 5 stalls them

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


# How servers refuse a model they do not have (status 404 each): the body, given the model asked for.
UNKNOWN_MODEL = {
    "ollama": lambda m: {"error": {"message": f'model "{m}" not found, try pulling it first', "type": "api_error",
                                   "param": None, "code": None}},
    "vllm": lambda m: {"object": "error", "message": f"The model `{m}` does not exist.", "type": "NotFoundError",
                       "param": None, "code": 404},
    "openai": lambda m: {"error": {"message": f"The model `{m}` does not exist or you do not have access to it.",
                                   "type": "invalid_request_error", "param": None, "code": "model_not_found"}},
}


def _conversation(body: dict[str, Any]) -> str:
    """A request's messages as a key: a retry of the same call carries the same ones."""
    return json.dumps(body.get("messages"), sort_keys=True, default=str)


def _make_handler(server: StubLLMServer) -> type[BaseHTTPRequestHandler]:
    """A handler class bound to ``server`` (``http.server`` builds one handler per request from a class)."""
    return type("Handler", (_Handler,), {"stub": server})


def _listing_entry(model: str, price: tuple[float, float] | None) -> dict[str, Any]:
    """One ``data[]`` entry of ``GET /v1/models``; with a price, the router's ``providers[].pricing`` too."""
    entry: dict[str, Any] = {"id": model, "object": "model", "owned_by": "stub"}
    if price is not None:
        entry["providers"] = [{"provider": "stub", "status": "live", "context_length": 8192, "supports_tools": True,
                               "pricing": {"input": price[0], "output": price[1]}}]
    return entry


class _Handler(BaseHTTPRequestHandler):
    """One request to the stub: records it, takes the next scripted reply and plays it back as SSE."""

    protocol_version = "HTTP/1.1"
    stub: StubLLMServer  # set by _make_handler

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:  # /v1/models: what clients ask to learn the model's name
        models = self.stub.models
        with self.stub._lock:
            self.stub.model_lists += 1
        if self.path.rstrip("/") != "/v1/models" or models is None:
            return self._send_json(404, {"detail": "Not Found"})
        self._send_json(200, {"object": "list", "data": [self.stub.listed(m) for m in models]})

    def do_POST(self) -> None:
        server = self.stub
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        record = RecordedRequest(body, {k.lower(): v for k, v in self.headers.items()}, time.perf_counter())
        with server._lock:
            server.requests.append(record)
        if server.unknown_model and body.get("model") not in (server.models or ()):
            return self._send_json(404, UNKNOWN_MODEL[server.unknown_model](body.get("model")))
        reply = server.next_reply(body)
        self._count(record)
        try:
            if server.one_at_a_time and reply.status == 200 and not reply.hang:
                self._serve_one_at_a_time(reply, body, record)
            elif server.serial:
                with server._model_lock:
                    self._serve(reply, body, record)
            else:
                self._serve(reply, body, record)
        finally:
            record.finished = time.perf_counter()
            server.landed(record)

    def _count(self, record: RecordedRequest) -> None:
        """The request is in flight (waiting for the model or answered), until :meth:`StubLLMServer.landed`."""
        server = self.stub
        with server._lock:
            server._in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server._in_flight)
            record.counted = True

    def _serve_one_at_a_time(self, reply: StubReply, body: dict[str, Any], record: RecordedRequest) -> None:
        """llama-cpp-python's ``get_event_publisher``: headers at once; the model behind the outer lock, then the
        inner one (the outer released as the inner is taken); after each chunk, a taken outer lock ends the reply."""
        server = self.stub
        if reply.reject_stop and body.get("stop"):
            return self._serve(reply, body, record)
        self._headers()
        with server._outer:
            server._inner.acquire()
        try:
            delay = server.latency if reply.first_token_delay is None else reply.first_token_delay
            if delay:
                time.sleep(delay)
            self._stream(reply, body, record, cut=server._outer.locked)
        finally:
            server._inner.release()

    def _serve(self, reply: StubReply, body: dict[str, Any], record: RecordedRequest) -> None:
        server = self.stub
        if reply.hang:
            server._shutdown.wait(300)
            return
        if reply.reject_stop and body.get("stop"):
            with server._lock:  # the client's retry without `stop` (same messages) gets this same reply,
                server._held[_conversation(body)] = reply  # not another mode's concurrent request
            return self._send_json(400, {"error": {"message": "Unsupported parameter: 'stop' is not supported"}})
        if reply.status != 200:
            error = {"message": reply.error_body or f"stub error {reply.status}"}
            if reply.error_code:  # the shape of OpenAI's, vLLM's and llama-cpp-python's errors
                error.update(type="invalid_request_error", code=reply.error_code)
            return self._send_json(reply.status, {"error": error}, reply.headers)
        delay = server.latency if reply.first_token_delay is None else reply.first_token_delay
        if delay:
            time.sleep(delay)
        self._headers()
        self._stream(reply, body, record)

    def _headers(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")  # so a dropped connection is an error, as in production
        self.end_headers()
        self.wfile.flush()

    def _stream(self, reply: StubReply, body: dict[str, Any], record: RecordedRequest,
                cut: Callable[[], bool] = lambda: False) -> None:
        """The SSE body, with the reply's scripted faults (disconnect, early end, pause); ``cut``, asked after each
        chunk, ends the reply as llama-cpp-python ends one another request waits behind."""
        server = self.stub
        events = sse_events(reply, body, server.chunk_chars)
        token_delay = server.token_delay if reply.token_delay is None else reply.token_delay
        due = time.perf_counter()  # each chunk is paced on absolute time, as a server paces its tokens
        for i, event in enumerate(events):
            if reply.disconnect_after is not None and i >= reply.disconnect_after:
                return self._drop()
            if reply.end_after is not None and i >= reply.end_after:
                return self._end_body()
            if i and reply.pause_after == i:
                time.sleep(reply.pause_s)
                due = time.perf_counter()
            elif i and token_delay:
                due += token_delay
                if (wait := due - time.perf_counter()) > 0:
                    time.sleep(wait)
            if i == len(events) - 1:  # the client may end the call (and start another) once it has this one
                server.landed(record)
            self._chunk(f"data: {event}\n\n".encode())
            if record.first_byte is None:
                record.first_byte = time.perf_counter()
            if i < len(events) - 1 and cut():
                record.cut = True
                server.landed(record)
                self._chunk(b"data: [DONE]\n\n")  # what llama-cpp-python sends the reply it ends, then it hangs up
                return self._drop()
        self._chunk(b"data: [DONE]\n\n")
        self._end_body()

    def _drop(self) -> None:
        """An abrupt end: no terminating chunk, the connection closed."""
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(2)

    def _end_body(self) -> None:
        """A clean end of the chunked body (the connection may be reused)."""
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)



