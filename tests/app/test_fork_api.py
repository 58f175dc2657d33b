"""Fork through the real app's HTTP queue (what the page itself sends): a ``/compare`` run in the page's session,
then the private fork event of the Fork button, which forks the run that session's lesson shows; the real
``InferenceClient`` talks to the local stub server. The fork is no API endpoint and no MCP tool."""

from __future__ import annotations

import json

import httpx
import pytest

import app
from agents.llm.stub_server import StubLLMServer
from tests.gradio_rest import last_frame, queue_frames
from ui.fork.screen import choice_value

FILES, CHAT4 = 8, 9


@pytest.fixture(scope="module")
def served(kit):
    with StubLLMServer(latency=0.01, token_delay=0.001) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
        with kit.launched(demo) as base:
            yield demo, base.rstrip("/"), stub


def compare(base: str) -> list:
    data = ["What is 17 * 23 + 5?", "ReAct", None, "text", 5, 0.2, ["calculate"], "None", None, ""]
    return last_frame(base, "compare", data)


def test_the_fork_button_event_forks_the_run_on_screen(served):
    """The page's run (its session's lesson) is what the Fork button forks: no file travels with the event."""
    demo, base, stub = served
    run = compare(base)  # another session's run: not on this page
    assert any(str(f.get("path", "")).endswith(".json") for f in run[FILES])
    fork_index = next(i for i, fn in demo.fns.items() if fn.name == "fork")
    data = ["react", choice_value(0, "396"), "400", "new", None, "text", 5, 0.2, ["calculate"], None]
    refused = queue_frames(base, fork_index, data, "fork-api-other")
    assert "Nothing to fork yet" in refused[-1][6]
    compare_index = next(i for i, fn in demo.fns.items() if fn.api_name == "compare")
    on_screen = ["What is 17 * 23 + 5?", "ReAct", None, "text", 5, 0.2, ["calculate"], "None", None, ""]
    queue_frames(base, compare_index, on_screen, "fork-api-test")  # this page's run
    stub.requests.clear()
    frames = queue_frames(base, fork_index, data, "fork-api-test")
    panel = frames[-1][CHAT4]
    panel = panel.get("value", panel) if isinstance(panel, dict) else panel
    text = json.dumps(panel, ensure_ascii=False)
    assert "edited by the teacher" in text and "Final answer" in text and "400" in text.split("Final answer")[-1]
    assert len(stub.requests) == 1  # only the call after the edit was live; the rest was replayed
    assert "Observation: 400" in json.dumps(stub.requests[0].body, ensure_ascii=False)

    info = httpx.get(f"{base}/gradio_api/info", timeout=30).json()
    assert not any("fork" in name for name in info.get("named_endpoints", {}))
