"""Fork through the real app's HTTP queue (what the page itself sends): a ``/compare`` run over REST, then the
private fork event of the Fork button with the run's export; the real ``InferenceClient`` talks to the
local stub server. The fork is no API endpoint and no MCP tool."""

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


def test_the_fork_button_event_forks_the_exported_run(served):
    demo, base, stub = served
    run = compare(base)
    exports = run[FILES]
    assert any(str(f.get("path", "")).endswith(".json") for f in exports)
    fork_index = next(i for i, fn in demo.fns.items() if fn.name == "fork")
    assert fork_index is not None
    stub.requests.clear()
    data = ["react", choice_value(0, "396"), "400", "new", exports, None, None, "text", 5, 0.2, ["calculate"], None]
    frames = queue_frames(base, fork_index, data, "fork-api-test")
    panel = frames[-1][CHAT4]
    panel = panel.get("value", panel) if isinstance(panel, dict) else panel
    text = json.dumps(panel, ensure_ascii=False)
    assert "edited by the teacher" in text and "Final answer" in text and "400" in text.split("Final answer")[-1]
    assert len(stub.requests) == 1  # only the call after the edit was live; the rest was replayed
    assert "Observation: 400" in json.dumps(stub.requests[0].body, ensure_ascii=False)

    info = httpx.get(f"{base}/gradio_api/info", timeout=30).json()
    assert not any("fork" in name for name in info.get("named_endpoints", {}))
