"""The ``mcp`` package's streamable-HTTP client, called from the registry's threads (:mod:`tools.mcp_servers`).

The client is async and the registry's tools are sync functions called from threads: each request runs
``anyio.run`` in a thread of its own, bounded by the server's timeout, never on the page's event loop. It opens a
session per request (connect, initialize, the request, close), so a server restarted between two calls costs
nothing and no connection outlives its thread. Every failure (server down, slow, an HTTP error, a protocol error,
the tool's own error) is a one-line :class:`ToolFailure`, which the registry makes an observation. Header secrets
are read from the environment only here, as a request is made, and scrubbed from every message this module writes.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from tools.mcp_config import McpServer
from tools.registry import ToolFailure

T = TypeVar("T")
GRACE_S = 2.0  # the registry's own timeout waits this much longer than the request's, so the request's fires first
MAX_PAGES = 8
MAX_LISTED = 32  # tools per server
MAX_MESSAGE = 300


def run_async(server: McpServer, work: Callable[[], Awaitable[T]]) -> T:
    """``work()`` run to its end in a thread of its own, within the server's timeout (ToolFailure after it)."""
    import anyio

    box: dict[str, Any] = {}

    async def bounded() -> T:
        with anyio.fail_after(server.timeout_s):
            return await work()

    def target() -> None:
        try:
            box["value"] = anyio.run(bounded)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"mcp-{server.name}", daemon=True)
    thread.start()
    thread.join(server.timeout_s + GRACE_S)
    if thread.is_alive():
        raise ToolFailure(f"the MCP server '{server.name}' gave no answer within {server.timeout_s:g} s.")
    if "error" in box:
        raise ToolFailure(failure_line(server, box["error"]))
    return box["value"]


async def _session(server: McpServer, use: Callable[[Any], Awaitable[T]]) -> T:
    """Open a session (connect, initialize), ``use`` it, close it: one per request, so a server restarted between
    two calls costs nothing, and no connection outlives its thread."""
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx.Timeout(server.timeout_s)
    async with httpx.AsyncClient(headers=server.resolved_headers(), timeout=timeout, trust_env=True) as client:
        async with streamable_http_client(server.url, http_client=client) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await use(session)


def list_remote_tools(server: McpServer) -> list[Any]:
    """The server's tools (``mcp.types.Tool``), following its pages; ToolFailure when it cannot be listed."""

    async def listing(session: Any) -> list[Any]:
        found, cursor = [], None
        for _ in range(MAX_PAGES):
            page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
            found.extend(page.tools)
            cursor = page.nextCursor
            if not cursor or len(found) >= MAX_LISTED:
                break
        return found

    return run_async(server, lambda: _session(server, listing))


def call_remote_tool(server: McpServer, name: str, arguments: dict[str, Any], shown: str = "") -> str:
    """Call tool ``name`` on ``server``: its text, or ToolFailure with one line starting with ``shown`` (the
    registry's name of the tool), whatever failed: the server, the connection, or the tool itself."""
    shown = shown or f"{server.name}_{name}"
    try:
        result = run_async(server, lambda: _session(server, lambda s: s.call_tool(name, arguments)))
    except ToolFailure as exc:
        raise ToolFailure(f"{shown} failed: {exc}") from None
    text = redacted(server, result_text(result))
    if result.isError:
        raise ToolFailure(one_line(f"{shown} failed: {text or 'the server reported an error.'}"))
    return text


def result_text(result: Any) -> str:
    """A ``CallToolResult`` as the model reads it: its text parts, a placeholder for images and audio, the
    structured content as JSON when there is nothing else."""
    parts: list[str] = []
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource":
            inner = item.resource
            parts.append(getattr(inner, "text", None) or f"[resource {inner.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {item.uri}]")
        else:
            parts.append(f"[{kind or 'content'} omitted]")
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False))
    return "\n".join(parts)


def failure_line(server: McpServer, exc: BaseException) -> str:
    """One line for any failure of a request: no traceback, no header value, no URL (the server's name says it)."""
    leaf = _leaf(exc)
    who = f"the MCP server '{server.name}'"
    try:
        import httpx
        from mcp.shared.exceptions import McpError
    except ImportError:  # pragma: no cover - mcp comes with gradio[mcp]
        httpx = McpError = None  # type: ignore[assignment]
    if isinstance(leaf, TimeoutError):
        text = f"{who} gave no answer within {server.timeout_s:g} s."
    elif httpx is not None and isinstance(leaf, httpx.HTTPStatusError):
        status = leaf.response.status_code
        hint = " (is its header secret right?)" if status in (401, 403) else ""
        text = f"{who} answered HTTP {status}{hint}."
    elif httpx is not None and isinstance(leaf, httpx.ConnectError | httpx.ConnectTimeout):
        text = f"{who} could not be reached (is it running?)."
    elif httpx is not None and isinstance(leaf, httpx.TransportError):
        text = f"{who}: the connection failed ({type(leaf).__name__})."
    elif McpError is not None and isinstance(leaf, McpError):
        text = f"{who} refused the request: {leaf.error.message}"
    else:
        text = f"{who} failed: {type(leaf).__name__}: {leaf}"
    return redacted(server, one_line(text))


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside nested task-group errors (anyio's ExceptionGroups)."""
    while isinstance(group := getattr(exc, "exceptions", None), tuple) and group:  # BaseExceptionGroup (3.11+)
        inner = [e for e in group if not _is_cancel(e)] or list(group)
        exc = inner[0]
    return exc


def _is_cancel(exc: BaseException) -> bool:
    return isinstance(exc, asyncio.CancelledError)  # what anyio cancels with on its asyncio backend


def one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def redacted(server: McpServer, text: str) -> str:
    """``text`` with every header value of ``server`` (and each secret in them) replaced: a server that echoes
    its request, or an error that quotes one, cannot put a secret in front of the model or in a log."""
    for value in server.secret_values():
        text = text.replace(value, "[secret]")
    return text
