"""The app as an MCP server: driven through the ``mcp`` client library (streamable HTTP) against the app
launched on loopback with the local stub model server. Exactly one tool; it answers and marks ✓ / ✗."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("mcp", reason="gradio[mcp] is not installed")

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import app
import ui.core.settings as ui_settings
import ui.mcp
from agents.llm.stub_server import StubLLMServer, StubReply
from patches import gradio_mcp
from tests.gradio_rest import call, last_frame

QUESTION = "What is 17 * 23 + 5?"


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(latency=0.05, token_delay=0.001) as server:
        yield server


@pytest.fixture(scope="module")
def url(stub, kit):
    demo = app.build_demo(settings=kit.settings(stub, token="hf_SECRET_TOKEN_XYZ"), registry=kit.registry())
    with kit.launched(demo) as base:
        yield base.rstrip("/") + "/gradio_api/mcp/"


async def _session(url: str, work):
    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        return await work(session)


def mcp(url: str, work):
    return asyncio.run(asyncio.wait_for(_session(url, work), 60))


def test_exactly_one_tool(url):
    tools = mcp(url, lambda s: s.list_tools()).tools
    assert [t.name for t in tools] == ["compare_reasoning_modes"]
    schema = tools[0].inputSchema
    assert set(schema["properties"]) == {"question", "modes", "expected", "previous", "evidence_of", "claim"}
    assert schema["required"] == ["question"]
    assert "ReAct" in tools[0].description and "evidence" in schema["properties"]["evidence_of"]["description"]


def test_evidence_of_tests_an_exported_run_as_the_api_does(url, stub):
    """With ``evidence_of`` the one tool runs the evidence test of the mode ``modes`` names: a ReAct run's
    export, its backed 396 moved, the stub follows it — the verdict ``/evidence_test`` gives for the same run."""
    base = url.removesuffix("gradio_api/mcp/")
    run = last_frame(base, "compare", [QUESTION, "ReAct", None, "text", 5, 0.2, ["calculate"], "None", None, ""])
    export = Path(next(f["path"] for f in run[8] if str(f.get("path", "")).endswith(".json"))).read_text("utf-8")
    res = mcp(url, lambda s: s.call_tool("compare_reasoning_modes",
                                         {"question": "", "modes": ["react"], "evidence_of": export}))
    assert not res.isError, res.content
    data = json.loads(res.content[0].text)
    assert data["verdict"] == "the answer followed the evidence (396 → 515)" and "modes" not in data
    assert data["evidence"]["source"] == "react"
    assert "hf_SECRET_TOKEN_XYZ" not in res.content[0].text
    event, payload = call(base, "evidence_test", [export, "react", None], timeout=120)
    assert event == "complete" and json.loads(payload[0])["verdict"] == data["verdict"]
    claimed = mcp(url, lambda s: s.call_tool("compare_reasoning_modes", {
        "question": "", "modes": ["ReAct"], "evidence_of": export, "claim": "396"}))
    assert not claimed.isError and json.loads(claimed.content[0].text)["claim"] == "396"


@pytest.mark.parametrize("arguments, message", [
    ({"question": "", "evidence_of": "nonsense", "modes": ["react"]}, "run must be a share id or the JSON"),
    ({"question": "", "evidence_of": "{}", "modes": ["react", "act"]}, "name exactly one mode"),
    ({"question": "", "evidence_of": "{}"}, "name the one mode to test"),
    ({"question": "", "evidence_of": "{}", "modes": ["bogus"]}, "unknown mode"),
])
def test_evidence_of_bad_input_is_one_clear_error(url, arguments, message):
    res = mcp(url, lambda s: s.call_tool("compare_reasoning_modes", arguments))
    assert res.isError and message in res.content[0].text and "Traceback" not in res.content[0].text


def test_call_answers_and_marks_each_mode(url, stub):
    stub.requests.clear()
    res = mcp(url, lambda s: s.call_tool("compare_reasoning_modes", {"question": QUESTION, "expected": "396"}))
    assert not res.isError, res.content
    data = json.loads(res.content[0].text)
    assert data["expected"] == "396" and list(data["modes"]) == ["think", "act", "react"]
    act, react, think = data["modes"]["act"], data["modes"]["react"], data["modes"]["think"]
    assert act["answer"] == "396" and act["mark"] == "✓" and act["correct"] is True and act["f1"] == 1.0
    assert react["mark"] == "✓" and react["steps"] == 1 and "calculate" in react["trace"]
    assert think["mark"] == "✗" and think["steps"] == 1  # the stub's Think-only can only guess (in its one step)
    assert react["tokens"]["prompt"] > 0 and react["seconds"] >= 0 and react["llm_calls"] == 2
    assert "hf_SECRET_TOKEN_XYZ" not in res.content[0].text
    assert len(stub.requests) == 5  # it really ran: 1 think + 2 act + 2 react model calls


def test_call_some_modes_without_expected(url):
    res = mcp(url, lambda s: s.call_tool("compare_reasoning_modes", {"question": QUESTION, "modes": ["ReAct"]}))
    data = json.loads(res.content[0].text)
    assert list(data["modes"]) == ["react"] and data["modes"]["react"]["mark"] is None


@pytest.mark.parametrize("arguments, message", [
    ({"question": "  "}, "Please type a question"),
    ({"question": QUESTION, "modes": ["bogus"]}, "Unknown mode"),
    ({"question": QUESTION, "expected": "x" * 600}, "limit"),
])
def test_bad_input_is_one_clear_error(url, arguments, message):
    res = mcp(url, lambda s: s.call_tool("compare_reasoning_modes", arguments))
    assert res.isError and message in res.content[0].text


@pytest.mark.parametrize("setting", [{"max_tokens": -5}, {"model": "m" * 10_000}, {"temperature": 9}])
def test_a_setting_the_tool_does_not_take_is_refused_not_ignored(url, stub, setting):
    stub.requests.clear()
    res = mcp(url, lambda s: s.call_tool("compare_reasoning_modes", {"question": QUESTION, **setting}))
    assert res.isError and f"`{next(iter(setting))}` is not a valid" in res.content[0].text
    assert stub.requests == []


def test_the_tool_asks_for_the_app_s_llm_max_tokens_unchanged(kit):
    """The tool takes no settings: its runs use the app's, as set (no silent cap at the Settings box's 32768)."""
    with StubLLMServer() as server:
        demo = app.build_demo(settings=kit.settings(server, max_tokens=50_000), registry=kit.registry())
        with kit.launched(demo) as base:
            res = mcp(base + "gradio_api/mcp/", lambda s: s.call_tool(
                "compare_reasoning_modes", {"question": QUESTION, "modes": ["think"]}))
    assert not res.isError and [r.body["max_tokens"] for r in server.requests] == [50_000]


def test_other_endpoints_are_not_tools(url):
    for name in ("compare", "play", "replay", "show", "prompts", "benchmark", "calculate", "python_repl"):
        res = mcp(url, lambda s, n=name: s.call_tool(n, {"question": QUESTION}))
        assert res.isError, name


def test_app_mcp_0_turns_it_off(monkeypatch):
    """The switch is read with the app's other settings (ui.core.settings), not straight from os.environ."""
    monkeypatch.setattr(ui_settings, "_current", ui_settings.AppSettings.from_env({"APP_MCP": "0"}))
    assert ui.mcp.mcp_enabled() is False
    monkeypatch.setattr(ui_settings, "_current", ui_settings.AppSettings.from_env({"APP_MCP": "yes"}))
    assert ui.mcp.mcp_enabled() is True


def test_parse_modes():
    assert ui.mcp.parse_modes(None) == ("think", "act", "react") == ui.mcp.parse_modes("All")
    assert ui.mcp.parse_modes(["react", "Think"]) == ("think", "react")
    assert ui.mcp.parse_modes("act, react") == ("act", "react")
    assert "Unknown mode" in ui.mcp.parse_modes(["x"]) and "list" in ui.mcp.parse_modes(3)


def test_gradio_schema_route_lists_only_the_tool(url):
    schema = httpx.get(url.rstrip("/") + "/schema", timeout=30).json()
    assert [t["name"] for t in schema] == ["compare_reasoning_modes"]


class FakeServer:
    """What gradio.mcp.GradioMCPServer builds (6.31): every public endpoint a tool, named after its function."""

    def __init__(self, endpoints: list[str]) -> None:
        self.tool_prefix = "space_"
        self.api_info = {"named_endpoints": {e: {"parameters": []} for e in endpoints}, "unnamed_endpoints": {}}
        self.tool_to_endpoint = self.get_tool_to_endpoint()

    def get_tool_to_endpoint(self) -> dict[str, str]:
        return {self.tool_prefix + e.lstrip("/"): e for e in self.api_info["named_endpoints"]}


def test_narrowing_keeps_one_tool_or_refuses_the_server():
    server = FakeServer(["/compare", "/replay", "/compare_reasoning_modes"])
    assert gradio_mcp.narrow(server, "compare_reasoning_modes") is None
    one = {"compare_reasoning_modes": "/compare_reasoning_modes"}
    assert server.tool_to_endpoint == server.get_tool_to_endpoint() == one
    assert "not among" in gradio_mcp.narrow(FakeServer(["/compare"]), "compare_reasoning_modes")
    stale = FakeServer(["/compare", "/compare_reasoning_modes"])
    stale.get_tool_to_endpoint = lambda: {"compare": "/compare"}  # a Gradio that derives its tools elsewhere
    assert "would still offer" in gradio_mcp.narrow(stale, "compare_reasoning_modes")
    del stale.api_info
    assert "not built as expected" in gradio_mcp.narrow(stale, "compare_reasoning_modes")


def test_without_the_patch_the_app_serves_no_mcp_at_all(kit, monkeypatch):
    monkeypatch.setenv("APP_PATCHES_OFF", "gradio_mcp")
    demo = app.build_demo(settings=kit.settings(StubLLMServer()), registry=kit.registry())
    with kit.launched(demo) as base:
        assert httpx.get(base.rstrip("/") + "/gradio_api/mcp/schema", timeout=10).status_code == 404
        assert httpx.get(base + "config", timeout=10).status_code == 200  # the rest of the app is there
    assert demo.mcp_server is False and "patch is turned off" in demo.mcp_error


def test_the_tool_waits_in_the_same_line_as_compare(kit, monkeypatch):
    """One slot: a Compare run holds it, so the MCP call waits for it instead of running beside it."""
    monkeypatch.setattr(ui_settings, "_current", ui_settings.AppSettings(concurrency=1, queue_size=1))

    def slow(body: dict) -> StubReply:
        return StubReply(text="Thought: thinking.\nFinal Answer: 42", first_token_delay=1.0)

    with StubLLMServer(slow) as server:
        demo = app.build_demo(settings=kit.settings(server), registry=kit.registry())
        with kit.launched(demo) as base:
            posted = httpx.post(f"{base}gradio_api/call/compare", timeout=10, json={"data": [
                "question one", "Think", "stub", "text", 5, 0.2, ["calculate"], "None", None]})
            assert posted.status_code == 200
            deadline = time.monotonic() + 10
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            res = mcp(base + "gradio_api/mcp/", lambda s: s.call_tool(
                "compare_reasoning_modes", {"question": "question two", "modes": ["think"], "expected": "42"}))
    assert not res.isError and json.loads(res.content[0].text)["modes"]["think"]["mark"] == "✓"
    first, second = sorted(server.requests, key=lambda r: r.started)
    assert second.started >= first.finished - 0.05  # it ran after Compare's run, not beside it


def test_an_unconfigured_app_says_why_in_one_line(kit):
    from agents.llm.settings import LLMSettings

    demo = app.build_demo(settings=LLMSettings(model="stub"), registry=kit.registry())
    with kit.launched(demo) as base:
        res = mcp(base + "gradio_api/mcp/", lambda s: s.call_tool("compare_reasoning_modes", {"question": QUESTION}))
    assert res.isError and "HF_TOKEN" in res.content[0].text and "Traceback" not in res.content[0].text


def test_the_tool_runs_any_mode_a_panel_shows_and_says_so(url):
    tools = mcp(url, lambda s: s.list_tools()).tools
    said = tools[0].inputSchema["properties"]["modes"].get("description", "")
    assert all(f'"{m}"' in said for m in ("think", "codeact", "reflexion", "react_cot_sc")), said
    res = mcp(url, lambda s: s.call_tool("compare_reasoning_modes", {
        "question": QUESTION, "modes": ["ReAct", "codeact", "Reflexion"], "expected": "396"}))
    assert not res.isError, res.content
    modes = json.loads(res.content[0].text)["modes"]
    assert list(modes) == ["react", "codeact", "reflexion"]
    assert all(m["mark"] == "✓" and "396" in m["answer"] for m in modes.values()), modes
    assert "graded against the expected answer" in modes["reflexion"]["trace"]  # the expected answer reached it
    refused = mcp(url, lambda s: s.call_tool("compare_reasoning_modes", {"question": QUESTION, "modes": ["nope"]}))
    assert refused.isError and "codeact" in refused.content[0].text


def test_with_gradio_s_auth_on_tools_list_and_the_schema_need_the_login(kit):
    """``launch(auth=...)`` guards the page and the API; MCP's routes follow it (patches/gradio_mcp.LoginRequired):
    a stranger's tools/list, initialize and schema get a 401, a logged-in client lists the one tool."""
    demo = app.build_demo(settings=kit.settings(StubLLMServer()), registry=kit.registry())
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, auth=("teacher", "secret"),
                **app.launch_kwargs())
    try:
        base = demo.local_url
        mcp_url = base + "gradio_api/mcp/"
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        for method in ("initialize", "tools/list"):
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}
            refused = httpx.post(mcp_url, json=body, headers=headers, timeout=30)
            assert refused.status_code == 401 and "compare_reasoning_modes" not in refused.text, method
        assert httpx.get(mcp_url + "schema", timeout=30).status_code == 401
        with httpx.Client() as browser:
            assert browser.post(base + "login", data={"username": "teacher", "password": "wrong"}).status_code == 400
            assert browser.post(base + "login", data={"username": "teacher", "password": "secret"}).status_code == 200
            cookies = browser.cookies
            assert [t["name"] for t in browser.get(mcp_url + "schema", timeout=30).json()] == [ui.mcp.TOOL_NAME]

        async def listed() -> list[str]:
            async with httpx.AsyncClient(cookies=cookies, timeout=30) as client:
                async with streamable_http_client(mcp_url, http_client=client) as (read, write, _):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        return [t.name for t in (await session.list_tools()).tools]

        assert asyncio.run(asyncio.wait_for(listed(), 60)) == [ui.mcp.TOOL_NAME]
    finally:
        demo.close()


def test_a_gradio_that_mounts_mcp_otherwise_serves_no_mcp():
    """The guard's start-up check: a server whose mount is not the one it wraps is refused (fails closed)."""
    server = FakeServer(["/compare_reasoning_modes"])
    assert "does not mount its routes as expected" in gradio_mcp.guard(server)
    server.launch_mcp_on_sse = lambda app, subpath: None
    assert "does not mount its routes as expected" in gradio_mcp.guard(server)


def test_docs_list_every_mode_the_tool_takes():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    assert all(f"`{mode}`" in text for mode in ui.mcp.COMPARED), ui.mcp.COMPARED
