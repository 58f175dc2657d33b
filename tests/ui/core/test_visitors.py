"""Who a visitor is (ui/core/visitors.py): the socket's address, or behind a trusted proxy the hop it appended — never a
client-written X-Forwarded-For — and the per-visitor quota clock."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pytest

from ui.core import visitors
from ui.core.visitors import Proxies, Window, visitor_of


def request(peer: str | None, *forwarded: str, session: str = "s1") -> SimpleNamespace:
    """A live request as a handler gets it: ``gr.Request`` keeps the Starlette request and its ASGI scope."""
    headers = [(b"x-forwarded-for", v.encode()) for v in forwarded]
    scope = {"type": "http", "client": (peer, 5555) if peer else None, "headers": headers}
    return SimpleNamespace(request=SimpleNamespace(scope=scope), session_hash=session)


def test_off_a_proxy_the_visitor_is_the_socket_whatever_the_client_writes():
    none = Proxies()
    assert visitor_of(request("127.0.0.1", "198.51.100.7"), none) == "127.0.0.1"
    assert visitor_of(request("203.0.113.5", "198.51.100.7, 10.0.0.1"), none) == "203.0.113.5"


def test_behind_a_trusted_proxy_the_visitor_is_the_hop_it_appended():
    proxy = Proxies(["10.0.0.0/8"])
    assert visitor_of(request("10.1.2.3", "6.6.6.6, 198.51.100.7"), proxy) == "198.51.100.7"
    assert visitor_of(request("10.1.2.3", "6.6.6.6", "198.51.100.7:4242"), proxy) == "198.51.100.7"  # two lines
    assert visitor_of(request("203.0.113.5", "198.51.100.7"), proxy) == "203.0.113.5"  # not the proxy: its own
    assert visitor_of(request("10.1.2.3", "not an address"), proxy) == "10.1.2.3"  # nothing usable appended
    assert visitor_of(request("10.1.2.3"), proxy) == "10.1.2.3"


def test_on_a_space_its_proxy_is_trusted_unless_the_setting_names_others():
    assert visitor_of(request("172.17.0.1", "1.1.1.1, 198.51.100.9"), Proxies(on_space=True)) == "198.51.100.9"
    assert visitor_of(request("172.17.0.1", "198.51.100.9"), Proxies(["10.0.0.1"], on_space=True)) == "172.17.0.1"


def test_an_ipv6_visitor_is_its_56_network():
    """A provider commonly hands one customer a /56: its 256 /64s are one visitor, the next /56 another."""
    none = Proxies()
    assert visitor_of(request("2001:db8:1:2::5"), none) == visitor_of(request("2001:db8:1:2:ffff::9"), none) \
        == visitor_of(request("2001:db8:1:ff::1"), none) == "2001:db8:1::/56"
    assert visitor_of(request("2001:db8:1:100::1"), none) == "2001:db8:1:100::/56"
    assert visitor_of(request("::ffff:198.51.100.4"), none) == "198.51.100.4"
    assert visitor_of(request("10.0.0.1", "[2001:db8::1]:80"), Proxies(["10.0.0.1"])) == "2001:db8::/56"


def test_a_refund_gives_back_its_own_record_when_others_came_since():
    window = Window(3600, 10)
    assert window.spend("v", 3) and window.spend("v", 4)
    window.refund("v", 3)
    assert window.spent("v") == 4 and window.spend("v", 6) and not window.spend("v", 1)


def test_without_an_address_the_session_counts():
    assert visitor_of(request(None, session="abc"), Proxies()) == "session:abc"
    assert visitor_of(None, Proxies()) == ""
    rebuilt = SimpleNamespace(client=SimpleNamespace(host="198.51.100.3"), headers={}, session_hash="x")
    assert visitor_of(rebuilt, Proxies()) == "198.51.100.3"  # a request Gradio rebuilt from its fields


def test_the_settings_and_space_decide_the_proxies(monkeypatch):
    import ui.core.settings

    monkeypatch.setattr(ui.core.settings, "_current", ui.core.settings.AppSettings(trusted_proxies=("10.0.0.1",)))
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert visitor_of(request("10.0.0.1", "198.51.100.1")) == "198.51.100.1"
    monkeypatch.setattr(ui.core.settings, "_current", ui.core.settings.AppSettings())
    assert visitor_of(request("10.0.0.1", "198.51.100.1")) == "10.0.0.1"
    monkeypatch.setenv("SPACE_ID", "me/app")
    assert visitor_of(request("10.0.0.1", "198.51.100.1")) == "198.51.100.1"


def test_uvicorn_is_told_to_believe_no_forwarded_header(monkeypatch):
    import uvicorn

    monkeypatch.setenv(visitors.UVICORN_TRUST, "*")
    with visitors.pinned_peer_address():
        assert os.environ[visitors.UVICORN_TRUST] == ""
        config = uvicorn.Config(app=lambda *a: None)
    assert os.environ[visitors.UVICORN_TRUST] == "*"  # given back: no other code or child process sees the pin
    assert visitors.peer_address_pinned(SimpleNamespace(config=config))
    assert not visitors.peer_address_pinned(SimpleNamespace(config=SimpleNamespace(forwarded_allow_ips="127.0.0.1")))


def test_a_window_counts_per_visitor_and_forgets(monkeypatch):
    window = Window(60, 3)
    assert [window.spend("a") for _ in range(4)] == [True, True, True, False]
    assert window.spend("b", 2) and not window.spend("b", 2) and window.spent("b") == 2
    window.refund("b", 2)
    assert window.spent("b") == 0
    later = time.monotonic() + 61
    monkeypatch.setattr(visitors.time, "monotonic", lambda: later)
    assert window.spend("a") and window.spent("a") == 1


@pytest.mark.parametrize("bad", ["10.0.0", "example.org", "10.0.0.0/33"])
def test_a_bad_trusted_proxy_is_one_line(bad):
    from settings import SettingError
    from ui.core.settings import AppSettings

    with pytest.raises(SettingError, match="APP_TRUSTED_PROXIES must be addresses or networks"):
        AppSettings.from_env({"APP_TRUSTED_PROXIES": f"10.0.0.1, {bad}"})


def test_new_settings_at_a_freed_settings_address_get_their_own_proxies(monkeypatch):
    """CPython hands a freed object's address to the next object of its size: new settings made right after the old
    ones are dropped often have the old ``id()``. They must still bring their own proxies (CI once saw five
    forwarded visitors counted as one)."""
    import ui.core.settings

    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setattr(ui.core.settings, "_current", None)  # given back after the test; set plainly below (no undo
    for _ in range(20):  # record keeps the dropped settings alive)
        ui.core.settings._current = ui.core.settings.AppSettings()
        assert visitor_of(request("127.0.0.1", "198.51.100.1")) == "127.0.0.1"
        ui.core.settings._current = None  # freed here: the next settings commonly take its address
        ui.core.settings._current = ui.core.settings.AppSettings(trusted_proxies=("127.0.0.1",))
        assert visitor_of(request("127.0.0.1", "198.51.100.1")) == "198.51.100.1"


def cookie_request(cookie: str | None, peer: str = "203.0.113.5") -> SimpleNamespace:
    headers = [(b"cookie", cookie.encode())] if cookie is not None else []
    return SimpleNamespace(request=SimpleNamespace(scope={"type": "http", "client": (peer, 1), "headers": headers}),
                           session_hash="s1")


def test_a_browser_is_known_by_its_signed_cookie_and_its_address_stays_the_ceiling():
    value = visitors.browser_cookie_value("ab12cd")
    known = visitors.visitor(cookie_request(f"other=1; {visitors.COOKIE}={value}"), Proxies())
    assert known == visitors.Visitor("browser:ab12cd", "203.0.113.5") and known.key == "browser:ab12cd"
    bare = visitors.visitor(cookie_request(None), Proxies())
    assert bare.browser is None and bare.key == "203.0.113.5"


@pytest.mark.parametrize("cookie", [
    "tar_browser=ab12cd.0000", "tar_browser=ab12cd", "tar_browser=", "tar_browser=ab12cd.x; ;;;", "tar_browser=\x00",
    'tar_browser="ab12cd.deadbeef"', "tar_browser=../etc." + "a" * 32, "tar_browser=" + "a" * 5000,
])
def test_a_forged_or_malformed_cookie_is_no_identity(cookie):
    assert visitors.visitor(cookie_request(cookie), Proxies()).browser is None


def test_a_cookie_of_another_id_does_not_pass_for_it():
    seal = visitors.browser_cookie_value("ab12cd").partition(".")[2]
    assert visitors.browser_of(f"{visitors.COOKIE}=ab12ce.{seal}") is None


async def _call(app, headers: list[tuple[bytes, bytes]], scheme: str = "http") -> list[tuple[bytes, bytes]]:
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "scheme": scheme, "headers": headers, "path": "/", "method": "GET"}
    await visitors.BrowserCookie(app)(scope, None, send)
    return sent[0]["headers"]


async def _page(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/html")]})
    await send({"type": "http.response.body", "body": b"ok"})


def test_the_middleware_issues_a_cookie_only_to_a_request_without_a_valid_one():
    import asyncio

    issued = dict(asyncio.run(_call(_page, [])))[b"set-cookie"].decode()
    assert issued.startswith(f"{visitors.COOKIE}=") and "HttpOnly" in issued and "SameSite=Lax" in issued
    value = issued.split(";")[0].partition("=")[2]
    assert visitors.browser_of(f"{visitors.COOKIE}={value}") is not None
    again = asyncio.run(_call(_page, [(b"cookie", f"{visitors.COOKIE}={value}".encode())]))
    assert b"set-cookie" not in dict(again)
    framed = dict(asyncio.run(_call(_page, [(b"x-forwarded-proto", b"https")])))[b"set-cookie"].decode()
    assert "SameSite=None; Secure; Partitioned" in framed  # a Space's page lives in an iframe


def test_an_mcp_request_carries_its_caller_sealed_and_a_forged_one_is_no_one():
    """Gradio's MCP server calls the tool's endpoint from the app itself with the MCP request's headers: the
    middleware seals the caller into one of them, and the loopback call counts that caller, not 127.0.0.1."""
    import asyncio

    seen: list[visitors.Visitor] = []

    async def endpoint(scope, receive, send):
        seen.append(visitors.scope_visitor(scope))
        await _page(scope, receive, send)

    app = visitors.BrowserCookie(endpoint)
    forged = (visitors.RELAY, b"-|6.6.6.6|" + b"0" * 32)
    caller = {"type": "http", "path": "/gradio_api/mcp/", "client": ("198.51.100.7", 1), "headers": [forged]}
    asyncio.run(app(caller, None, _noop))
    assert seen[-1] == visitors.Visitor(None, "198.51.100.7")  # its own address: the forged header was dropped
    relayed = [(visitors.RELAY, visitors.relay_value(seen[-1]).encode())]
    loopback = {"type": "http", "path": "/gradio_api/call/compare_reasoning_modes", "client": ("127.0.0.1", 2),
                "headers": relayed}
    asyncio.run(app(loopback, None, _noop))
    assert seen[-1] == visitors.Visitor(None, "198.51.100.7")
    asyncio.run(app({**loopback, "headers": [forged]}, None, _noop))
    assert seen[-1] == visitors.Visitor(None, "127.0.0.1")  # a seal not the app's names no one
    assert visitors.relayed_visitor("browser|x") is None and visitors.relayed_visitor("a|b|c|d") is None


async def _noop(message):
    return None
