"""The page and its static files from memory (patches/page_cache.py): the same bytes a visitor would get from Gradio,
without Gradio's per-load work, and never one visitor's page for another."""

from __future__ import annotations

import asyncio
import gzip

import brotli
import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from patches.page_cache import PageCache, install


class Counting:
    """A toy app whose page embeds its host, like Gradio's config embeds the root URL."""

    def __init__(self) -> None:
        self.calls: list[str] = []

        async def page(request):
            self.calls.append(request.url.path)
            host = request.headers.get("x-forwarded-host") or request.headers.get("host")
            return HTMLResponse(f"<html>root={host} " + "x" * 2000 + "</html>")

        async def asset(request):
            self.calls.append(request.url.path)
            return PlainTextResponse("console.log(1)" * 100, headers={"etag": '"abc"'}, media_type="text/javascript")

        async def cookie(request):
            self.calls.append(request.url.path)
            response = PlainTextResponse("hello")
            response.set_cookie("session", "1")
            return response

        async def missing(request):
            self.calls.append(request.url.path)
            return Response("no", status_code=404)

        self.app = Starlette(routes=[Route("/", page), Route("/assets/app-1a2b.js", asset),
                                     Route("/static/cookie.js", cookie), Route("/assets/missing.js", missing)])


@pytest.fixture
def toy() -> tuple[Counting, PageCache, TestClient]:
    counting = Counting()
    cache = PageCache(counting.app)
    return counting, cache, TestClient(cache)


def test_the_second_load_comes_from_memory_with_the_same_bytes(toy):
    counting, cache, client = toy
    first = client.get("/assets/app-1a2b.js", headers={"accept-encoding": "identity"})
    second = client.get("/assets/app-1a2b.js", headers={"accept-encoding": "identity"})
    assert first.status_code == second.status_code == 200 and first.content == second.content
    assert second.headers["content-type"] == first.headers["content-type"]
    assert second.headers["content-length"] == str(len(second.content))
    assert counting.calls == ["/assets/app-1a2b.js"] and cache.hits == 1


def test_the_page_is_compressed_once_for_clients_that_accept_it(toy):
    counting, _, client = toy
    plain = client.get("/", headers={"accept-encoding": "identity"}).text
    client.get("/", headers={"accept-encoding": "gzip, deflate, br"})  # kept, compressed
    raw = client.get("/", headers={"accept-encoding": "gzip, deflate, br"})
    assert raw.headers["content-encoding"] == "br" and raw.text == plain  # httpx decodes br
    stream = client.build_request("GET", "/", headers={"accept-encoding": "br"})
    body = client.send(stream, stream=True)
    assert brotli.decompress(b"".join(body.iter_raw())).decode() == plain
    gz = client.send(client.build_request("GET", "/", headers={"accept-encoding": "gzip"}), stream=True)
    gz.read()
    assert counting.calls.count("/") == 3  # identity, br and gzip: one fill each
    gz_again = client.send(client.build_request("GET", "/", headers={"accept-encoding": "gzip"}), stream=True)
    assert gzip.decompress(b"".join(gz_again.iter_raw())).decode() == plain and counting.calls.count("/") == 3


def test_a_page_for_another_host_is_another_page(toy):
    counting, _, client = toy
    a = client.get("/", headers={"x-forwarded-host": "a.example"}).text
    b = client.get("/", headers={"x-forwarded-host": "b.example"}).text
    assert "root=a.example" in a and "root=b.example" in b
    assert "root=a.example" in client.get("/", headers={"x-forwarded-host": "a.example"}).text
    assert counting.calls.count("/") == 2


@pytest.mark.parametrize("path, headers", [
    ("/?page=x", {}),  # a sub-page or deep link: built for that request
    ("/", {"cookie": "access-token-123=t"}),  # Gradio's login cookie: the page names the user
    ("/", {"range": "bytes=0-10"}),
    ("/static/cookie.js", {}),  # sets a cookie: never shared
    ("/assets/missing.js", {}),  # not a 200
    ("/gradio_api/info", {}),  # not the page or a static file
])
def test_what_must_not_be_shared_goes_through_every_time(toy, path, headers):
    counting, cache, client = toy
    for _ in range(2):
        client.get(path, headers=headers)
    assert cache.hits == 0 and len(counting.calls) == (0 if path == "/gradio_api/info" else 2)


def test_posts_go_through(toy):
    counting, cache, client = toy
    client.post("/assets/app-1a2b.js")
    assert cache.hits == 0 and not cache.entries


def test_a_conditional_request_gets_304_from_memory(toy):
    counting, _, client = toy
    client.get("/assets/app-1a2b.js")
    again = client.get("/assets/app-1a2b.js", headers={"if-none-match": '"abc"'})
    assert again.status_code == 304 and again.headers["etag"] == '"abc"' and len(counting.calls) == 1


def test_the_page_is_not_cached_when_gradio_s_auth_is_on():
    counting = Counting()
    client = TestClient(PageCache(counting.app, page=False))
    client.get("/")
    client.get("/")
    assert counting.calls == ["/", "/"]


def test_memory_is_bounded_least_recently_used_first():
    counting = Counting()
    cache = PageCache(counting.app, max_entries=2)
    client = TestClient(cache)
    for encoding in ("identity", "gzip", "br"):
        client.get("/assets/app-1a2b.js", headers={"accept-encoding": encoding})
    assert len(cache.entries) == 2 and cache.size == sum(len(e.body) for e in cache.entries.values())
    small = PageCache(counting.app, max_bytes=10)
    TestClient(small).get("/assets/app-1a2b.js")
    assert not small.entries and small.size == 0


def test_simultaneous_first_loads_fill_once():
    calls: list[int] = []

    async def slow_page(scope, receive, send):
        calls.append(1)
        await asyncio.sleep(0.05)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/css")]})
        await send({"type": "http.response.body", "body": b"body{}"})

    cache = PageCache(slow_page)

    async def load() -> bytes:
        sent: list[dict] = []

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": "/theme.css", "query_string": b"v=1", "headers": []}
        await cache(scope, None, send)
        return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")

    async def main() -> list[bytes]:
        return await asyncio.gather(*(load() for _ in range(20)))

    assert asyncio.run(main()) == [b"body{}"] * 20 and calls == [1]


def test_install_wraps_a_started_app_once():
    counting = Counting()
    TestClient(counting.app).get("/")  # Starlette has built its middleware stack: add_middleware would refuse
    first = install(counting.app)
    assert install(counting.app) is first and counting.app.middleware_stack is first
    client = TestClient(counting.app)
    client.get("/assets/app-1a2b.js")
    client.get("/assets/app-1a2b.js")
    assert first.hits == 1
