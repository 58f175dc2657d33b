"""Tools from the MCP servers the owner names (``APP_MCP_SERVERS``, :mod:`tools.mcp_config`), as registry tools.

Each server's tools are listed at start and on :meth:`McpTools.refresh`, and join the registry as ``server_tool``
(so none can shadow a built-in tool), with the server's JSON schema and a one-line rendering of its arguments. A
call is a function like any other tool's; the requests themselves are :mod:`tools.mcp_client`'s. The tools are
closures, not module-level names: a run using one stays in the app's process, the only one holding the secrets.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tools import default_registry
from tools.mcp_client import (
    GRACE_S,
    MAX_LISTED,
    call_remote_tool,
    failure_line,
    holds_secret,
    list_remote_tools,
    one_line,
    redacted,
)
from tools.mcp_config import McpConfigError, McpServer, servers_from_env
from tools.registry import RESERVED_WORDS, Tool, ToolFailure, ToolRegistry, normalize_name

log = logging.getLogger(__name__)

MAX_TOOLS_PER_SERVER = MAX_LISTED
MAX_DESCRIPTION = 1_000
MAX_SCHEMA_CHARS = 8_000
MAX_NAME = 64  # OpenAI-style function names: ^[a-zA-Z0-9_-]{1,64}$
MIN_REFRESH_S = 10.0


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
    listing = json.dumps([remote.name, remote.title, remote.description, remote.inputSchema], default=str)
    if holds_secret(server, listing):
        raise ValueError("its listing holds one of the server's header secrets")
    parameters = _parameters(remote.inputSchema)
    raw = redacted(server, str(remote.description or remote.title or remote.name).strip())
    description = f"{raw[:MAX_DESCRIPTION]}\n\n(Tool '{remote.name}' of the MCP server '{server.name}'.)"
    summary = one_line(raw.split("\n\n")[0]) + _arguments_text(parameters)
    remote_name = remote.name

    def call(**arguments: Any) -> str:
        return call_remote_tool(server, remote_name, typed(arguments, parameters), name)

    call.__name__ = call.__qualname__ = name
    return Tool(name=name, description=description, parameters=parameters, fn=call,
                timeout_s=server.timeout_s + GRACE_S, summary=summary)


def typed(arguments: dict[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    """Numbers and booleans the text protocol gave as text (``Action Input: 5``) as the schema's type, so a strict
    server takes them; anything else as it came."""
    props = parameters.get("properties", {})
    out = dict(arguments)
    for key, value in arguments.items():
        kind = props.get(key, {}).get("type")
        if isinstance(value, str) and kind in ("integer", "number", "boolean"):
            try:
                parsed = json.loads(value.strip().lower() if kind == "boolean" else value.strip())
            except json.JSONDecodeError:
                continue
            if kind == "boolean" and isinstance(parsed, bool) or kind != "boolean" and _is_number(parsed, kind):
                out[key] = parsed
    return out


def _is_number(value: Any, kind: str) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return kind == "number" or isinstance(value, int)


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
        except Exception as exc:  # noqa: BLE001 - a server's odd schema leaves its tool out, never the app down
            problems.append(one_line(f"the MCP server '{server.name}': its tool {str(remote.name)[:60]!r} is left "
                                     f"out: {exc}."))
            continue
        key = normalize_name(t.name)
        if key in RESERVED_WORDS:
            problems.append(f"the MCP server '{server.name}': its tool '{remote.name}' is left out: '{t.name}' is "
                            f"a word the app reads as an action of its own (an answer, no action, Search or Lookup).")
            continue
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
