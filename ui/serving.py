"""Keep Gradio's thread pool for the page while a flood of runs comes in.

Gradio guards every queue and REST route (``/gradio_api/call/…``, ``/queue/join``, ``/queue/data``,
uploads) with ``Depends(login_check)``, a plain ``def``: FastAPI runs it in Starlette's thread pool
(40 threads) — two thread hops per run, on a 2-core machine where each hop waits for the GIL
behind the runs' threads. The page itself (``GET /``, also a plain ``def``) queues for the same
40 threads, behind 600 such checks during a 300-run flood. :func:`async_login_check` overrides the
dependency with the same check written ``async``: it runs on the event loop, in microseconds.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import fastapi
from fastapi import Depends, HTTPException, status

log = logging.getLogger(__name__)


def _login_check_of(app: fastapi.FastAPI) -> Any:
    for route in app.routes:
        for dep in getattr(route, "dependencies", []) or []:
            call = getattr(dep, "dependency", None)
            if getattr(call, "__name__", "") == "login_check":
                return call
    return None


def async_login_check(app: Any, blocks: Any) -> bool:
    """Override Gradio's sync ``login_check`` with an async one of the same logic; False if not found."""
    original = _login_check_of(app)
    if original is None or inspect.iscoroutinefunction(original):
        log.warning("Gradio's login_check was not found: the thread pool keeps serving it")
        return False
    current_user = inspect.signature(original).parameters["user"].default.dependency

    async def login_check(user: str | None = Depends(current_user)) -> None:
        if (app.auth is None and app.auth_dependency is None) or user is not None:
            return
        raise HTTPException(status_code=status.HTTP_401_UNAUTHORIZED,
                            detail={"error": "Not authenticated", "auth_message": blocks.auth_message})

    app.dependency_overrides[original] = login_check
    return True
