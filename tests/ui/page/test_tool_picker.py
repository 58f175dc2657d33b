"""The app with MCP servers named (``APP_MCP_SERVERS``): their tools in the picker from the start, a refresh that
finds a server come up, a page opened after it listing them; without servers, the picker as it always was."""

from __future__ import annotations

import json

import gradio as gr
import pytest

from tests.tools.mcp_kit import free_port, mcp_server
from tools import default_registry
from ui.page.tool_picker import ToolRefresh


def build(monkeypatch, servers: list[dict] | None):
    import app
    from agents.llm.settings import LLMSettings

    if servers is None:
        monkeypatch.delenv("APP_MCP_SERVERS", raising=False)
    else:
        monkeypatch.setenv("APP_MCP_SERVERS", json.dumps(servers))
    return app.build_demo(settings=LLMSettings(model="stub", base_url="http://127.0.0.1:9/v1"))


def picker_of(demo) -> tuple[gr.CheckboxGroup, ToolRefresh | None]:
    picker = next(b for b in demo.blocks.values() if isinstance(b, gr.CheckboxGroup) and b.label == "Enabled tools")
    refresh = next((f.fn.__self__ for f in demo.fns.values()
                    if getattr(f.fn, "__self__", None).__class__ is ToolRefresh), None)
    return picker, refresh


def test_without_servers_the_picker_has_the_built_in_tools_and_no_button(monkeypatch):
    picker, refresh = picker_of(build(monkeypatch, None))
    assert [c[1] for c in picker.choices] == default_registry().names and refresh is None


def test_the_servers_tools_are_offered_and_a_refresh_finds_a_server_come_up(monkeypatch):
    port = free_port()
    with mcp_server() as up:
        demo = build(monkeypatch, [{"name": "classfacts", "url": up},
                                   {"name": "later", "url": f"http://127.0.0.1:{port}/mcp", "timeout": 3}])
    picker, refresh = picker_of(demo)
    builtin = default_registry().names
    assert [c[1] for c in picker.choices][len(builtin):][:2] == ["classfacts_lookup", "classfacts_convert"]
    assert refresh is not None and refresh.on_load() == gr.skip()  # nothing changed: the page's own config
    events = {f.fn.__name__: [t[1] for t in f.targets] for f in demo.fns.values()
              if getattr(f.fn, "__self__", None) is refresh}
    assert events == {"click": ["click"], "on_load": ["load"]}
    refresh.registry.mcp.min_refresh_s = 0
    with mcp_server(port=port), pytest.warns(UserWarning, match="'classfacts' could not be reached"):
        update = refresh.click(["calculate"])  # the first server is down now: a warning (a toast), its tools gone
    names = [c[1] for c in update.choices]
    assert names[len(builtin):][:2] == ["later_lookup", "later_convert"]
    assert update.value == [n for n in names if n == "calculate" or n.startswith("later_")]
    assert [c[1] for c in picker.choices] == names  # requests naming the new tools pass Gradio's check
    loaded = refresh.on_load()
    assert [c[1] for c in loaded.choices] == names and loaded.value == names
