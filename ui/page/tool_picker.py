"""The Enabled tools picker in Settings; with MCP servers named (``APP_MCP_SERVERS``), a button that asks them again.

The servers' tools were found at start (``tools/mcp_servers.py``); a server that was down then, or whose tools
changed, is asked again here. A refresh updates the registry every part of the page holds, the picker of the
visitor who clicked, the picker's choices that every request is checked against, and, on a page opened later,
its picker as it loads. Nothing a visitor types reaches a server: the button only re-asks the owner's servers,
at most once every few seconds (``McpTools.refresh``).
"""

from typing import Any

import gradio as gr

from tools.registry import ToolRegistry

LABEL = "Enabled tools"


def tool_picker(registry: ToolRegistry, own: gr.State | None = None) -> gr.CheckboxGroup:
    """The picker (every tool enabled), and its refresh button when the registry has MCP servers; ``own``: the
    visitor's tools written on the page (``ui/page/page_tools.py``), which a refresh keeps after the app's."""
    if getattr(registry, "mcp", None) is None:
        return gr.CheckboxGroup(registry.names, value=registry.names, label=LABEL)
    with gr.Column(min_width=240):
        tools = gr.CheckboxGroup(registry.names, value=registry.names, label=LABEL,
                                 info="Tools named server_tool come from the Space's MCP servers")
        button = gr.Button("↻ Ask the MCP servers again", size="sm", elem_id="mcp-refresh")
    refresh = ToolRefresh(registry, tools)
    button.click(refresh.click, inputs=[tools] if own is None else [tools, own], outputs=tools,
                 api_visibility="private", show_progress="minimal")
    gr.on(None, refresh.on_load, outputs=tools, api_visibility="private", show_progress="hidden", queue=False)
    return tools


class ToolRefresh:
    """The button's handler and the page load's, over the app's registry and its picker."""

    def __init__(self, registry: ToolRegistry, picker: gr.CheckboxGroup) -> None:
        self.registry, self.picker = registry, picker
        self.at_start = list(registry.names)  # what the page's own config lists

    def click(self, enabled: list[str] | None, own: list[dict[str, str]] | None = None) -> Any:
        """Ask the servers again; a problem is a warning line. Tools new to the picker come enabled, the others
        keep the visitor's choice; the visitor's own tools stay last."""
        before = set(self.registry.names)
        for problem in self.registry.mcp.refresh(self.registry):  # type: ignore[attr-defined]
            gr.Warning(problem)
        self.picker.choices = [(n, n) for n in self.registry.names]  # what every request's tools are checked against
        names = [*self.registry.names, *(t["name"] for t in own or [] if t["name"] not in self.registry.names)]
        before |= {t["name"] for t in own or []}
        kept = set(enabled or [])
        return gr.CheckboxGroup(choices=names, value=[n for n in names if n in kept or n not in before])

    def on_load(self) -> Any:
        """A page opened after a refresh: its picker lists the tools as they are now (all enabled)."""
        if self.registry.names == self.at_start:
            return gr.skip()
        return gr.CheckboxGroup(choices=self.registry.names, value=self.registry.names)
