"""Make Gradio's own per-request work cheap, so a flood of runs leaves room for everyone else.

Gradio guards every queue and REST route (``/gradio_api/call/…``, ``/queue/join``, ``/queue/data``,
uploads) with ``Depends(login_check)``, a plain ``def``: FastAPI runs it in Starlette's thread pool
(40 threads) — two thread hops per run, on a 2-core machine where each hop waits for the GIL
behind the runs' threads. The page itself (``GET /``, also a plain ``def``) queues for the same
40 threads, behind 600 such checks during a 300-run flood. :func:`async_login_check` puts the
same check written ``async`` in its place: it runs on the event loop, in microseconds.

Gradio also calls ``typing.get_type_hints`` on a handler at every event (to find ``gr.Request`` and
``gr.OAuthToken`` parameters). Our modules use ``from __future__ import annotations``, so every call
compiled each annotation string again: under a 300-run flood, a fifth of the event loop's time.
:func:`resolve_annotations` evaluates them once, after the layout is built.
"""

from __future__ import annotations

import inspect
import logging
import typing
from collections.abc import Iterator
from typing import Any

import fastapi
from fastapi import Depends, HTTPException, status

log = logging.getLogger(__name__)


def _routes(routes: list[Any]) -> Iterator[Any]:
    """Every route object that may hold a dependency tree, through FastAPI's included routers.

    FastAPI ≥ 0.160 keeps an included router whole and builds "effective" copies of its routes
    (prefix applied, own dependency trees) on first use; they are built here, so they can be changed."""
    for route in routes:
        yield route
        original = getattr(route, "original_router", None)
        if original is not None:
            yield from _routes(list(original.routes))
            for build in ("effective_candidates", "effective_low_priority_routes"):
                if callable(getattr(route, build, None)):
                    yield from _routes(list(getattr(route, build)()))


def _login_check_of(app: fastapi.FastAPI) -> Any:
    for route in _routes(list(app.routes)):
        for dep in getattr(route, "dependencies", []) or []:
            call = getattr(dep, "dependency", None)
            if getattr(call, "__name__", "") == "login_check" and not inspect.iscoroutinefunction(call):
                return call
    return None


def _swap(dependant: Any, old: Any, new: Any) -> int:
    """Point every node of a dependency tree that calls ``old`` at ``new``; how many it changed."""
    changed = 0
    for sub in getattr(dependant, "dependencies", []) or []:
        if sub.call is old:
            sub.call = new
            changed += 1
        changed += _swap(sub, old, new)
    return changed


def async_login_check(app: Any, blocks: Any) -> int:
    """Put an async twin of Gradio's sync ``login_check`` in its place; how many routes now call it.

    The twin replaces the check inside the routes' dependency trees (and their ``Depends``, for trees
    FastAPI builds later). Not ``app.dependency_overrides``: with any override set, FastAPI re-derives
    every dependency's signature on every request (``get_dependant``, string annotations evaluated
    each time) — during a flood, a tenth of the event loop. If the trees cannot be found (another
    FastAPI layout), the override is the fallback."""
    original = _login_check_of(app)
    if original is None:
        log.warning("Gradio's login_check was not found: the thread pool keeps serving it")
        return 0
    current_user = inspect.signature(original).parameters["user"].default.dependency

    async def login_check(user: str | None = Depends(current_user)) -> None:
        if (app.auth is None and app.auth_dependency is None) or user is not None:
            return
        raise HTTPException(status_code=status.HTTP_401_UNAUTHORIZED,
                            detail={"error": "Not authenticated", "auth_message": blocks.auth_message})

    login_check.__annotations__ = {"user": typing.Optional[str], "return": None}  # noqa: UP045 - evaluated, not a string
    changed = 0
    for route in _routes(list(app.routes)):
        deps = getattr(route, "dependencies", None)
        if isinstance(deps, list):
            deps[:] = [Depends(login_check) if getattr(d, "dependency", None) is original else d for d in deps]
        changed += _swap(getattr(route, "dependant", None), original, login_check)
    if changed == 0:
        app.dependency_overrides[original] = login_check
    return changed


def resolve_annotations(blocks: Any) -> int:
    """Replace string annotations of every event handler by their values; how many handlers changed.

    The same hints Gradio would compute, so nothing changes but the cost: ``get_type_hints`` on
    evaluated annotations does no ``compile``. A handler whose hints do not evaluate is left alone
    (Gradio then finds none, as before)."""
    changed = 0
    for block_fn in blocks.fns.values():
        target = getattr(block_fn.fn, "__func__", block_fn.fn)  # a bound method's function
        annotations = getattr(target, "__annotations__", None)
        if not isinstance(annotations, dict) or not any(isinstance(v, str) for v in annotations.values()):
            continue
        try:
            target.__annotations__ = typing.get_type_hints(target)
        except (NameError, TypeError, AttributeError):
            continue
        changed += 1
    return changed
