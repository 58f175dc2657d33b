"""The page and its static files from memory, so a flood of runs cannot hold them up.

Gradio builds the page on every load (a thread-pool hop, a deep copy of the whole config, a template) and
compresses assets again on the event loop. :class:`PageCache` wraps the whole ASGI app: the first ``GET`` of a
cacheable path goes through and its response is kept; later ones are answered from memory in one send.
A response is kept only when it is the same for every visitor: the public root URL is part of the key, nothing
is cached with auth on or a login cookie, ``?page=``/``?deep_link=`` loads go through, and only 200 responses
without ``Set-Cookie``. ``If-None-Match`` gets a 304, ``Range`` goes through; entries and bytes are bounded.

Upstream write-up: docs/upstream.md#page_cache.
"""

from __future__ import annotations

import asyncio
import gzip
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import brotli
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from patches import Patch

PATCH = Patch("page_cache", "starlette", "1.10.0")
STATIC_PREFIXES = ("/assets/", "/static/")
STATIC_PATHS = ("/theme.css", "/favicon.ico")
ROOT_HEADERS = ("host", "x-forwarded-host", "x-forwarded-proto", "x-gradio-server")
MAX_ENTRY_BYTES = 4 * 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024
MAX_ENTRIES = 512


@dataclass(frozen=True)
class Entry:
    """One kept response: what goes back on the wire."""

    headers: list[tuple[bytes, bytes]]
    body: bytes
    etag: str | None


def encoding_of(headers: Headers) -> str:
    """The encoding Gradio's compression would pick (its own rule: br first, then gzip)."""
    accepted = headers.get("accept-encoding", "")
    return "br" if "br" in accepted else "gzip" if "gzip" in accepted else ""


class PageCache:
    """ASGI middleware answering repeated ``GET``s of the page and static files from memory."""

    def __init__(self, app: ASGIApp, *, page: bool = True, max_entries: int = MAX_ENTRIES,
                 max_bytes: int = MAX_TOTAL_BYTES) -> None:
        self.app = app
        self.page = page  # False when Gradio's auth is on: the page then differs per user
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.entries: OrderedDict[tuple, Entry] = OrderedDict()
        self.size = 0
        self.filling: dict[tuple, asyncio.Future[Entry | None]] = {}
        self.hits = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = self.key_of(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        entry = self.entries.get(key)
        if entry is None and key in self.filling:
            entry = await asyncio.shield(self.filling[key])
        if entry is None:
            await self.fill(key, scope, receive, send)
            return
        self.entries.move_to_end(key)
        self.hits += 1
        await self.answer(entry, Headers(scope=scope), send)

    def key_of(self, scope: Scope) -> tuple | None:
        """The cache key of a request, or None when it must go through."""
        if scope["type"] != "http" or scope["method"] != "GET":
            return None
        path, query = scope["path"], scope.get("query_string", b"")
        headers = Headers(scope=scope)
        if "range" in headers:
            return None
        if path == "/":
            if not self.page or query or "access-token" in headers.get("cookie", ""):
                return None
            return (path, scope.get("root_path", ""), encoding_of(headers),
                    *(headers.get(name, "") for name in ROOT_HEADERS))
        if path.startswith(STATIC_PREFIXES) or path in STATIC_PATHS:
            return (path, query, encoding_of(headers))
        return None

    async def answer(self, entry: Entry, request: Headers, send: Send) -> None:
        if entry.etag is not None and request.get("if-none-match") == entry.etag:
            await send({"type": "http.response.start", "status": 304,
                        "headers": [(b"etag", entry.etag.encode("latin-1"))]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": entry.headers})
        await send({"type": "http.response.body", "body": entry.body})

    async def fill(self, key: tuple, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request through, keeping a copy of a response worth keeping."""
        future: asyncio.Future[Entry | None] = asyncio.get_running_loop().create_future()
        self.filling[key] = future
        recorder = Recorder(send)
        try:
            await self.app(scope, receive, recorder.send)
            entry = recorder.entry(compress=key[2] if scope["path"] == "/" else "")
            if entry is not None:
                self.keep(key, entry)
            future.set_result(entry)
        finally:
            if not future.done():
                future.set_result(None)
            self.filling.pop(key, None)

    def keep(self, key: tuple, entry: Entry) -> None:
        self.entries[key] = entry
        self.size += len(entry.body)
        while self.entries and (len(self.entries) > self.max_entries or self.size > self.max_bytes):
            _, old = self.entries.popitem(last=False)
            self.size -= len(old.body)


class Recorder:
    """Wraps ``send``: forwards every message and keeps the response while it may still be kept."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.size = 0
        self.complete = False
        self.keepable = True

    async def send(self, message: Message) -> None:
        await self._send(message)
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", []))
            self.keepable = self.status == 200 and not any(k.lower() == b"set-cookie" for k, _ in self.headers)
        elif message["type"] == "http.response.body" and self.keepable:
            body = message.get("body", b"")
            self.size += len(body)
            self.keepable = self.size <= MAX_ENTRY_BYTES
            self.chunks.append(body)
            self.complete = not message.get("more_body", False)

    def entry(self, compress: str = "") -> Entry | None:
        """The kept response (``compress``-ed if it came uncompressed), or None if it is not to be kept."""
        if not (self.keepable and self.complete):
            return None
        body = b"".join(self.chunks)
        headers = MutableHeaders(raw=list(self.headers))
        if compress and "content-encoding" not in headers:
            body = brotli.compress(body, quality=4) if compress == "br" else gzip.compress(body, 6)
            headers["content-encoding"] = compress
            headers.add_vary_header("Accept-Encoding")
        headers["content-length"] = str(len(body))  # a streamed (chunked) original is now one body
        return Entry(headers=headers.raw, body=body, etag=headers.get("etag"))


def problem(app: Any) -> str | None:
    if not hasattr(app, "middleware_stack") or not callable(getattr(app, "build_middleware_stack", None)):
        return "the server app has no middleware_stack / build_middleware_stack (Starlette) any more"
    return None


def install(app: Any) -> PageCache | None:
    """Put a :class:`PageCache` in front of a running Starlette/FastAPI ``app`` (Gradio's server app); None when
    the patch is off.

    Starlette builds its middleware stack on the first request and ``add_middleware`` refuses after
    that, so the built stack is wrapped instead."""
    if not PATCH.usable(problem(app)):
        return None
    page = getattr(app, "auth", None) is None and getattr(app, "auth_dependency", None) is None
    return wrap_stack(app, PageCache, lambda stack: PageCache(stack, page=page))


def wrap_stack(app: Any, kind: type, make: Callable[[Any], Any]) -> Any:
    """Put ``make(stack)`` in front of ``app``'s built middleware stack (once: a stack already of ``kind`` is
    returned as it is). The one place the app wraps Starlette's ``middleware_stack``; the caller checks
    :func:`problem` first (the class poll's routes, ``ui/poll/routes.py``, use it too)."""
    stack = app.middleware_stack or app.build_middleware_stack()
    if isinstance(stack, kind):
        return stack
    app.middleware_stack = wrapped = make(stack)
    return wrapped
