"""Who a visitor is, for every per-visitor limit, and those limits' clock (:class:`Window`).

:func:`visitor_of` is the one rule: the socket's address, or, only from a trusted proxy (``APP_TRUSTED_PROXIES``; on
a Space its proxy), the hop that proxy appended to ``X-Forwarded-For`` — never a value the client wrote. An IPv6
visitor is their /56 network. A browser is known apart from its address by a cookie the app signs
(:class:`BrowserCookie`), so a limit counts browsers and takes the address as a ceiling: a class behind one address
is not one visitor. Gradio's MCP calls carry their visitor sealed in that cookie (:data:`RELAY`).
"""

from __future__ import annotations

import collections
import contextlib
import ipaddress
import logging
import os
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

from agents import app_key
from patches import page_cache
from ui.core.settings import app_settings

log = logging.getLogger(__name__)

UVICORN_TRUST = "FORWARDED_ALLOW_IPS"  # uvicorn's variable: the peers whose X-Forwarded-For it believes
TRUST_NOBODY = ""  # matches no peer (uvicorn then leaves the client address alone)


@contextlib.contextmanager
def pinned_peer_address() -> Iterator[None]:
    """Around the server's start: uvicorn must not replace the socket's address with a forwarded one. The variable
    is set only while uvicorn reads it, then given back, so no other code or child process sees it."""
    previous = os.environ.get(UVICORN_TRUST)
    if previous not in (None, TRUST_NOBODY):
        log.warning("%s=%r is overridden: this app reads forwarded addresses itself (set APP_TRUSTED_PROXIES)",
                    UVICORN_TRUST, previous)
    os.environ[UVICORN_TRUST] = TRUST_NOBODY
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(UVICORN_TRUST, None)
        else:
            os.environ[UVICORN_TRUST] = previous


def peer_address_pinned(server: Any) -> bool:
    """Whether a started uvicorn server trusts no peer's forwarded headers (a start-up check)."""
    config = getattr(server, "config", None)
    return getattr(config, "forwarded_allow_ips", None) == TRUST_NOBODY or not getattr(config, "proxy_headers", True)


class Proxies:
    """The proxies whose appended ``X-Forwarded-For`` hop names the visitor."""

    def __init__(self, trusted: Iterable[str] = (), *, on_space: bool = False) -> None:
        items = tuple(trusted) or (("*",) if on_space else ())
        self.any = "*" in items
        self.networks = tuple(ipaddress.ip_network(i, strict=False) for i in items if i != "*")

    @classmethod
    def from_settings(cls) -> Proxies:
        return cls(app_settings().trusted_proxies, on_space=bool(os.environ.get("SPACE_ID")))

    def trusts(self, peer: str | None) -> bool:
        if peer is None:
            return False
        if self.any:
            return True
        address = _address(peer)
        return address is not None and any(address in net for net in self.networks)


def visitor_of(request: Any, proxies: Proxies | None = None) -> str:
    """The visitor's address as every per-visitor limit counts it (see the module docstring); without a known
    address, the page session (``session:<hash>``), and ``""`` when there is neither."""
    proxies = proxies if proxies is not None else _proxies()
    peer = _peer(request)
    if proxies.trusts(peer):
        hop = _last_hop(_forwarded_for(request))
        if hop is not None:
            return _key(hop)
    if peer is not None:
        return _key(_address(peer) or peer)
    session = getattr(request, "session_hash", None) if request is not None else None
    return f"session:{session}" if session else ""


_cached: list[tuple[Any, bool, Proxies]] = []  # (the settings object itself, on a Space, its proxies)


def _proxies() -> Proxies:
    """The settings' proxies, made again only when the settings (or ``SPACE_ID``) changed. The settings object is
    kept and compared by identity: an ``id()`` alone may be reused by the next settings object once the last is
    freed, which would hand a new configuration the old one's proxies."""
    settings, on_space = app_settings(), bool(os.environ.get("SPACE_ID"))
    if not _cached or _cached[0][0] is not settings or _cached[0][1] != on_space:
        _cached[:] = [(settings, on_space, Proxies.from_settings())]
    return _cached[0][2]


def _scope(request: Any) -> dict | None:
    """The ASGI scope of a live request (a queued event's ``gr.Request`` keeps the Starlette request)."""
    inner = getattr(request, "request", None) if request is not None else None
    scope = getattr(inner, "scope", None)
    return scope if isinstance(scope, dict) else None


def _peer(request: Any) -> str | None:
    scope = _scope(request)
    if scope is not None:
        client = scope.get("client")
        return str(client[0]) if client else None
    try:  # a request Gradio rebuilt from its fields (after pickling): its client is a plain object
        host = getattr(getattr(request, "client", None), "host", None)
    except (AttributeError, KeyError):
        host = None
    return str(host) if host else None


def _forwarded_for(request: Any) -> list[str]:
    """Every ``X-Forwarded-For`` header line, in order (a client may send several)."""
    scope = _scope(request)
    if scope is not None:
        return [v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"x-forwarded-for"]
    headers = getattr(request, "headers", None) if request is not None else None
    getlist = getattr(headers, "getlist", None)
    if getlist is not None:
        return list(getlist("x-forwarded-for"))
    value = headers.get("x-forwarded-for") if isinstance(headers, dict) else None
    return [value] if isinstance(value, str) else []


def _last_hop(lines: list[str]) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The last address in the header: the one the nearest (trusted) proxy appended. None if it is not one."""
    hops = [h.strip() for line in lines for h in line.split(",") if h.strip()]
    return _address(hops[-1]) if hops else None


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP address from ``1.2.3.4``, ``1.2.3.4:5678``, ``::1`` or ``[::1]:5678``; None for anything else."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


IPV6_PREFIX = 56  # one IPv6 visitor: the prefix a provider commonly hands one customer (RIPE-690)


def _key(address: ipaddress.IPv4Address | ipaddress.IPv6Address | str) -> str:
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False))
    return str(address)


class Window:
    """How much each visitor spent in the last ``span_s`` seconds (links, bytes, opens): :meth:`spend` refuses past
    ``limit``. Thread-safe; visitors quiet for a whole span are forgotten, so the map stays small."""

    def __init__(self, span_s: float, limit: float) -> None:
        self.span_s, self.limit = float(span_s), float(limit)
        self._spent: dict[str, collections.deque[tuple[float, float]]] = {}
        self._lock = threading.Lock()

    def spent(self, visitor: str) -> float:
        with self._lock:
            return sum(amount for _, amount in self._recent(visitor, time.monotonic()))

    def spend(self, visitor: str, amount: float = 1.0) -> bool:
        """Record ``amount`` for ``visitor`` and return True, or False (nothing recorded) if it would pass the limit."""
        now = time.monotonic()
        with self._lock:
            self._forget(now)
            recent = self._recent(visitor, now)
            if sum(a for _, a in recent) + amount > self.limit:
                return False
            recent.append((now, amount))
            return True

    def refund(self, visitor: str, amount: float = 1.0) -> None:
        """Give back the latest record of ``amount`` (the action it paid for did not happen), even when another
        of the visitor's actions was recorded since."""
        with self._lock:
            recent = self._spent.get(visitor) or collections.deque()
            for index in range(len(recent) - 1, -1, -1):
                if recent[index][1] == amount:
                    del recent[index]
                    return

    def _recent(self, visitor: str, now: float) -> collections.deque[tuple[float, float]]:
        recent = self._spent.setdefault(visitor, collections.deque())
        while recent and now - recent[0][0] > self.span_s:
            recent.popleft()
        return recent

    def _forget(self, now: float) -> None:
        for key in [k for k, v in self._spent.items() if not v or now - v[-1][0] > self.span_s]:
            del self._spent[key]


COOKIE = "tar_browser"  # the browser's identity: "<id>.<seal>", the seal made with the app's "browser" key
COOKIE_MAX_AGE_S = 400 * 24 * 3600  # the longest a browser keeps a cookie (RFC 6265bis)
_ID_BYTES = 16


@dataclass(frozen=True)
class Visitor:
    """Who sent a request: their browser (``browser:<id>``, or None for a client without this app's cookie) and
    their address as :func:`visitor_of` counts it. ``key`` is what a per-visitor limit counts."""

    browser: str | None
    address: str

    @property
    def key(self) -> str:
        return self.browser or self.address


def visitor(request: Any, proxies: Proxies | None = None) -> Visitor:
    """The request's browser (from its signed cookie) and address; for the MCP server's own call, the MCP
    caller's (:data:`RELAY`)."""
    relayed = relayed_visitor(_header(request, RELAY.decode()))
    if relayed is not None:
        return relayed
    browser_id = browser_of(_header(request, "cookie"))
    return Visitor(f"browser:{browser_id}" if browser_id else None, visitor_of(request, proxies))


RELAY = b"x-think-act-react-visitor"  # "<browser id or ->|<address>|<seal>", on an MCP request only
MCP_PATH = "/gradio_api/mcp"


def relay_value(who: Visitor) -> str:
    """The sealed header value naming ``who`` for the MCP server's call of the tool."""
    text = f"{(who.browser or '-').removeprefix('browser:')}|{who.address}"
    return f"{text}|{app_key.seal('relay', text)[:32]}"


def relayed_visitor(value: str | None) -> Visitor | None:
    """The visitor a :func:`relay_value` names, when this app sealed it; None for none or a forged one."""
    if not value or value.count("|") != 2 or len(value) > 200:
        return None
    browser_id, address, seal = value.split("|")
    if not secrets.compare_digest(seal, app_key.seal("relay", f"{browser_id}|{address}")[:32]):
        return None
    return Visitor(None if browser_id == "-" else f"browser:{browser_id}", address)


def browser_cookie_value(browser_id: str) -> str:
    """The cookie's value for ``browser_id``: the id and its seal."""
    return f"{browser_id}.{_seal(browser_id)}"


def browser_of(cookie_header: str | None) -> str | None:
    """The browser id a ``Cookie`` header carries, when its seal is this app's; None for none or a forged one."""
    if not cookie_header or COOKIE not in cookie_header:
        return None
    try:
        morsel = SimpleCookie(cookie_header).get(COOKIE)
    except Exception:  # noqa: BLE001 - a malformed header is no identity, never an error
        return None
    browser_id, _, seal = (morsel.value if morsel else "").partition(".")
    if not browser_id or len(browser_id) > 64 or not browser_id.isalnum() or not browser_id.isascii():
        return None
    return browser_id if secrets.compare_digest(seal, _seal(browser_id)) else None


def _seal(browser_id: str) -> str:
    return app_key.seal("browser", browser_id)[:32]


def _header(request: Any, name: str) -> str | None:
    """A header of a handler's request (a live one's ASGI scope, or a rebuilt one's headers), repeated lines joined."""
    scope = _scope(request)
    if scope is not None:
        key = name.encode("latin-1")
        return "; ".join(v.decode("latin-1") for k, v in scope.get("headers", ()) if k == key) or None
    headers = getattr(request, "headers", None) if request is not None else None
    get = getattr(headers, "get", None)
    value = get(name) if get is not None else None
    return value if isinstance(value, str) else None


Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class BrowserCookie:
    """ASGI middleware: a response to an HTTP request without a valid :data:`COOKIE` sets a new one. Over HTTPS
    (a Space, shown in an iframe) it is ``SameSite=None; Secure; Partitioned``, the only way a browser keeps a
    cookie in a frame; over plain HTTP, ``SameSite=Lax``. Put in front of the app by :func:`install`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope.get("type") == "http" and str(scope.get("path", "")).startswith(MCP_PATH):
            scope = _with_relay(scope)
        if scope.get("type") != "http" or browser_of(_scope_cookies(scope)):
            await self.app(scope, receive, send)
            return
        header = _set_cookie(browser_cookie_value(secrets.token_hex(_ID_BYTES)), secure=_https(scope))

        async def with_cookie(message: Any) -> None:
            if message.get("type") == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), (b"set-cookie", header)]}
            await send(message)

        await self.app(scope, receive, with_cookie)


def scope_visitor(scope: Scope) -> Visitor:
    """:func:`visitor` of a bare ASGI scope (middleware, before any request object exists)."""
    return visitor(_Live(scope))


def _with_relay(scope: Scope) -> Scope:
    """An MCP request's scope with its visitor sealed into :data:`RELAY` (any such header it came with dropped)."""
    who = scope_visitor(scope)
    headers = [(k, v) for k, v in scope.get("headers", ()) if k != RELAY]
    return {**scope, "headers": [*headers, (RELAY, relay_value(who).encode("latin-1"))]}


@dataclass(frozen=True)
class _Live:
    """A bare ASGI scope as :func:`visitor` reads a request (``request.scope``)."""

    scope: Scope

    @property
    def request(self) -> _Live:
        return self


def _scope_cookies(scope: Scope) -> str | None:
    return "; ".join(v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"cookie") or None


def _https(scope: Scope) -> bool:
    if scope.get("scheme") == "https":
        return True
    proto = dict(scope.get("headers", ())).get(b"x-forwarded-proto", b"")
    return proto.split(b",")[0].strip() == b"https"


def _set_cookie(value: str, *, secure: bool) -> bytes:
    attributes = "SameSite=None; Secure; Partitioned" if secure else "SameSite=Lax"
    return f"{COOKIE}={value}; Path=/; Max-Age={COOKIE_MAX_AGE_S}; HttpOnly; {attributes}".encode("latin-1")


def install(app: Any) -> BrowserCookie | None:
    """Put :class:`BrowserCookie` in front of a running Starlette/FastAPI ``app`` (Gradio's server app), outside the
    page cache, so that a page answered from memory still gives a new browser its cookie. Starlette builds its
    middleware stack on the first request and refuses ``add_middleware`` after that, so the built stack is wrapped,
    by the patch that wraps it (``patches/page_cache.wrap_stack``). Without it every visitor counts by address."""
    if (why := page_cache.problem(app)) is not None:
        log.warning("browsers get no identity cookie (each visitor counts by address): %s", why)
        return None
    return page_cache.wrap_stack(app, BrowserCookie, BrowserCookie)
