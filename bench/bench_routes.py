"""Route matching per request in the app's own FastAPI app: what ``patches/fastapi_route_match.py`` saves.

FastAPI matches a request to an included router twice (docs/upstream.md, "fastapi_route_match"). For the four
requests a click makes, this times both scans in CPU time, with FastAPI's own ``_match`` and with the patch's,
and prints the ratio; beside it, what the login check's override costs per request (:func:`login_overrides`).

Usage: ``python bench/bench_routes.py [--n 3000] [--json]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HOT = (("POST", "/gradio_api/call/compare"), ("GET", "/gradio_api/call/compare/0123abcd"),
       ("POST", "/gradio_api/queue/join"), ("GET", "/gradio_api/queue/data"))


def _per_request_us(router: Any, n: int, match: Any) -> float:
    """CPU µs to match one hot request as FastAPI does: ``match`` (an included router's ``_match``) twice on the same
    scope, once for ``matches`` and once for the handling."""
    start = time.process_time()
    for k in range(n):
        method, path = HOT[k % len(HOT)]
        scope = {"type": "http", "path": path, "root_path": "", "method": method, "fastapi": {}}
        match(router, scope)
        match(router, scope)
    return (time.process_time() - start) / n * 1e6


def _dependant_us(call: Any, n: int) -> float:
    from fastapi.dependencies.utils import get_dependant

    start = time.process_time()
    for _ in range(n):
        get_dependant(path="/gradio_api/call/{api_name}", call=call, name=None)
    return round((time.process_time() - start) / n * 1e6, 1)


def login_overrides(app: Any) -> dict[str, float]:
    """CPU µs FastAPI spends per request rebuilding the login check's override: the patch's, which takes the
    request alone, and one taking the user through a sub-dependency. With any override set, FastAPI builds every
    dependency's dependant again on every request (``get_dependant``), so the override's shape is paid per request."""
    import inspect

    from fastapi import Depends

    from patches import gradio_login_check  # as measure's imports: after the arguments are read

    found = gradio_login_check.gradio_login(app)
    if isinstance(found, str) or not app.dependency_overrides:
        return {}
    check, user_of = found
    (override,) = app.dependency_overrides.values()

    async def through_user(user: str | None = Depends(user_of)) -> None:
        check(user)

    through_user.__signature__ = inspect.signature(through_user)  # type: ignore[attr-defined]
    return {"override_us": _dependant_us(override, 2000), "override_us_with_sub_dependency":
            _dependant_us(through_user, 2000)}


def measure(n: int) -> dict[str, float]:
    from fastapi import routing

    from bench.loadkit import launched_app  # the app's modules load once the arguments are read (--help is quick)

    demo = launched_app()
    try:
        router = next(r for r in demo.server_app.router.routes if isinstance(r, routing._IncludedRouter))
        patched = routing._IncludedRouter._match
        if not getattr(patched, "__wrapped_by_app__", False):
            raise SystemExit("patch fastapi_route_match is off: nothing to compare")
        figures = {}
        for name, match in (("without", patched.__wrapped__), ("with", patched)):  # called, never put in place
            _per_request_us(router, n // 10, match)  # warm
            figures[name] = round(_per_request_us(router, n, match), 1)
        return {"routes": len(list(router.effective_candidates())), "match_us_without": figures["without"],
                "match_us_with": figures["with"], "ratio": round(figures["with"] / figures["without"], 2),
                **login_overrides(demo.server_app)}
    finally:
        demo.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=3000, help="requests matched each way")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with contextlib.redirect_stdout(sys.stderr):  # Gradio's own prints (closing the server) stay off the JSON
        result = measure(args.n)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"route matching per hot request ({result['routes']} routes in Gradio's router): "
              f"{result['match_us_without']} µs with FastAPI's own, {result['match_us_with']} µs with "
              f"patches/fastapi_route_match.py (ratio {result['ratio']})")
        if "override_us" in result:
            print(f"the login check's override, rebuilt per request: {result['override_us']} µs (the request alone), "
                  f"{result['override_us_with_sub_dependency']} µs (the user through a sub-dependency)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
