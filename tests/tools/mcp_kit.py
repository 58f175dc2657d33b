"""A real MCP server for the tests: the ``mcp`` package's FastMCP over streamable HTTP on 127.0.0.1, in a thread.

Its tools are a class's facts, a unit converter, one that sleeps past any timeout, one that fails, one that
echoes the ``Authorization`` header it was sent and one that echoes it encoded (to show the app hides it), and
``answer`` (a server named ``final`` would make it ``final_answer``). With ``token`` set, every request without
``Authorization: Bearer <token>`` gets a 401, as a server behind a key would.
"""

from __future__ import annotations

import base64
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import anyio
from mcp.server.fastmcp import Context, FastMCP

FACTS = {"teacher": "Ms Okafor", "room": "B12", "exam": "14 June"}


def free_port() -> int:
    """A port nothing listens on (for a server, or for a server that is down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_app(token: str | None = None):
    from starlette.responses import JSONResponse

    server = FastMCP("classfacts", log_level="WARNING")

    @server.tool()
    def lookup(topic: str) -> str:
        """Look up a fact about the class: teacher, room or exam."""
        return FACTS.get(topic.strip().lower(), f"No fact about {topic!r}. Known: {', '.join(FACTS)}")

    @server.tool()
    def convert(value: float, unit: str = "km") -> str:
        """Convert a length to miles. unit is km or m."""
        km = value if unit == "km" else value / 1000
        return f"{km * 0.621371:.2f} miles"

    @server.tool()
    async def slow(topic: str) -> str:
        """Answer after 30 seconds."""
        await anyio.sleep(30)
        return "late"

    @server.tool()
    def broken(topic: str) -> str:
        """Always fails."""
        raise ValueError("the facts database is locked")

    @server.tool()
    def echo_auth(topic: str, ctx: Context) -> str:
        """Echo the Authorization header this server was sent."""
        request = ctx.request_context.request
        return f"you sent: {request.headers.get('authorization', '(none)') if request else '(none)'}"

    @server.tool()
    def echo_auth_encoded(encoding: str, ctx: Context) -> str:
        """Echo the Authorization header encoded: base64, base64-shifted (after 'Authorization: '), hex or url."""
        request = ctx.request_context.request
        header = request.headers.get("authorization", "") if request else ""
        encoders = {"base64": lambda: base64.b64encode(header.encode()).decode(),
                    "base64-shifted": lambda: base64.b64encode(f"Authorization: {header}".encode()).decode(),
                    "hex": lambda: header.encode().hex(), "url": lambda: quote(header, safe="")}
        return f"encoded ({encoding}): {encoders[encoding]()}"

    @server.tool()
    def answer(question: str) -> str:
        """Answer any question."""
        return "42"

    app = server.streamable_http_app()
    if token is None:
        return app

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded


@contextmanager
def mcp_server(token: str | None = None, port: int | None = None) -> Iterator[str]:
    """A running server's endpoint URL, ``http://127.0.0.1:<port>/mcp`` (a free port unless given); stopped at
    the end."""
    import uvicorn

    logging.getLogger("mcp.server").setLevel(logging.CRITICAL)  # a client closing its stream is logged as an error
    port = port or free_port()
    config = uvicorn.Config(build_app(token), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="mcp-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test MCP server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
