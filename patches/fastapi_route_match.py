"""A request to an included router's route is matched against that router's routes once, not twice.

FastAPI 0.165's included router scans its routes through ``_match`` in ``matches`` and again in
``_handle_selected``, on the same scope; Gradio's hot routes come ~40th of ~60. Here ``_match`` keeps its answer
in the request's scope, and the second call with the same inputs (path, root path, method, type, path
parameters) takes it instead of scanning again. Any other call scans as it always does.

Upstream write-up: docs/upstream.md#fastapi_route_match.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from patches import Patch

PATCH = Patch("fastapi_route_match", "fastapi", "0.165.0")
SCOPE_KEY = "app.included_router_match"  # in the ASGI scope: {id(router): (inputs, answer)}, one request's own


def _inputs(scope: dict[str, Any]) -> tuple[Any, ...]:
    """Everything of the scope that ``_match`` reads, apart from the keys it sets and restores itself."""
    return (scope.get("type"), scope.get("path"), scope.get("root_path"), scope.get("method"),
            dict(scope.get("path_params") or {}))


def problem() -> str | None:
    from fastapi import routing

    included = getattr(routing, "_IncludedRouter", None)
    if included is None or not all(callable(getattr(included, n, None)) for n in ("_match", "matches",
                                                                                  "_handle_selected")):
        return "fastapi.routing._IncludedRouter has no _match, matches and _handle_selected any more"
    try:
        handle_source = inspect.getsource(included._handle_selected)
        matches_source = inspect.getsource(routing.APIRouter.matches)
    except (OSError, TypeError):
        return "FastAPI's routing source cannot be read"
    if "self._match(scope)" not in handle_source or "included_router._match(scope)" not in matches_source:
        return "an included router no longer matches through _match in matches and _handle_selected"
    if list(inspect.signature(included._match).parameters) != ["self", "scope"]:
        return "_IncludedRouter._match no longer takes only the scope"
    return None


def _remembering(match: Any) -> Any:
    @functools.wraps(match)
    def _match(self: Any, scope: dict[str, Any]) -> Any:
        inputs = _inputs(scope)
        memo = scope.setdefault(SCOPE_KEY, {})
        known = memo.pop(id(self), None)
        if known is not None and known[0] == inputs:
            return known[1]  # the second call, same inputs: the same answer
        answer = match(self, scope)
        memo[id(self)] = (inputs, answer)
        return answer

    _match.__wrapped_by_app__ = True  # type: ignore[attr-defined]
    return _match


def install() -> bool:
    """True when applied (once per process; a second call finds it in place)."""
    from fastapi import routing

    included = getattr(routing, "_IncludedRouter", None)
    if getattr(getattr(included, "_match", None), "__wrapped_by_app__", False):
        return True
    if not PATCH.usable(problem()):
        return False
    included._match = _remembering(included._match)  # type: ignore[union-attr]
    return True
