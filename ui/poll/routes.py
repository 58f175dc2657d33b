"""The phones' side of the class poll: a small page and two JSON routes, answered before Gradio sees the request.

200 phones refreshing once a second would be 200 queued Gradio events a second on the loop the runs stream
through; here a refresh is one dict lookup and, most of the time, a ``304`` (the phone sends its ``ETag``).
:class:`PollRoutes` sits in front of the app's ASGI stack and takes only ``/?room=CODE``, ``/join`` (the phone
page, ``phone.html``), ``GET /poll/CODE`` (the room's state), ``POST /poll/CODE/join`` and ``POST /poll/CODE/vote``.
A refusal is ``{"error": "one line", "boot": …}`` with its HTTP status (404 unknown, 410 ended, 409 locked,
403 full, 429 too many, 400 bad input).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from patches import page_cache
from ui.core import visitors
from ui.poll.rooms import BOOT, PollError, Room, RoomStore, rooms

log = logging.getLogger(__name__)

PREFIX = "/poll/"
JOIN_PATH = "/join"
MAX_BODY = 1024  # a vote is a token and a mode id
PAGE = (Path(__file__).with_name("phone.html")).read_bytes()
# the page loads nothing from anywhere: its own script and style, and fetches to this app only
PAGE_HEADERS = [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-cache"),
                (b"content-security-policy", b"default-src 'none'; script-src 'unsafe-inline'; style-src "
                 b"'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'"),
                (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
JSON_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-cache"),
                (b"x-content-type-options", b"nosniff")]


class PollRoutes:
    """ASGI middleware answering the poll's paths; ``store`` defaults to the process's one (``rooms()``)."""

    def __init__(self, app: ASGIApp, store: RoomStore | None = None) -> None:
        self.app = app
        self._store = store
        self.served = 0  # requests answered here (a bench may read it)

    @property
    def store(self) -> RoomStore:
        return self._store or rooms()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.ours(scope):
            await self.app(scope, receive, send)
            return
        self.served += 1
        path, method = scope["path"], scope["method"]
        if not path.startswith(PREFIX):
            await self.page(method, send)
            return
        code, _, action = path[len(PREFIX):].partition("/")
        who = visitors.scope_visitor(scope)
        address = who.address
        try:
            if stale(scope):  # the phone joined before a restart: no lookup (no guess counted, nothing learnt)
                raise PollError("The app restarted: this poll has ended.", 410)
            if action == "" and method in ("GET", "HEAD"):
                room = self.store.find(code, address)
                await self.room(self.store, room, scope, send)
            elif action == "vote" and method == "POST":
                body = await read_body(receive)
                room = self.store.vote(code, body.get("voter"), body.get("choice"), address)
                await self.room(self.store, room, scope, send, fresh=True)
            elif action == "join" and method == "POST":
                voter = self.store.join(code, address, who.browser)
                await answer(send, 200, json.dumps({"voter": voter, "boot": BOOT}).encode())
            else:
                raise PollError("Not a class poll route: GET /poll/CODE, POST /poll/CODE/join or POST "
                                "/poll/CODE/vote.", 405 if action in ("", "vote", "join") else 404)
        except PollError as refused:
            await answer(send, refused.status, json.dumps({"error": refused.line, "boot": BOOT}).encode())
        except Exception:  # never a traceback to a phone: one line, and the log keeps the rest
            log.exception("class poll route %s %s", method, path[:80])
            await answer(send, 500, json.dumps({"error": "The poll had an internal error: try again.",
                                                "boot": BOOT}).encode())

    @staticmethod
    def ours(scope: Scope) -> bool:
        path = scope["path"]
        if path.startswith(PREFIX) or path == JOIN_PATH:
            return True
        return path == "/" and scope["method"] in ("GET", "HEAD") and b"room=" in scope.get("query_string", b"") \
            and "room" in parse_qs(scope["query_string"].decode("latin-1"))

    async def page(self, method: str, send: Send) -> None:
        if method not in ("GET", "HEAD"):
            await answer(send, 405, b'{"error": "GET the page."}')
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*PAGE_HEADERS, (b"content-length", str(len(PAGE)).encode())]})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else PAGE})

    @staticmethod
    async def room(store: RoomStore, room: Room, scope: Scope, send: Send, *, fresh: bool = False) -> None:
        """The room's JSON, or ``304`` when the phone already has this version."""
        etag, body = store.snapshot(room)
        seen = next((v for k, v in scope.get("headers", ()) if k == b"if-none-match"), None)
        if not fresh and seen is not None and seen.decode("latin-1") == etag:
            await send({"type": "http.response.start", "status": 304, "headers": [(b"etag", etag.encode())]})
            await send({"type": "http.response.body", "body": b""})
            return
        await answer(send, 200, body, [(b"etag", etag.encode())])


def stale(scope: Scope) -> bool:
    """Whether the phone says it joined under another start of the app (``?boot=`` of its first answer)."""
    query = scope.get("query_string", b"")
    if b"boot=" not in query:
        return False
    seen = parse_qs(query.decode("latin-1")).get("boot", [""])[0]
    return bool(seen) and seen != BOOT


async def read_body(receive: Receive) -> dict[str, Any]:
    """The request's JSON object, at most :data:`MAX_BODY` bytes; anything else is one line."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise PollError("The phone went away.", 400)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise PollError("A vote is a small JSON object: this one is too large.", 413)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    try:
        body = json.loads(b"".join(chunks) or b"null")
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        body = None
    if not isinstance(body, dict):
        raise PollError('A vote is a JSON object: {"voter": "…", "choice": "…"}.')
    return body


async def answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*JSON_HEADERS, *(headers or []), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def install(app: Any, store: RoomStore | None = None) -> PollRoutes | None:
    """Put :class:`PollRoutes` in front of a running Starlette/FastAPI ``app`` (Gradio's server app). Installed
    before the page cache, which then wraps it and passes these paths on (it keeps no page with a query, such as
    ``/?room=``). Starlette builds its middleware stack on the first request and refuses ``add_middleware`` after
    that, so the built stack is wrapped, by the patch that wraps it (``patches/page_cache.wrap_stack``)."""
    if (why := page_cache.problem(app)) is not None:
        log.warning("the class poll's routes are off: %s", why)
        return None
    return page_cache.wrap_stack(app, PollRoutes, lambda stack: PollRoutes(stack, store))
