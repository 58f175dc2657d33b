"""A local OpenAI-compatible server for tests, benchmarks and offline demos.

The real ``InferenceClient`` is pointed at it with ``base_url``, so every test exercises
the real HTTP, SSE and error paths. Replies are scripted (a FIFO of :class:`StubReply`)
or produced by a responder function; latency and faults (HTTP errors with
``Retry-After``, rejecting ``stop``, a mid-stream disconnect, a reply that just ends without
``finish_reason`` or ``[DONE]``, ``finish_reason="length"``, a silent gap, a hung request, no
usage in the stream) are injectable per reply. Bodies use chunked transfer encoding, so a
dropped connection is visible to the client as an error, as it is in production.

``one_at_a_time=True`` behaves like llama-cpp-python's server with its default
``interrupt_requests=True``: a new request aborts the one in flight, which gets ``data: [DONE]``
without a ``finish_reason`` and an end of body, then waits for the model to be free.
``serial=True`` queues requests for the one model without a word until their turn.

Run standalone (``python -m agents stub --port 8800``, :mod:`agents.cli.stub`) to try the app or CLI
with the :func:`toy_policy` model, which uses the calculator for arithmetic questions.
"""

from __future__ import annotations

import collections
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class StubReply:
    """What the server sends for one request."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    usage: tuple[int, int] | None = None  # (prompt, completion); None: estimated from lengths
    status: int = 200
    error_body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    reject_stop: bool = False  # answer 400 when the request carries `stop`
    disconnect_after: int | None = None  # drop the connection after this many SSE events
    end_after: int | None = None  # end the body cleanly after this many SSE events: no finish_reason, no [DONE]
    finish_reason: str | None = None  # overrides "stop"/"tool_calls", e.g. "length"
    pause_after: int | None = None  # go silent for `pause_s` after this many SSE events, then go on
    pause_s: float = 0.0
    usage_in_stream: bool = True  # False: like llama-cpp-python, no usage chunk even if asked
    hang: bool = False  # accept, then never answer
    first_token_delay: float | None = None  # overrides the server's latency
    token_delay: float | None = None


Responder = Callable[[dict[str, Any]], StubReply]


@dataclass
class RecordedRequest:
    body: dict[str, Any]
    headers: dict[str, str]
    started: float
    first_byte: float | None = None
    finished: float | None = None


class StubLLMServer:
    """Threaded SSE server on 127.0.0.1; use as a context manager. ``url`` ends in ``/v1``."""

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
    ) -> None:
        self.responder = responder or toy_policy
        self.latency, self.token_delay, self.chunk_chars = latency, token_delay, chunk_chars
        self.one_at_a_time = one_at_a_time
        self.serial = serial  # requests queue for the single model, unanswered (Ollama with OLLAMA_NUM_PARALLEL=1)
        self._model_lock = threading.Lock()  # one_at_a_time: the single model
        self._current: threading.Event | None = None  # set it to interrupt the request in flight
        self.max_in_flight = 0  # most requests ever streamed at once (tests of LLM_MAX_CONCURRENT)
        self._in_flight = 0
        self.requests: list[RecordedRequest] = []
        self._script: collections.deque[StubReply] = collections.deque()
        self._held: dict[str, StubReply] = {}  # replies whose request was refused for `stop`, by conversation
        self._lock = threading.Lock()
        self._shutdown = threading.Event()
        self._httpd = _QuietServer(("127.0.0.1", port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

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


def _conversation(body: dict[str, Any]) -> str:
    """A request's messages as a key: a retry of the same call carries the same ones."""
    return json.dumps(body.get("messages"), sort_keys=True, default=str)


def _make_handler(server: StubLLMServer) -> type[BaseHTTPRequestHandler]:
    """A handler class bound to ``server`` (``http.server`` builds one handler per request from a class)."""
    return type("Handler", (_Handler,), {"stub": server})


class _Handler(BaseHTTPRequestHandler):
    """One request to the stub: records it, takes the next scripted reply and plays it back as SSE."""

    protocol_version = "HTTP/1.1"
    stub: StubLLMServer  # set by _make_handler

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:  # /v1/models, for clients that probe it
        self._send_json(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})

    def do_POST(self) -> None:
        server = self.stub
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        record = RecordedRequest(body, {k.lower(): v for k, v in self.headers.items()}, time.perf_counter())
        with server._lock:
            server.requests.append(record)
        reply = server.next_reply(body)
        interrupt = threading.Event()
        with server._lock:
            server._in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server._in_flight)
        try:
            self._serve_in_turn(reply, body, record, interrupt)
        finally:
            record.finished = time.perf_counter()
            with server._lock:
                server._in_flight -= 1
                if server._current is interrupt:
                    server._current = None

    def _serve_in_turn(self, reply: StubReply, body: dict[str, Any], record: RecordedRequest,
                       interrupt: threading.Event) -> None:
        """Serve now, or one at a time like a single-slot llama.cpp server (serial / one_at_a_time)."""
        server = self.stub
        if server.one_at_a_time:
            with server._lock:
                if server._current is not None:
                    server._current.set()  # like llama-cpp-python: the newcomer aborts the one in flight
                server._current = interrupt
            with server._model_lock:
                self._serve(reply, body, record, interrupt)
        elif server.serial:
            with server._model_lock:
                self._serve(reply, body, record, interrupt)
        else:
            self._serve(reply, body, record, interrupt)

    def _serve(self, reply: StubReply, body: dict[str, Any], record: RecordedRequest,
               interrupt: threading.Event) -> None:
        server = self.stub
        if reply.hang:
            server._shutdown.wait(300)
            return
        if reply.reject_stop and body.get("stop"):
            with server._lock:  # the client's retry without `stop` (same messages) gets this same reply,
                server._held[_conversation(body)] = reply  # not another mode's concurrent request
            return self._send_json(400, {"error": {"message": "Unsupported parameter: 'stop' is not supported"}})
        if reply.status != 200:
            message = reply.error_body or f"stub error {reply.status}"
            return self._send_json(reply.status, {"error": {"message": message}}, reply.headers)
        delay = server.latency if reply.first_token_delay is None else reply.first_token_delay
        if delay:
            time.sleep(delay)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._stream(reply, body, record, interrupt)

    def _stream(self, reply: StubReply, body: dict[str, Any], record: RecordedRequest,
                interrupt: threading.Event) -> None:
        """The SSE body, with the reply's scripted faults (disconnect, early end, pause) and the abort."""
        server = self.stub
        events = sse_events(reply, body, server.chunk_chars)
        token_delay = server.token_delay if reply.token_delay is None else reply.token_delay
        for i, event in enumerate(events):
            if reply.disconnect_after is not None and i >= reply.disconnect_after:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)  # abrupt: no terminating chunk
                return
            if (reply.end_after is not None and i >= reply.end_after) or interrupt.is_set():
                if interrupt.is_set():
                    self._chunk(b"data: [DONE]\n\n")  # what llama-cpp-python sends the request it aborts
                return self._end_body()
            if i and reply.pause_after == i:
                time.sleep(reply.pause_s)
            elif i and token_delay:
                interrupt.wait(token_delay)
            self._chunk(f"data: {event}\n\n".encode())
            if record.first_byte is None:
                record.first_byte = time.perf_counter()
        self._chunk(b"data: [DONE]\n\n")
        self._end_body()

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


def sse_events(reply: StubReply, body: dict[str, Any], size: int) -> list[str]:
    """The chunk objects of one streamed reply, in OpenAI's shape (both stubs send these)."""
    model = body.get("model") or "stub"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": finish}
        return json.dumps({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0,
                           "model": model, "choices": [choice]})

    text = _apply_stop(reply.text, body.get("stop"))
    events = [chunk({"reasoning": reply.reasoning[i : i + size]}) for i in range(0, len(reply.reasoning), size)]
    events += [chunk({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    for n, (name, args) in enumerate(reply.tool_calls):
        arguments = args if isinstance(args, str) else json.dumps(args)
        call = {"index": n, "id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": ""}}
        events.append(chunk({"tool_calls": [call]}))
        for i in range(0, len(arguments), size):
            part = {"index": n, "id": f"call_{n}", "type": "function", "function": {"arguments": arguments[i : i + size]}}
            events.append(chunk({"tool_calls": [part]}))
    events.append(chunk({}, reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")))
    if reply.usage_in_stream and (body.get("stream_options") or {}).get("include_usage"):
        prompt, completion = reply.usage or (
            sum(len(str(m.get("content") or "")) for m in body.get("messages", [])) // 4,
            max(1, len(reply.text + reply.reasoning) // 4),
        )
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        events.append(json.dumps({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0,
                                  "model": model, "choices": [], "usage": usage}))
    return events


def _apply_stop(text: str, stop: list[str] | str | None) -> str:
    """Cut at the first stop sequence, as real servers do (the client must still cut too)."""
    stops = [stop] if isinstance(stop, str) else (stop or [])
    cuts = [text.find(s) for s in stops if s and s in text]
    return text[: min(cuts)] if cuts else text


_ARITH = re.compile(r"[-+*/×÷^().\d\s]{3,}")


def toy_policy(body: dict[str, Any]) -> StubReply:
    """A tiny deterministic 'model' for demos and end-to-end tests.

    It follows whatever protocol the request uses: with ``tools=`` it makes a native
    ``calculate`` call for the arithmetic in the question; with the text protocol it writes
    ``Action: calculate``; under CodeAct's prompt it writes a program that prints
    ``calculate(...)``; once it sees an observation it answers with it (CodeAct: ``final_answer``).
    Without tools it can only guess, as a model doing mental arithmetic might. It never knows the
    answer in advance: the number comes from the calculator's observation.
    """
    messages = body.get("messages") or []
    system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")
    question = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    last = messages[-1] if messages else {}
    expression = max(_ARITH.findall(question), key=len, default="").strip(" .?")
    wants_thoughts = "Thought" in system
    if body.get("tools"):
        if last.get("role") == "tool":
            return StubReply(text=f"The calculator says {last.get('content')}.")
        if expression:
            return StubReply(text="I should compute this exactly." if wants_thoughts else "",
                             tool_calls=[("calculate", {"expression": expression})])
        return StubReply(text="I cannot answer that without a suitable tool.")
    observation = _last_observation(last)
    if "final_answer(" in system and "<code>" in system:
        return _toy_program(expression, observation)
    if "Action Input" in system:
        thought = "Thought: The calculator answered.\n" if wants_thoughts else ""
        if observation is not None:
            return StubReply(text=f"{thought}Final Answer: {observation}")
        if expression:
            thought = "Thought: I need to compute this exactly.\n" if wants_thoughts else ""
            return StubReply(text=f"{thought}Action: calculate\nAction Input: {expression}\nObservation: 42")
        return StubReply(text=f"{thought}Final Answer: I do not know.")
    guess = f"roughly {expression}, I cannot compute it exactly" if expression else "I do not know"
    return StubReply(text=f"Thought: Without tools I can only estimate.\nFinal Answer: {guess}")


def _toy_program(expression: str, observation: str | None) -> StubReply:
    """CodeAct's toy step: print the calculator's result, then give what was printed to final_answer."""
    if observation is not None:
        return StubReply(text=f"Thought: The program printed the result.\n<code>\nfinal_answer({observation!r})\n</code>")
    if expression:
        return StubReply(text=f"Thought: I will compute this with the calculator.\n<code>\n"
                              f"result = calculate({expression!r})\nprint(result)\n</code>")
    return StubReply(text='Thought: I have no tool for this.\n<code>\nfinal_answer("I do not know.")\n</code>')


def _last_observation(message: dict[str, Any]) -> str | None:
    content = str(message.get("content") or "")
    match = re.search(r"Observation[^:\n]*:\s*(.*)", content, re.S)
    if message.get("role") == "user" and match:
        return match.group(1).strip() or None
    return None

