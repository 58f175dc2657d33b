"""What a request may bring: a body of at most ``APP_BODY_MB``, and uploads within their visitor's hourly share.

:class:`BodyLimits` is ASGI middleware in front of Gradio's routes (:func:`with_limits`), so a refusal happens
before Gradio reads a byte: an upload is charged by its ``Content-Length`` to its browser and to its address
(429 past either, 411 without a length), and any other body is at most ``APP_BODY_MB`` (413).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.middleware import Middleware

from ui.core import visitors
from ui.core.settings import app_settings
from ui.core.visitors import Visitor, Window

log = logging.getLogger(__name__)

MB = 1 << 20
HOUR_S = 3600.0
UPLOAD_ROUTES = ("/gradio_api/upload", "/gradio_api/component_server", "/gradio_api/process_recording")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Uploads:
    """Bytes uploaded in the last hour, per browser and per address (thread-safe)."""

    def __init__(self, per_browser_mb: int, per_address_mb: int) -> None:
        self.per_browser_mb, self.per_address_mb = per_browser_mb, per_address_mb
        self._browsers = Window(HOUR_S, per_browser_mb * MB)
        self._addresses = Window(HOUR_S, per_address_mb * MB)

    def charge(self, who: Visitor, size: int) -> str | None:
        """Charge ``size`` bytes to ``who``; the line that refuses it (nothing charged) past an hour's share."""
        if who.browser and not self._browsers.spend(who.browser, size):
            return (f"Upload refused: this browser has uploaded its {self.per_browser_mb} MB for this hour. "
                    "Try again later.")
        if who.address and not self._addresses.spend(who.address, size):
            if who.browser:
                self._browsers.refund(who.browser, size)
            return (f"Upload refused: your network has uploaded its {self.per_address_mb} MB for this hour. "
                    "Try again later.")
        return None

    def refund(self, who: Visitor, size: int) -> None:
        """Give back an upload that did not happen (Gradio refused it)."""
        if who.browser:
            self._browsers.refund(who.browser, size)
        if who.address:
            self._addresses.refund(who.address, size)


class BodyLimits:
    """ASGI middleware: the body and upload limits, handed to the app Gradio builds with
    ``launch(app_kwargs={"middleware": …})``.

    * an upload (a multipart POST to Gradio's upload routes) is charged, by its ``Content-Length``, to its browser
      (``APP_UPLOAD_MB_PER_VISITOR`` an hour) and to its address (``APP_UPLOAD_MB_PER_ADDRESS``, every client behind
      it, with or without the browser cookie); past either it is a 429 with one line, and an upload Gradio refuses
      (over ``launch(max_file_size=…)``, the replay's own cap) is given back. One without a length is a 411;
    * any other request's body is at most ``APP_BODY_MB``: a larger ``Content-Length`` is a 413 at once, and a body
      sent without one is cut off there (the app reads it as a client that went away) and answered the same.
    """

    def __init__(self, app: Callable[..., Awaitable[None]], body_mb: int | None = None,
                 uploads: Uploads | None = None) -> None:
        limits = app_settings()
        self.app = app
        self.max_body = (body_mb or limits.body_mb) * MB
        self.uploads = uploads or Uploads(limits.upload_mb_per_visitor, limits.upload_mb_per_address)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        length = _length(scope)
        if _is_upload(scope):
            await self._upload(scope, receive, send, length)
        elif length is not None and length > self.max_body:
            await refuse(send, 413, self._too_large())
        elif length is None:
            await self._counted(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _upload(self, scope: Scope, receive: Receive, send: Send, length: int | None) -> None:
        if length is None:
            await refuse(send, 411, "Upload refused: send it with its Content-Length.")
            return
        who = visitors.scope_visitor(scope)
        if (line := self.uploads.charge(who, length)) is not None:
            await refuse(send, 429, line)
            return
        refused = False

        async def watched(message: dict[str, Any]) -> None:
            nonlocal refused
            if message.get("type") == "http.response.start" and int(message.get("status", 200)) >= 400:
                refused = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            if refused:
                self.uploads.refund(who, length)

    async def _counted(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A body without a length: passed on while it stays within the limit, then cut off and refused."""
        received, over, started = 0, False, False

        async def counted() -> dict[str, Any]:
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body:
                over = True
                return {"type": "http.disconnect"}
            return message

        async def guarded(message: dict[str, Any]) -> None:
            nonlocal started
            if over:
                return  # the app's own answer to a body it never fully got: ours goes instead
            started = True
            await send(message)

        await self.app(scope, counted, guarded)
        if over and not started:
            await refuse(send, 413, self._too_large())

    def _too_large(self) -> str:
        return f"Request refused: its body is larger than {self.max_body // MB} MB."


def _is_upload(scope: Scope) -> bool:
    path = str(scope.get("path", "")).rstrip("/")
    content_type = dict(scope.get("headers", ())).get(b"content-type", b"")
    return scope.get("method") == "POST" and path.endswith(UPLOAD_ROUTES) \
        and content_type.lower().startswith(b"multipart/form-data")


def _length(scope: Scope) -> int | None:
    """The request's ``Content-Length``, or None without a (valid) one; a chunked body has none."""
    values = [v for k, v in scope.get("headers", ()) if k == b"content-length"]
    if len(values) != 1:
        return None
    try:
        length = int(values[0])
    except ValueError:
        return None
    return length if length >= 0 else None


async def refuse(send: Send, status: int, line: str) -> None:
    """One line, as plain text, with ``status``; the connection is closed after it."""
    body = (line + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
               (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def with_limits(app_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """``app_kwargs`` for ``launch`` with :class:`BodyLimits` added to the app's own middleware."""
    app_kwargs = dict(app_kwargs or {})
    return {**app_kwargs, "middleware": [*(app_kwargs.get("middleware") or ()), Middleware(BodyLimits)]}
