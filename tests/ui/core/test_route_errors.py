"""Only the lookups of an unknown event become a 404 line; any other KeyError stays an internal error."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from ui.core import route_errors


def request(path: str, **path_params: str) -> SimpleNamespace:
    blocks = SimpleNamespace(fns={0: "compare", 1: "replay"})
    return SimpleNamespace(url=SimpleNamespace(path=path), path_params=path_params, method="POST",
                           app=SimpleNamespace(get_blocks=lambda: blocks))


def answer(req: SimpleNamespace, exc: Exception) -> tuple[int, bytes]:
    response = asyncio.run(route_errors.unknown_event(req, exc))  # type: ignore[arg-type]
    return response.status_code, response.body


def test_an_unknown_fn_index_is_a_404_and_another_key_error_a_500():
    assert answer(request("/gradio_api/queue/join"), KeyError(9999))[0] == 404
    assert answer(request("/gradio_api/queue/join"), KeyError(1))[0] == 500  # a known event: a real bug
    assert answer(request("/gradio_api/queue/join"), KeyError("session"))[0] == 500
    assert answer(request("/gradio_api/upload"), KeyError(9999)) == (500, b"Internal Server Error")
    assert answer(request("/gradio_api/call/v2/nope", api_name="nope"), KeyError("/nope"))[0] == 404


def test_a_caller_s_own_handlers_are_kept():
    def mine(request, exc):
        return None

    handlers = route_errors.with_handlers({"docs_url": "/docs", "exception_handlers": {KeyError: mine}})
    assert handlers["docs_url"] == "/docs" and handlers["exception_handlers"][KeyError] is mine
    assert len(handlers["exception_handlers"]) == 2  # and Gradio's unknown API name
