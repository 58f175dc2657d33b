"""``APP_MCP_SERVERS``: the MCP servers the Space's owner names, read strictly at start.

Only the environment names servers: a visitor who could type a URL would have a proxy (issue 30). The value is a
JSON list of objects, each ``{"name", "url"}`` with optional ``"headers"`` and ``"timeout"`` (docs/configuration.md,
"Tools from MCP servers"). A header's value is a template whose ``${NAME}`` parts are taken from environment
secrets when a call is made; the template is all this module keeps, so no value can reach a repr, a log or a
trace by accident. The secrets' names must read as secrets (:func:`tools.hardening.is_secret`), which keeps them
out of the run workers' and the sandbox's environments. A bad value is one :class:`McpConfigError` line.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from settings import SettingError, read
from tools.hardening import is_secret

ENV = "APP_MCP_SERVERS"
DEFAULT_TIMEOUT_S = 15.0
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 1.0, 120.0
MAX_SERVERS = 8
MAX_HEADERS = 8
SERVER_NAME = re.compile(r"[a-z][a-z0-9]{0,19}")  # no underscore: 'name_' is an unambiguous prefix of its tools
HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
SECRET_REF = re.compile(r"\$\{([^}]*)\}")
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED_HEADERS = frozenset({"host", "content-type", "content-length", "accept", "mcp-session-id",
                              "mcp-protocol-version", "last-event-id", "connection", "transfer-encoding"})
KEYS = frozenset({"name", "url", "headers", "timeout"})


class McpConfigError(ValueError):
    """``APP_MCP_SERVERS`` holds something the app cannot use; ``str(exc)`` is one line, and quotes no value
    that may be a secret."""


@dataclass(frozen=True)
class McpServer:
    """One server as the owner named it. ``headers`` are ``(name, template)`` pairs: the secrets are read from
    the environment only when a request is made (:meth:`resolved_headers`)."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S

    def secret_names(self) -> list[str]:
        """The environment variables this server's headers take their values from."""
        return [ref for _, template in self.headers for ref in SECRET_REF.findall(template)]

    def resolved_headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The headers to send, secrets filled in (an unset one is empty: it was checked at start)."""
        env = os.environ if environ is None else environ
        return {name: SECRET_REF.sub(lambda m: env.get(m.group(1), ""), template) for name, template in self.headers}

    def secret_values(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The values a message must never show (longest first, so none is left half-hidden)."""
        env = os.environ if environ is None else environ
        values = {env.get(n, "") for n in self.secret_names()}
        values |= set(self.resolved_headers(env).values())
        return sorted((v for v in values if len(v) >= 4), key=len, reverse=True)


def servers_from_env(environ: Mapping[str, str] | None = None) -> list[McpServer]:
    """The servers ``APP_MCP_SERVERS`` names (unset or blank: none). :class:`McpConfigError` for a bad value."""
    env = os.environ if environ is None else environ
    raw = (read(ENV, env) or "").strip()
    if not raw:
        return []
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{ENV} must be a JSON list of servers, not valid JSON here ({exc.msg} at line "
                             f"{exc.lineno} column {exc.colno}); see docs/configuration.md") from None
    if not isinstance(data, list):
        raise McpConfigError(f"{ENV} must be a JSON list of servers like [{{\"name\": \"facts\", \"url\": "
                             f"\"https://…/mcp\"}}], got a JSON {_kind(data)}")
    if len(data) > MAX_SERVERS:
        raise McpConfigError(f"{ENV} names {len(data)} servers; at most {MAX_SERVERS}")
    servers = [_server(item, i, env) for i, item in enumerate(data)]
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            raise McpConfigError(f"{ENV}: two servers are named '{server.name}'; names must differ")
        seen.add(server.name)
    return servers


def env_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """The one line ``app.main`` prints for a bad ``APP_MCP_SERVERS`` before anything starts, else None."""
    try:
        servers_from_env(environ)
    except McpConfigError as exc:
        return str(exc)
    return None


def check_env(environ: Mapping[str, str] | None = None) -> None:
    """:func:`env_problem` as a :class:`~settings.SettingError`, for the start-up check."""
    if (problem := env_problem(environ)) is not None:
        raise SettingError(problem, ENV)


def _server(item: Any, index: int, env: Mapping[str, str]) -> McpServer:
    where = f"{ENV}, server {index + 1}"
    if not isinstance(item, dict):
        raise McpConfigError(f"{where}: must be a JSON object with \"name\" and \"url\", got a JSON {_kind(item)}")
    unknown = sorted(str(k) for k in item if k not in KEYS)
    if unknown:
        raise McpConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; "
                             f"expected {', '.join(sorted(KEYS))}")
    name = item.get("name")
    if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
        raise McpConfigError(f"{where}: \"name\" must be 1 to 20 lowercase letters and digits, starting with a "
                             f"letter (it prefixes its tools' names: name_tool)")
    where = f"{ENV}, server '{name}'"
    url = _url(item.get("url"), where)
    timeout = item.get("timeout", DEFAULT_TIMEOUT_S)
    if (isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout)
            or not MIN_TIMEOUT_S <= timeout <= MAX_TIMEOUT_S):
        raise McpConfigError(f"{where}: \"timeout\" must be a number of seconds from {MIN_TIMEOUT_S:g} to "
                             f"{MAX_TIMEOUT_S:g}")
    return McpServer(name, url, _headers(item.get("headers", {}), where, env), float(timeout))


def _url(url: Any, where: str) -> str:
    """An http(s) URL with a host and no credentials (those go in a header, from a secret). Never quoted back:
    a URL pasted with a key in it must not reach a log."""
    if not isinstance(url, str) or not url.strip():
        raise McpConfigError(f"{where}: \"url\" must be the server's streamable-HTTP endpoint, e.g. "
                             f"https://example.org/mcp")
    url = url.strip()
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise McpConfigError(f"{where}: \"url\" must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise McpConfigError(f"{where}: \"url\" must not carry a user or password; send credentials in a header "
                             f"taken from a secret, e.g. {{\"Authorization\": \"Bearer ${{MY_SERVER_TOKEN}}\"}}")
    if any(ch.isspace() for ch in url):
        raise McpConfigError(f"{where}: \"url\" must not contain spaces")
    return url


def _headers(headers: Any, where: str, env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    if not isinstance(headers, dict):
        raise McpConfigError(f"{where}: \"headers\" must be a JSON object of header name to value")
    if len(headers) > MAX_HEADERS:
        raise McpConfigError(f"{where}: at most {MAX_HEADERS} headers")
    out: list[tuple[str, str]] = []
    for key, template in headers.items():
        if not HEADER_NAME.fullmatch(key) or key.lower() in RESERVED_HEADERS:
            raise McpConfigError(f"{where}: {key[:40]!r} is not a header the app may set (letters, digits and "
                                 f"hyphens; not one the MCP transport sets itself)")
        if not isinstance(template, str) or not template.strip():
            raise McpConfigError(f"{where}, header '{key}': the value must be text such as \"Bearer ${{NAME}}\"")
        refs = SECRET_REF.findall(template)
        if not refs:
            raise McpConfigError(f"{where}, header '{key}': the value must take a secret, as \"Bearer ${{NAME}}\" "
                                 f"with NAME an environment secret; a value written here is not kept secret")
        if "$" in SECRET_REF.sub("", template) or any(ch in template for ch in "\r\n\0"):
            raise McpConfigError(f"{where}, header '{key}': write each secret as ${{NAME}}, with no other '$' "
                                 f"and no line break")
        for ref in refs:
            _check_secret(ref, f"{where}, header '{key}'", env)
        out.append((key, template))
    return tuple(out)


def _check_secret(ref: str, where: str, env: Mapping[str, str]) -> None:
    if not VARIABLE.fullmatch(ref):
        raise McpConfigError(f"{where}: ${{{ref[:40]}}} is not an environment variable's name")
    if not is_secret(ref):
        raise McpConfigError(f"{where}: ${{{ref}}} must name a secret: a name ending in _TOKEN, _KEY, _SECRET or "
                             f"_PASSWORD (e.g. {ref}_TOKEN), which the app keeps out of its other processes")
    value = env.get(ref, "")
    if not value.strip():
        raise McpConfigError(f"{where}: ${{{ref}}} is not set (add it as a secret of the Space, or export it)")
    if any(ch in value for ch in "\r\n\0"):
        raise McpConfigError(f"{where}: the secret {ref} contains a line break, which a header cannot carry")


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")
