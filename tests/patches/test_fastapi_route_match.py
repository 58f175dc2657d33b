"""An included router's routes matched once per request (patches/fastapi_route_match.py): the same answers as
FastAPI's own matching for hits, misses, wrong methods and path parameters; one scan where there were two."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI, routing

from patches import fastapi_route_match

REQUESTS = [("GET", "/api/item/7"), ("POST", "/api/item/7"), ("GET", "/api/items"), ("DELETE", "/api/items"),
            ("GET", "/api/nope"), ("GET", "/api/nested/deep/x"), ("POST", "/api/call/compare"),
            ("GET", "/api/call/compare/abc123"), ("GET", "/outside"), ("GET", "/api/item/not-a-number")]


def _app() -> FastAPI:
    nested = APIRouter()

    @nested.get("/deep/{name}")
    async def deep(name: str) -> dict:
        return {"deep": name}

    router = APIRouter()
    for k in range(30):  # routes before the hot ones, as in Gradio's router
        router.add_api_route(f"/filler{k}/{{x}}", lambda x: {"filler": x}, methods=["GET"])

    @router.get("/item/{item_id}")
    async def item(item_id: int) -> dict:
        return {"item": item_id}

    @router.get("/items")
    async def items() -> list:
        return [1, 2]

    @router.post("/call/{api_name}")
    async def call(api_name: str) -> dict:
        return {"queued": api_name}

    @router.get("/call/{api_name}/{event_id}")
    async def stream(api_name: str, event_id: str) -> dict:
        return {"stream": [api_name, event_id]}

    router.include_router(nested, prefix="/nested")
    app = FastAPI()
    app.include_router(router, prefix="/api")

    @app.get("/outside")
    async def outside() -> str:
        return "out"

    return app


def _ask(app: FastAPI, method: str, path: str) -> tuple[int, bytes]:
    """One request straight through the ASGI app: its status and body."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"", "headers": [],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """FastAPI's own ``_match`` (whatever an app built earlier installed), counted: each entry is one scan."""
    original = getattr(routing._IncludedRouter._match, "__wrapped__", routing._IncludedRouter._match)
    counted: list[int] = []

    def counting(self: Any, scope: Any) -> Any:
        counted.append(1)
        return original(self, scope)

    monkeypatch.setattr(routing._IncludedRouter, "_match", counting)
    return counted


def test_every_answer_is_fastapi_s_own_and_a_hit_is_scanned_once(scans: list[int]) -> None:
    app = _app()
    unpatched = [_ask(app, method, path) for method, path in REQUESTS]
    scans.clear()
    _ask(app, "POST", "/api/call/compare")
    assert len(scans) == 2  # FastAPI alone: matches, then _handle_selected, each a scan

    assert fastapi_route_match.install()
    assert [_ask(app, method, path) for method, path in REQUESTS] == unpatched
    assert unpatched[0] == (200, b'{"item":7}') and unpatched[1][0] == 405 and unpatched[4][0] == 404
    scans.clear()
    _ask(app, "POST", "/api/call/compare")
    assert len(scans) == 1


def test_a_changed_scope_is_scanned_again(scans: list[int]) -> None:
    assert fastapi_route_match.install()
    router = next(r for r in _app().router.routes if isinstance(r, routing._IncludedRouter))
    scope = {"type": "http", "path": "/api/items", "root_path": "", "method": "GET"}
    first = routing._IncludedRouter._match(router, scope)
    scope["path"] = "/api/item/3"
    second = routing._IncludedRouter._match(router, scope)
    assert len(scans) == 2 and first[2] is not second[2]


def test_the_check_finds_fastapi_as_written_and_it_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fastapi_route_match.problem() is None
    monkeypatch.setattr(routing._IncludedRouter, "_match", lambda self, scope, extra=None: None)
    assert "only the scope" in fastapi_route_match.problem()
    monkeypatch.setenv("APP_PATCHES_OFF", "fastapi_route_match")
    assert not fastapi_route_match.install()
