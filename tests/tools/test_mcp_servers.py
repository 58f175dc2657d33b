"""Tools from MCP servers the owner names (issue 30), against a real MCP server the test starts on 127.0.0.1
(``tests/tools/mcp_kit.py``): discovery, a ReAct run (both protocols) and a CodeAct run using its tool, a server
down or slow giving an observation, a header secret that works and shows nowhere, a refresh."""

from __future__ import annotations

import json
import logging
import time
from types import SimpleNamespace

import pytest

from agents import prompts
from agents.events import Observation
from agents.llm.scripted import ScriptedModel, ScriptedReply
from agents.modes import RunConfig, react
from agents.modes.codeact import codeact
from agents.trace import Trace
from tests.tools.mcp_kit import FACTS, free_port, mcp_server
from tools import default_registry
from tools.mcp_config import McpServer, env_problem
from tools.mcp_servers import McpRegistry, McpTools, app_registry, make_tool, tools_of, typed
from tools.registry import ToolRegistry, tool_ref

TOKEN = "mcp-canary-9b2e71f04c"  # the header secret: it must show nowhere but in the request


@pytest.fixture(scope="module")
def url():
    with mcp_server() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def guarded_url():
    with mcp_server(token=TOKEN) as endpoint:
        yield endpoint


def registry_with(*servers: McpServer) -> ToolRegistry:
    return McpTools(servers).extend(default_registry())


def run(mode, model: ScriptedModel, registry: ToolRegistry, question: str = "Who teaches the class?", **cfg) -> Trace:
    trace = Trace(mode.__name__, question)
    for event in mode(question, model, registry, RunConfig(**cfg)):
        trace.add(event)
    model.assert_done()
    return trace


def react_call(tool: str, tool_input: str) -> str:
    return f"Thought: I will ask the class's server.\nAction: {tool}\nAction Input: {tool_input}"


def observations(trace: Trace) -> list[Observation]:
    return [e for _, e in trace.events if isinstance(e, Observation)]


def test_discovery_adds_the_servers_tools_after_the_built_in_ones_with_their_schemas(url):
    registry = registry_with(McpServer("classfacts", url))
    assert registry.names == [*default_registry().names, "classfacts_lookup", "classfacts_convert",
                              "classfacts_slow", "classfacts_broken", "classfacts_echo_auth",
                              "classfacts_echo_auth_encoded", "classfacts_answer"]
    convert = registry.resolve("classfacts_convert")
    assert convert.parameters["properties"]["value"]["type"] == "number" and convert.parameters["required"] == ["value"]
    native = {s["function"]["name"]: s["function"] for s in registry.schemas()}
    assert native["classfacts_convert"]["parameters"] == convert.parameters
    assert "MCP server 'classfacts'" in native["classfacts_lookup"]["description"]
    text = prompts.system_prompt("react", registry)
    assert "- classfacts_lookup(topic): Look up a fact about the class: teacher, room or exam.\n" in text
    assert ('- classfacts_convert(value, unit): Convert a length to miles. unit is km or m. Input: a JSON object '
            '{"value": number, "unit": string (optional)}.') in text
    assert "def classfacts_convert(value: float, unit: str = None) -> str:" in prompts.system_prompt(
        "codeact", registry)
    assert tool_ref(convert) is None  # a run using it stays in the app's process, which holds the secrets


def test_a_run_enabling_a_servers_tool_stays_in_the_apps_process_and_one_without_goes_to_a_worker(url, monkeypatch):
    from agents import hosting
    from agents.llm.settings import LLMSettings
    from agents.request import RunRequest

    monkeypatch.setenv("APP_RUN_WORKERS", "2")
    monkeypatch.setattr(hosting, "default_host", lambda: "a worker")  # where it would go; nothing is started
    registry = registry_with(McpServer("classfacts", url))
    request = RunRequest("Who teaches?", ("react",))
    settings = LLMSettings(model="m", base_url="http://127.0.0.1:9/v1")
    assert hosting.make_run(request, settings, registry).host is hosting.local_host()
    assert hosting.make_run(request, settings, registry.subset(["calculate"])).host == "a worker"


def test_react_uses_the_servers_tool_over_the_text_protocol(url):
    registry = registry_with(McpServer("classfacts", url))
    model = ScriptedModel([react_call("classfacts_lookup", "teacher"), "Thought: known.\nFinal Answer: Ms Okafor"])
    trace = run(react, model, registry)
    assert [(o.tool, o.output, o.is_error) for o in observations(trace)] == [
        ("classfacts_lookup", FACTS["teacher"], False)]
    assert trace.answer == "Ms Okafor"


def test_react_uses_the_servers_tool_over_native_tool_calls(url):
    registry = registry_with(McpServer("classfacts", url))
    model = ScriptedModel([
        ScriptedReply(text="Convert it.", tool_calls=(("classfacts_convert", {"value": 10, "unit": "km"}),)),
        ScriptedReply(text="Final Answer: 6.21 miles"),
    ])
    trace = run(react, model, registry, question="10 km in miles?", protocol="tools")
    assert [o.output for o in observations(trace)] == ["6.21 miles"]
    assert "classfacts_convert" in [t["function"]["name"] for t in model.requests[0].tools]


def test_codeact_calls_the_servers_tool_as_a_function_in_the_sandbox(url):
    registry = registry_with(McpServer("classfacts", url))
    program = 'room = classfacts_lookup("room")\nprint("Room:", room)\nprint(classfacts_convert(5000, unit="m"))'
    model = ScriptedModel([
        f"Thought: ask the server.\n<code>\n{program}\n</code>",
        'Thought: done.\n<code>\nfinal_answer(room)\n</code>',
    ])
    trace = run(codeact, model, registry, question="Which room?")
    nested = [(o.tool, o.output) for o in observations(trace) if o.nested]
    assert nested == [("classfacts_lookup", "B12"), ("classfacts_convert", "3.11 miles")]
    assert [o.output for o in observations(trace) if not o.nested][0] == "Room: B12\n3.11 miles"
    assert trace.answer == "B12"


def test_a_server_down_at_start_is_one_line_and_its_tools_are_missing(caplog):
    with caplog.at_level(logging.WARNING, logger="tools.mcp_servers"):
        registry = registry_with(McpServer("gone", f"http://127.0.0.1:{free_port()}/mcp", timeout_s=3))
    assert registry.names == default_registry().names
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["APP_MCP_SERVERS: the MCP server 'gone' could not be reached (is it running?). "
                     "Its tools are missing until a refresh."]


def test_a_server_that_went_down_gives_an_observation_and_the_run_goes_on():
    with mcp_server() as endpoint:
        registry = registry_with(McpServer("classfacts", endpoint, timeout_s=3))
    model = ScriptedModel([react_call("classfacts_lookup", "room"), "Thought: no server.\nFinal Answer: unknown"])
    trace = run(react, model, registry)
    (obs,) = observations(trace)
    assert obs.is_error and obs.output == ("classfacts_lookup failed: the MCP server 'classfacts' could not be "
                                           "reached (is it running?).")
    assert trace.answer == "unknown"


def test_a_slow_tool_is_cut_at_the_servers_timeout_and_the_run_goes_on(url):
    registry = registry_with(McpServer("classfacts", url, timeout_s=1))
    model = ScriptedModel([react_call("classfacts_slow", "exam"), "Thought: too slow.\nFinal Answer: unknown"])
    started = time.monotonic()
    trace = run(react, model, registry)
    assert time.monotonic() - started < 5
    (obs,) = observations(trace)
    assert obs.is_error
    assert obs.output == "classfacts_slow failed: the MCP server 'classfacts' gave no answer within 1 s."
    assert trace.answer == "unknown"


def test_numbers_and_booleans_written_as_text_take_the_schemas_type():
    parameters = {"properties": {"n": {"type": "integer"}, "x": {"type": "number"}, "on": {"type": "boolean"},
                                 "s": {"type": "string"}}}
    assert typed({"n": "5", "x": "2.5", "on": "True", "s": "7"}, parameters) == {"n": 5, "x": 2.5, "on": True, "s": "7"}
    assert typed({"n": "2.5", "x": "two", "on": "1"}, parameters) == {"n": "2.5", "x": "two", "on": "1"}


def test_a_tools_own_error_is_an_observation(url):
    result = registry_with(McpServer("classfacts", url)).call("classfacts_broken", "x")
    assert result.is_error and result.output == ("classfacts_broken failed: Error executing tool broken: the facts "
                                                 "database is locked")


def test_a_header_secret_is_sent_and_shows_nowhere(guarded_url, monkeypatch, caplog):
    """Sent in the header, and nowhere else: not in the prompt, the trace, the export or the app's logs (even at
    DEBUG, every library's); a server that echoes it back has it replaced in the observation."""
    from ui.recordings.export import export_dict, to_json

    monkeypatch.setenv("CLASSFACTS_TOKEN", TOKEN)
    server = McpServer("classfacts", guarded_url, (("Authorization", "Bearer ${CLASSFACTS_TOKEN}"),))
    assert TOKEN not in repr(server)
    with caplog.at_level(logging.DEBUG):
        registry = registry_with(server)
        assert "classfacts_lookup" in registry.names
        model = ScriptedModel([react_call("classfacts_lookup", "exam"), "Thought: known.\nFinal Answer: 14 June"])
        trace = run(react, model, registry, question="When is the exam?")
    assert [o.output for o in observations(trace)] == ["14 June"]
    echo_model = ScriptedModel([react_call("classfacts_echo_auth", "x"), "Thought: done.\nFinal Answer: ok"])
    echoed = run(react, echo_model, registry)
    assert [o.output for o in observations(echoed)] == ["you sent: [secret]"]
    exported = to_json(export_dict(trace.question, "react", {"react": trace, "echo": echoed},
                                   {"tools": registry.names}))
    sent = json.dumps([r.messages for r in model.requests + echo_model.requests])
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "HTTP Request: POST" in logged  # the client's requests were logged, without the header
    for text in (json.dumps(trace.to_dict()), json.dumps(echoed.to_dict()), exported, sent, logged,
                 prompts.system_prompt("react", registry), json.dumps(registry.schemas())):
        assert TOKEN not in text


def test_a_wrong_header_secret_is_one_line(guarded_url, monkeypatch, caplog):
    monkeypatch.setenv("CLASSFACTS_TOKEN", "not-the-token")
    server = McpServer("classfacts", guarded_url, (("Authorization", "Bearer ${CLASSFACTS_TOKEN}"),), timeout_s=3)
    with caplog.at_level(logging.WARNING, logger="tools.mcp_servers"):
        registry = registry_with(server)
    assert registry.names == default_registry().names
    assert [r.getMessage() for r in caplog.records] == [
        "APP_MCP_SERVERS: the MCP server 'classfacts' answered HTTP 401 (is its header secret right?). "
        "Its tools are missing until a refresh."]


def test_a_refresh_finds_a_server_that_came_up_and_updates_the_registry_in_place():
    port = free_port()
    servers = McpTools([McpServer("classfacts", f"http://127.0.0.1:{port}/mcp", timeout_s=3)], min_refresh_s=0)
    registry = servers.extend(default_registry())
    held = registry.subset(None)  # what the page holds: the same registry
    assert held.names == default_registry().names
    with mcp_server(port=port):
        assert servers.refresh(registry) == []
        assert held.resolve("classfacts_lookup") is not None and held.call("classfacts lookup", "room").output == "B12"
    assert servers.refresh(registry) != [] and registry.names == default_registry().names
    servers.min_refresh_s = 60
    (line,) = servers.refresh(registry)
    assert line.startswith("the MCP servers were asked 0 s ago; try again in ")


def test_a_remote_tool_cannot_shadow_a_built_in_one_and_odd_names_become_identifiers(caplog):
    server = McpServer("duckduckgo", "http://127.0.0.1:9/mcp")
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    remotes = [SimpleNamespace(name=n, title=None, description="d", inputSchema=schema)
               for n in ("search", "Search", "news.latest", "!!!")]
    taken = {"duckduckgosearch", "calculate"}
    tools, problems = tools_of(server, remotes, taken)
    assert [t.name for t in tools] == ["duckduckgo_news_latest"]
    assert problems == [
        "the MCP server 'duckduckgo': its tool 'search' is left out: 'duckduckgo_search' is the name of another tool.",
        "the MCP server 'duckduckgo': its tool 'Search' is left out: 'duckduckgo_Search' is the name of another tool.",
        "the MCP server 'duckduckgo': its tool '!!!' is left out: its name has no letter or digit.",
    ]
    assert tools[0].name.isidentifier()
    with pytest.raises(ValueError, match="not a JSON object schema"):
        make_tool(server, SimpleNamespace(name="x", title=None, description="", inputSchema={"type": "string"}))


def test_the_apps_registry_reads_the_environment_and_a_bad_value_adds_nothing(url, monkeypatch, caplog):
    monkeypatch.setenv("APP_MCP_SERVERS", json.dumps([{"name": "classfacts", "url": url}]))
    registry = app_registry()
    assert isinstance(registry, McpRegistry) and registry.mcp.tool_names(registry)[0] == "classfacts_lookup"
    monkeypatch.setenv("APP_MCP_SERVERS", "[{]")
    with caplog.at_level(logging.ERROR, logger="tools.mcp_servers"):
        registry = app_registry()
    assert type(registry) is ToolRegistry and registry.names == default_registry().names
    assert [r.getMessage() for r in caplog.records] == [env_problem()]
    monkeypatch.delenv("APP_MCP_SERVERS")
    assert type(app_registry()) is ToolRegistry and env_problem() is None
