"""Tools from the MCP servers the owner names (``APP_MCP_SERVERS``, :mod:`tools.mcp_config`), as registry tools.

Each server's tools are listed with the ``mcp`` package's streamable-HTTP client at start and on
:meth:`McpTools.refresh`, and join the registry as ``server_tool`` (so none can shadow a built-in tool), with the
server's JSON schema (native protocol) and a one-line rendering of its arguments (text protocol). A call is a
function like any other tool's, so ReAct, Act and CodeAct's sandboxed programs reach it through
:meth:`ToolRegistry.call` alike.

The client is async and the registry's tools are called from threads: each request runs ``anyio.run`` in a thread
of its own, bounded by the server's timeout, never on the page's event loop. Every failure (server down, slow, a
protocol error, the tool's own error) is a one-line :class:`ToolFailure`, so the run reads an observation. Header
secrets are filled in only when a request is made and scrubbed from every message this module writes.

The tools are closures, not module-level names: a run using one stays in the app's process (``agents.hosting``),
the only one holding the secrets.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tools.mcp_config import McpConfigError, McpServer, servers_from_env
from tools.registry import Tool, ToolFailure, ToolRegistry, normalize_name

log = logging.getLogger(__name__)

T = TypeVar("T")
GRACE_S = 2.0  # the registry's own timeout waits this much longer than the request's, so the request's fires first
MAX_TOOLS_PER_SERVER = 32
MAX_PAGES = 8
MAX_DESCRIPTION = 1_000
MAX_SCHEMA_CHARS = 8_000
MAX_NAME = 64  # OpenAI-style function names: ^[a-zA-Z0-9_-]{1,64}$
MAX_MESSAGE = 300
MIN_REFRESH_S = 10.0


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
            if not cursor or len(found) >= MAX_TOOLS_PER_SERVER:
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
    text = _redacted(server, result_text(result))
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
    return _redacted(server, one_line(text))


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


def _redacted(server: McpServer, text: str) -> str:
    """``text`` with every header value of ``server`` (and each secret in them) replaced: a server that echoes
    its request, or an error that quotes one, cannot put a secret in front of the model or in a log."""
    for value in server.secret_values():
        text = text.replace(value, "[secret]")
    return text


def tool_name(server: McpServer, remote: str) -> str | None:
    """``server_tool``, a Python identifier (CodeAct calls it as a function); None when nothing is left."""
    clean = "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else "_" for ch in remote)
    clean = "_".join(part for part in clean.split("_") if part)
    name = f"{server.name}_{clean}"[:MAX_NAME]
    return name if clean else None


def make_tool(server: McpServer, remote: Any) -> Tool:
    """A registry tool for the server's tool ``remote`` (``mcp.types.Tool``); ValueError when it cannot be one."""
    name = tool_name(server, remote.name)
    if name is None:
        raise ValueError("its name has no letter or digit")
    parameters = _parameters(remote.inputSchema)
    raw = _redacted(server, str(remote.description or remote.title or remote.name).strip())
    description = f"{raw[:MAX_DESCRIPTION]}\n\n(Tool '{remote.name}' of the MCP server '{server.name}'.)"
    summary = one_line(raw.split("\n\n")[0]) + _arguments_text(parameters)
    remote_name = remote.name

    def call(**arguments: Any) -> str:
        return call_remote_tool(server, remote_name, arguments, name)

    call.__name__ = call.__qualname__ = name
    return Tool(name=name, description=description, parameters=parameters, fn=call,
                timeout_s=server.timeout_s + GRACE_S, summary=summary)


def _parameters(schema: Any) -> dict[str, Any]:
    """The server's input schema as the registry takes it: an object with properties and required."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ValueError("its input schema is not a JSON object schema")
    if len(json.dumps(schema, default=str)) > MAX_SCHEMA_CHARS:
        raise ValueError(f"its input schema is over {MAX_SCHEMA_CHARS} characters")
    props = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if r in props]
    if not isinstance(props, dict) or not all(isinstance(v, dict) for v in props.values()):
        raise ValueError("its input schema's properties are not objects")
    return {**{k: v for k, v in schema.items() if k != "title"}, "type": "object", "properties": props,
            "required": required}


def _arguments_text(parameters: dict[str, Any]) -> str:
    """The text protocol's view of the arguments: nothing for one required string (the input is the text), else
    the JSON object to write, e.g. ' Input: a JSON object {"value": number, "unit": string (optional)}.'"""
    props, required = parameters["properties"], set(parameters["required"])
    if len(props) == 1 and required == set(props) and next(iter(props.values())).get("type") == "string":
        return ""
    if not props:
        return " Input: {}."
    fields = []
    for key, spec in props.items():
        kind = spec.get("type", "any")
        kind = "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)
        if "enum" in spec:
            kind = " or ".join(json.dumps(v) for v in spec["enum"][:8])
        fields.append(f"{json.dumps(key)}: {kind}{'' if key in required else ' (optional)'}")
    return f" Input: a JSON object {{{', '.join(fields)}}}."


def tools_of(server: McpServer, remotes: list[Any] | BaseException, taken: set[str]) -> tuple[list[Tool], list[str]]:
    """The server's listed tools (or the error listing them) as registry tools, and one line per problem (the
    server down, a tool left out). ``taken`` holds the normalized names in use (the built-in tools' first); the
    names of the tools made are added to it."""
    if isinstance(remotes, BaseException):
        line = str(remotes) if isinstance(remotes, ToolFailure) else failure_line(server, remotes)
        return [], [f"{line} Its tools are missing until a refresh."]
    tools, problems = [], []
    if len(remotes) > MAX_TOOLS_PER_SERVER:
        problems.append(f"the MCP server '{server.name}' offers {len(remotes)} tools; only its first "
                        f"{MAX_TOOLS_PER_SERVER} are used.")
    for remote in remotes[:MAX_TOOLS_PER_SERVER]:
        try:
            t = make_tool(server, remote)
        except (ValueError, TypeError, AttributeError) as exc:
            problems.append(one_line(f"the MCP server '{server.name}': its tool {str(remote.name)[:60]!r} is left "
                                     f"out: {exc}."))
            continue
        key = normalize_name(t.name)
        if key in taken:
            problems.append(f"the MCP server '{server.name}': its tool '{remote.name}' is left out: '{t.name}' is "
                            f"the name of another tool.")
            continue
        taken.add(key)
        tools.append(t)
    return tools, problems


class McpTools:
    """The owner's servers and the tools last found on them. :meth:`extend` adds them to a registry at start;
    :meth:`refresh` looks again and puts what it finds in that same registry, in place, for every reader."""

    def __init__(self, servers: Iterable[McpServer], min_refresh_s: float = MIN_REFRESH_S) -> None:
        self.servers = list(servers)
        self.min_refresh_s = min_refresh_s
        self._lock = threading.Lock()
        self._builtin: list[Tool] | None = None  # the registry's own tools, before extend() added the servers'
        self._asked_at = float("-inf")

    def find(self, builtin: Iterable[Tool]) -> tuple[list[Tool], list[str]]:
        """Every server's tools, the servers asked in parallel, in the order named; and the problems, logged."""
        taken = {normalize_name(t.name) for t in builtin}
        listed: list[list[Any] | BaseException] = [[] for _ in self.servers]

        def fetch(i: int, server: McpServer) -> None:
            try:
                listed[i] = list_remote_tools(server)
            except BaseException as exc:  # noqa: BLE001 - a ToolFailure line, read below
                listed[i] = exc

        threads = [threading.Thread(target=fetch, args=(i, s), daemon=True, name=f"mcp-list-{s.name}")
                   for i, s in enumerate(self.servers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self._asked_at = time.monotonic()
        results = [tools_of(server, listed[i], taken) for i, server in enumerate(self.servers)]
        tools = [t for found, _ in results for t in found]
        problems = [p for _, found in results for p in found]
        for problem in problems:
            log.warning("APP_MCP_SERVERS: %s", problem)
        return tools, problems

    def extend(self, registry: ToolRegistry) -> ToolRegistry:
        """``registry`` with the servers' tools after its own: a new :class:`McpRegistry` (``registry`` itself
        when no server is named)."""
        if not self.servers:
            return registry
        self._builtin = list(registry.tools)
        tools, _ = self.find(self._builtin)
        return McpRegistry([*self._builtin, *tools], registry.max_output_chars, mcp=self)

    def refresh(self, registry: ToolRegistry) -> list[str]:
        """Ask the servers again and put the tools found in ``registry`` (one :meth:`extend` made), in place of
        the MCP tools it had. Returns the problems, one line each. At most once every ``min_refresh_s``: the
        button is on a public page, and each click would reach every server."""
        with self._lock:
            waited = time.monotonic() - self._asked_at
            if waited < self.min_refresh_s:
                return [f"the MCP servers were asked {waited:.0f} s ago; try again in "
                        f"{self.min_refresh_s - waited:.0f} s."]
            builtin = self._builtin if self._builtin is not None else [t for t in registry.tools if not _is_mcp(t)]
            tools, problems = self.find(builtin)
            registry.replace_tools([*builtin, *tools])
            return problems

    def tool_names(self, registry: ToolRegistry) -> list[str]:
        """The names in ``registry`` of the tools found on the servers."""
        return [t.name for t in registry.tools if _is_mcp(t)]


@dataclass
class McpRegistry(ToolRegistry):
    """The app's registry when ``APP_MCP_SERVERS`` names servers: its own tools, then theirs; ``mcp`` refreshes
    them (the page's button, ``ui/page/tool_picker.py``)."""

    mcp: McpTools | None = field(default=None, repr=False, compare=False)


def _is_mcp(t: Tool) -> bool:
    return getattr(t.fn, "__module__", None) == __name__


def app_registry() -> ToolRegistry:
    """The app's registry: the built-in tools, plus those of ``APP_MCP_SERVERS`` (found now, so start-up waits
    for them, at most a server's timeout). A bad value adds nothing: ``app.main`` has refused it with its line
    already; here (a test's ``build_demo``) it is logged."""
    from tools import default_registry

    return with_servers(default_registry())


def with_servers(registry: ToolRegistry, environ: Mapping[str, str] | None = None) -> ToolRegistry:
    """``registry`` plus the tools of the servers ``APP_MCP_SERVERS`` names (itself when it names none, or is
    bad: logged in one line)."""
    try:
        servers = servers_from_env(environ)
    except McpConfigError as exc:
        log.error("%s", exc)
        return registry
    return McpTools(servers).extend(registry)
