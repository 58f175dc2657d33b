"""Who a visitor is, for every per-visitor limit, and those limits' clock (:class:`Window`).

:func:`visitor_of` is the one rule: the socket's address, or, only when that peer is a trusted proxy
(``APP_TRUSTED_PROXIES``; on a Space its proxy), the hop that proxy appended to ``X-Forwarded-For`` — never a
value the client wrote. :func:`pinned_peer_address` tells uvicorn (``FORWARDED_ALLOW_IPS``, read as Gradio makes
its server: Gradio passes no such setting on) to believe no forwarded header, so the address a handler sees is the
socket's. An IPv6 visitor is their /56 network: a home or
small office is commonly given a /56 (or a /48), so counting /64s would let one line count as 256 visitors.
"""

from __future__ import annotations

import collections
import contextlib
import ipaddress
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

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
        from ui.core.settings import app_settings

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
    from ui.core.settings import app_settings

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


def page_url_of(headers: object) -> str:
    """The visitor's page address: the ``Referer`` the browser sent with the event (the app's own page,
    same origin), else the host it reached (``x-forwarded-*`` behind a proxy such as a Space's). Share links and
    the class poll's join link are made from it."""
    get = getattr(headers, "get", None)
    if get is None:
        return "http://localhost:7860/"
    referer = get("referer") or ""
    if referer.startswith(("http://", "https://")):
        return referer
    host = get("x-forwarded-host") or get("host") or "localhost:7860"
    proto = (get("x-forwarded-proto") or "http").split(",")[0].strip()
    return f"{proto}://{host.split(',')[0].strip()}/"
