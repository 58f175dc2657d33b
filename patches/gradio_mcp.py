"""The MCP server offers exactly one tool, or the app serves no MCP at all.

Gradio's MCP server (6.31: ``gradio.mcp.GradioMCPServer``) makes every public API endpoint a tool. This app's
endpoints are API contracts, not tools, and its own tools (search, the sandbox) must never be reachable
through MCP. So when Gradio creates its server, :class:`OneTool` narrows its maps to one endpoint and checks
the result; when it cannot (another Gradio layout, the endpoint missing, the patch off) the server is refused
with one log line: failing open would list every endpoint.
"""

from __future__ import annotations

import logging
from typing import Any

from patches import Patch

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


class OneTool:
    """Mixin for ``gr.Blocks`` (``one_tool`` names the tool): whenever Gradio creates its MCP server, narrow it
    at once, or refuse it — Gradio catches the refusal and serves no MCP (its ``mcp_error`` says why)."""

    one_tool = ""

    @property
    def mcp_server_obj(self) -> Any:
        return self.__dict__.get("_one_tool_mcp")

    @mcp_server_obj.setter
    def mcp_server_obj(self, server: Any) -> None:
        if server is not None:
            problem = narrow(server, self.one_tool) if PATCH.wanted() else "the patch is turned off"
            if problem is not None:
                log.error("MCP server off: %s", problem)
                raise RuntimeError(f"MCP server off: {problem}")
        self.__dict__["_one_tool_mcp"] = server
