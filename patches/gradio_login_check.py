"""Gradio's login check runs inline on the event loop, not on the thread pool.

Gradio guards ``/call``, ``/queue/join``, ``/queue/data`` and others with ``Depends(login_check)``, a plain
``def``, so FastAPI hops to the thread pool for it. FastAPI's public ``dependency_overrides`` puts an
``async def`` in its place that calls Gradio's own user lookup and check inline: the same answer from the same
code, without the hop. The override takes only the request (a sub-dependency would cost five times as much per
request). If the route or its shape is not found, the patch stays off and Gradio's own check runs.

Upstream write-up: docs/upstream.md#gradio_login_check.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import Request

from patches import Patch

PATCH = Patch("gradio_login_check", "gradio", "6.31.0")
PATH_END = "/login_check"


def _routes(routes: list[Any]) -> Iterator[Any]:
    for route in routes:
        yield route
        included = getattr(route, "original_router", None)  # FastAPI 0.165: an included router, kept whole
        if included is not None:
            yield from _routes(list(getattr(included, "routes", [])))


def gradio_login(app: Any) -> tuple[Callable[..., Any], Callable[..., Any]] | str:
    """(Gradio's login check, the dependency that gives it the user), or why they were not found."""
    route = next((r for r in _routes(list(app.router.routes)) if str(getattr(r, "path", "")).endswith(PATH_END)),
                 None)
    if route is None:
        return "no login_check route"
    check = route.endpoint
    params = list(inspect.signature(check).parameters)
    dependencies = getattr(getattr(route, "dependant", None), "dependencies", None) or []
    if inspect.iscoroutinefunction(check) or params != ["user"] or len(dependencies) != 1:
        return "login_check is not the plain def(user=Depends(...)) it was"
    user_of = dependencies[0].call
    if not inspect.iscoroutinefunction(user_of) or list(inspect.signature(user_of).parameters) != ["request"]:
        return "login_check's user is not the async def(request) it was"
    return check, user_of


def install(app: Any) -> bool:
    """Put the inline check in place on ``app`` (Gradio's FastAPI app); True when applied."""
    found = gradio_login(app)
    if not PATCH.usable(found if isinstance(found, str) else None):
        return False
    check, user_of = found  # type: ignore[misc]

    async def login_check(request: Request) -> None:
        check(await user_of(request))  # Gradio's own lookup and check: returns, or raises its 401

    # FastAPI reads an override's signature on every request it serves (its dependant is rebuilt each time): kept,
    # with its annotation resolved (this module's are strings), so neither is worked out again
    login_check.__signature__ = inspect.signature(login_check, eval_str=True)  # type: ignore[attr-defined]
    app.dependency_overrides[check] = login_check
    return True
