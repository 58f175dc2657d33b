"""A call to an event the app does not have is a 404 with one line, not an HTTP 500 and a traceback in the log.

Gradio 6.31 looks events up without a check: ``POST /gradio_api/call/nope`` (and ``/run/nope``, ``/api/nope``)
raises ``route_utils.FnIndexInferError``, ``POST /gradio_api/queue/join`` or ``/run/predict`` with an
``fn_index`` it lacks raises a bare ``KeyError`` (``fns[body.fn_index]``), and ``/call/v2/nope`` a ``KeyError``
of ``"/nope"``. :func:`exception_handlers` answers those with ``{"detail": "…"}`` (FastAPI's shape, as Gradio's own
refusals on these routes) through FastAPI's public ``exception_handlers``, which ``launch(app_kwargs=…)`` hands to
the app Gradio builds. Any other ``KeyError`` stays an internal error: logged with its traceback, a bare 500.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from gradio import route_utils

log = logging.getLogger(__name__)

Handler = Callable[[Request, Exception], Coroutine[Any, Any, Response]]
EVENT_ROUTES = ("/queue/join", "/run/", "/api/", "/call/")  # Gradio's routes that look an event up by index or name
LIST_HINT = "GET /gradio_api/info lists this app's API endpoints"


def exception_handlers() -> dict[type[Exception], Handler]:
    """FastAPI's ``exception_handlers`` for ``launch(app_kwargs=…)``: unknown API names and event indexes."""
    handlers: dict[type[Exception], Handler] = {KeyError: unknown_event}
    unknown_name = getattr(route_utils, "FnIndexInferError", None)  # gradio 6.31; gone in a later one: left to it
    if isinstance(unknown_name, type) and issubclass(unknown_name, Exception):
        handlers[unknown_name] = unknown_api_name
    return handlers


def with_handlers(app_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """``app_kwargs`` for ``launch`` with :func:`exception_handlers` added (a caller's own handlers win)."""
    kwargs = dict(app_kwargs or {})
    kwargs["exception_handlers"] = {**exception_handlers(), **(kwargs.get("exception_handlers") or {})}
    return kwargs


async def unknown_api_name(request: Request, exc: Exception) -> Response:
    """``/call/<name>``, ``/run/<name>``, ``/api/<name>`` for a name no event has."""
    return _not_found(f"There is no API endpoint named {_shown(request.path_params.get('api_name'))}: {LIST_HINT}.")


async def unknown_event(request: Request, exc: Exception) -> Response:
    """A ``KeyError`` from looking up an event the app does not have, as a 404; any other as an internal error."""
    key = exc.args[0] if isinstance(exc, KeyError) and exc.args else None
    path = request.url.path
    if any(route in path for route in EVENT_ROUTES):
        if isinstance(key, int) and not isinstance(key, bool) and key not in _event_ids(request):
            return _not_found(f"There is no event with fn_index {key}: GET /config lists this app's events, and "
                              f"{LIST_HINT}.")
        name = request.path_params.get("api_name")
        if isinstance(key, str) and isinstance(name, str) and key == f"/{name}" and "/call/v2/" in path:
            return _not_found(f"There is no API endpoint named {_shown(name)}: {LIST_HINT}.")
    log.error("internal error on %s %s", request.method, path, exc_info=exc)
    return PlainTextResponse("Internal Server Error", status_code=500)


def _event_ids(request: Request) -> set[int]:
    """The ids of the app's events (``Blocks.fns``), or none when the app is not at hand."""
    app = getattr(request, "app", None)
    blocks = app.get_blocks() if hasattr(app, "get_blocks") else None
    return set(getattr(blocks, "fns", {}) or {})


def _not_found(line: str) -> Response:
    return JSONResponse({"detail": line}, status_code=404)


def _shown(name: object) -> str:
    """The name as the line quotes it: short, so a long one is not echoed whole."""
    text = repr(name if isinstance(name, str) else "")
    return text if len(text) <= 42 else text[:40] + "…'"
