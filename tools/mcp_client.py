"""The ``mcp`` package's streamable-HTTP client, called from the registry's threads (:mod:`tools.mcp_servers`).

Each request runs ``anyio.run`` in a thread of its own, bounded by the server's timeout, never on the page's event
loop, with a session of its own (connect, initialize, the request, close). Every failure is a one-line
:class:`ToolFailure`. Header secrets are read from the environment only here, as a request is made, and scrubbed
from every message this module writes (``[secret]``); an answer that holds one encoded is withheld
(:func:`holds_secret`), and so is a log line of the client's libraries that holds one (:func:`watch_logs`).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import html
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import unquote, unquote_plus

from tools.mcp_config import McpServer
from tools.registry import ToolFailure

T = TypeVar("T")
GRACE_S = 2.0  # the registry's own timeout waits this much longer than the request's, so the request's fires first
MAX_PAGES = 8
MAX_LISTED = 32  # tools per server
MAX_MESSAGE = 300
MIN_ENCODED = 8  # the shortest base64 run looked for: a shorter one would match ordinary text
WITHHELD = "the MCP server's answer was withheld: it held one of the server's header secrets, encoded."


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

    watch_logs(server)
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
    text = result_text(result)
    if holds_secret(server, redacted(server, text)):  # encoded: no clean way to cut it out of the text
        raise ToolFailure(f"{shown}: {WITHHELD}")
    text = redacted(server, text)
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
    text = redacted(server, one_line(text))
    return f"{who} failed; its error was withheld: it held one of its header secrets, encoded." if holds_secret(
        server, text) else text


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


def holds_secret(server: McpServer, text: str) -> bool:
    """Whether ``text`` shows one of ``server``'s header secrets: as it is, URL-encoded or as HTML entities (read
    decoded), as hex (any case) or in base64 (standard or URL-safe, at any of the three byte alignments, line
    breaks ignored)."""
    values = server.secret_values()
    if not values or not text:
        return False
    views = {text, unquote(text), unquote_plus(text), html.unescape(text)}
    squeezed = "".join(text.split())
    lowered = squeezed.lower()
    for value in values:
        if any(value in view for view in views):
            return True
        raw = value.encode("utf-8")
        if raw.hex() in lowered or any(core in squeezed for core in _base64_cores(raw)):
            return True
    return False


@functools.lru_cache(maxsize=64)
def _base64_cores(raw: bytes) -> tuple[str, ...]:
    """The base64 characters that encode ``raw`` alone, whatever came before it: for each of the three offsets
    it can start at within a 3-byte group, in both alphabets (the characters mixed with other bytes dropped)."""
    cores = []
    for offset in range(3):
        start, end = -(-offset * 8 // 6), (offset + len(raw)) * 8 // 6
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            core = encode(bytes(offset) + raw).decode("ascii")[start:end]
            if len(core) >= MIN_ENCODED:
                cores.append(core)
    return tuple(dict.fromkeys(cores))


LOGGERS = ("mcp", "httpx", "httpcore")  # the client's libraries, whose DEBUG lines quote what a server sent
LOG_WITHHELD = "[a log line that held an MCP server's header secret was withheld]"
_watched: dict[str, McpServer] = {}
_factory_lock = threading.Lock()


def watch_logs(server: McpServer) -> None:
    """From now on, a log record of the client's libraries (:data:`LOGGERS`) that holds one of ``server``'s header
    secrets, in any form :func:`holds_secret` sees, is replaced by one line (``logging.setLogRecordFactory``: a
    record is made only for a level that is on, so this costs nothing at the usual WARNING)."""
    with _factory_lock:
        if not _watched:
            previous = logging.getLogRecordFactory()

            def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
                record = previous(*args, **kwargs)
                if record.name.startswith(LOGGERS) and _holds_any(record):
                    record.msg, record.args, record.exc_info, record.exc_text = LOG_WITHHELD, None, None, None
                return record

            logging.setLogRecordFactory(factory)
        _watched[server.name] = server


def _holds_any(record: logging.LogRecord) -> bool:
    try:
        text = record.getMessage()
    except Exception:  # noqa: BLE001 - a record that cannot be formatted is left for logging to report
        return False
    if record.exc_info and record.exc_info[1] is not None:
        text += f"\n{record.exc_info[1]}"
    return any(holds_secret(server, text) for server in list(_watched.values()))
