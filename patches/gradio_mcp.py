"""The MCP server offers exactly one tool, behind the app's login when Gradio's auth is on, or no MCP at all.

Gradio's MCP server makes every public API endpoint a tool; this app's own tools (search, the sandbox) must never
be reachable through MCP. So :class:`OneTool` narrows the server's maps to one endpoint and checks the result,
and the server's mounted routes (``/gradio_api/mcp/``) get :class:`LoginRequired`, Gradio's own login check, in
front. Where either cannot be done as expected it fails closed: the server is refused (one log line), the mount
raises, or the request is refused; failing open would list every endpoint.

Upstream write-up: docs/upstream.md#gradio_mcp.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from patches import Patch
from patches.gradio_login_check import gradio_login

log = logging.getLogger(__name__)

PATCH = Patch("gradio_mcp", "gradio", "6.31.0")


def narrow(server: Any, tool: str) -> str | None:
    """Leave ``tool`` (the endpoint ``/<tool>``) as ``server``'s only tool; a problem means: serve no MCP."""
    endpoint = "/" + tool
    try:
        if endpoint not in server.tool_to_endpoint.values():
            return f"the {endpoint} endpoint is not among the MCP server's tools"
        named = server.api_info["named_endpoints"]
        server.api_info = {**server.api_info, "named_endpoints": {endpoint: named[endpoint]}, "unnamed_endpoints": {}}
        server.tool_prefix = ""  # the same tool name on a Space and on a laptop
        server.tool_to_endpoint = {tool: endpoint}
        derived = server.get_tool_to_endpoint()
    except (AttributeError, KeyError, TypeError) as exc:
        return f"Gradio's MCP server is not built as expected ({type(exc).__name__}: {exc})"
    if derived != {tool: endpoint}:
        return f"after narrowing, Gradio would still offer {sorted(derived)}"
    return None


MOUNT_PARAMETERS = ["app", "subpath", "root_path"]  # GradioMCPServer.launch_mcp_on_sse in 6.31
REFUSED = {"detail": "Not authenticated: log in to the app first (Gradio's auth is on)."}


class LoginRequired:
    """ASGI app in front of Gradio's MCP routes: with Gradio's auth on (``auth`` or ``auth_dependency``), a
    request whose user Gradio's own lookup does not find is refused with a 401; with it off, it passes.

    Gradio mounts the MCP routes (the streamable-HTTP transport, ``/schema``, SSE) with no login check, so without
    this ``tools/list`` and the schema would answer a stranger. The lookup and check are found as
    ``patches/gradio_login_check.py`` finds them; the hook hands ``launch_mcp_on_sse`` an app whose ``mount`` puts
    this in front of what it mounts."""

    def __init__(self, inner: Any, gradio_app: Any) -> None:
        self.inner, self.gradio_app = inner, gradio_app
        self._functions: tuple[Any, Any] | str | None = None  # Gradio's (login check, user lookup), found once

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not await self.allowed(scope, receive):
            from starlette.responses import JSONResponse

            await JSONResponse(REFUSED, status_code=401)(scope, receive, send)
            return
        await self.inner(scope, receive, send)

    async def allowed(self, scope: Any, receive: Any) -> bool:
        app = self.gradio_app
        missing = object()
        auth, dependency = getattr(app, "auth", missing), getattr(app, "auth_dependency", missing)
        if auth is None and dependency is None:
            return True  # Gradio's auth is off: the MCP tool is as public as the page
        if auth is missing or dependency is missing:
            log.error("MCP refused: Gradio's app has no auth/auth_dependency to check (fails closed)")
            return False
        if self._functions is None:  # Gradio adds its routes after the mount: looked for at the first request
            self._functions = gradio_login(app)
        if isinstance(self._functions, str):
            log.error("MCP refused: Gradio's login check was not found (%s; fails closed)", self._functions)
            return False
        check, user_of = self._functions
        from fastapi import HTTPException
        from starlette.requests import Request

        try:
            check(await user_of(Request(scope, receive)))
        except HTTPException:
            return False
        return True


class _GuardedMounts:
    """Gradio's app as ``launch_mcp_on_sse`` sees it: ``mount`` puts :class:`LoginRequired` in front of what is
    mounted; anything else it would use is an AttributeError (the launch fails closed)."""

    def __init__(self, app: Any) -> None:
        self._app = app

    def mount(self, path: str, app: Any, name: str | None = None) -> None:
        self._app.mount(path, LoginRequired(app, self._app), name=name)


def guard(server: Any) -> str | None:
    """Make ``server`` mount its routes behind :class:`LoginRequired`; a problem means: serve no MCP."""
    launch = getattr(server, "launch_mcp_on_sse", None)
    try:
        parameters = list(inspect.signature(launch).parameters) if callable(launch) else None
    except (TypeError, ValueError):
        parameters = None
    if parameters != MOUNT_PARAMETERS:
        return "Gradio's MCP server does not mount its routes as expected (launch_mcp_on_sse)"

    def launch_guarded(app: Any, subpath: str, root_path: str) -> None:
        launch(_GuardedMounts(app), subpath, root_path)

    server.launch_mcp_on_sse = launch_guarded
    return None


class OneTool:
    """Mixin for ``gr.Blocks`` (``one_tool`` names the tool): whenever Gradio creates its MCP server, narrow it
    and guard its routes at once, or refuse it — Gradio catches the refusal and serves no MCP (its
    ``mcp_error`` says why)."""

    one_tool = ""

    @property
    def mcp_server_obj(self) -> Any:
        return self.__dict__.get("_one_tool_mcp")

    @mcp_server_obj.setter
    def mcp_server_obj(self, server: Any) -> None:
        if server is not None:
            problem = (narrow(server, self.one_tool) or guard(server)) if PATCH.wanted() else "the patch is turned off"
            if problem is not None:
                log.error("MCP server off: %s", problem)
                raise RuntimeError(f"MCP server off: {problem}")
        self.__dict__["_one_tool_mcp"] = server
