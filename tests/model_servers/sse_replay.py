"""Replay recorded SSE bodies byte for byte from a local HTTP server (tests).

A recording of a real server (``tests/fixtures/smollm2/*.sse``) pins a wire quirk no scripted
stand-in would invent: no usage in the stream, ``[DONE]`` sent before an aborted stream's
connection is cut, text where tool calls were asked for. :class:`SSEReplayServer` serves the
queued bodies in order to ``POST .../chat/completions``, one SSE event per HTTP chunk, so the
real ``InferenceClient`` parses exactly the bytes the real server sent. A body marked
``complete=False`` ends as that server ended it: the connection closes without the final
chunk, and the client sees an incomplete chunked read.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EVENT_END = b"\n\n"


@dataclass(frozen=True)
class ReplayBody:
    """One recorded response body; ``complete=False`` replays a connection cut after the last byte."""

    raw: bytes
    complete: bool = True
    event_delay: float = 0.0  # seconds between events (0: as fast as the socket takes them)


def split_events(raw: bytes) -> list[bytes]:
    """The body cut after each blank line, so concatenating the parts gives back ``raw`` exactly."""
    parts, start = [], 0
    while (end := raw.find(EVENT_END, start)) != -1:
        parts.append(raw[start:end + len(EVENT_END)])
        start = end + len(EVENT_END)
    if start < len(raw):
        parts.append(raw[start:])
    return parts


class SSEReplayServer:
    """Threaded server on 127.0.0.1 replaying :class:`ReplayBody` items in FIFO order; a context
    manager. ``url`` ends in ``/v1``; ``requests`` holds each request's JSON body. With nothing
    left to replay it answers HTTP 500, so an unexpected extra call is visible."""

    def __init__(self, bodies: list[ReplayBody | bytes] | None = None) -> None:
        self.queue: deque[ReplayBody] = deque(b if isinstance(b, ReplayBody) else ReplayBody(b) for b in bodies or [])
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="sse-replay", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def add(self, body: ReplayBody | bytes) -> None:
        with self._lock:
            self.queue.append(body if isinstance(body, ReplayBody) else ReplayBody(body))

    def _next(self, request: dict[str, Any]) -> ReplayBody | None:
        with self._lock:
            self.requests.append(request)
            return self.queue.popleft() if self.queue else None

    def __enter__(self) -> SSEReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _handler(server: SSEReplayServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                request = {}
            body = server._next(request)
            if body is None:
                self._plain(500, b'{"error": "no recorded reply left to replay"}')
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-store")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                for part in split_events(body.raw):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    self.wfile.flush()
                    if body.event_delay:
                        time.sleep(body.event_delay)
                if body.complete:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
            except OSError:  # the client went away
                pass
            self.close_connection = True

        def do_GET(self) -> None:  # /v1/models, for anything that probes the server first
            self._plain(200, b'{"object": "list", "data": [{"id": "replay", "object": "model"}]}')

        def _plain(self, status: int, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.close_connection = True

    return Handler
