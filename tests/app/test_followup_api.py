"""Follow-up questions through ``/compare`` (REST) and the MCP tool, against a stub model that records what each
request showed it (issue 29): turn 2 of ReAct carries turn 1's observation, Think-only's only its own text."""

from __future__ import annotations

import json
import re

import pytest
from gradio_client import Client

import app
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from tests.gradio_rest import last_frame, queue_frames
from ui.core.frame import output_index

FIRST = "What is 17 * 23 + 5?"
SECOND = "And that number minus 6?"
FILES = 2 * 3 + 2  # /compare's export files output (ui/core/frame.output_index: status, table, files)


def remembering(body: dict) -> StubReply:
    """The toy model for turn 1; on the follow-up, what a model that remembers does: it answers from an earlier
    observation it was shown, and says so when it was shown none."""
    messages = body.get("messages") or []
    questions = [str(m.get("content")) for m in messages if str(m.get("content") or "").startswith("Question:")]
    if not questions or SECOND not in questions[-1]:
        return toy_policy(body)
    seen = [m for m in messages if str(m.get("content") or "").startswith("Observation:") or m.get("role") == "tool"]
    numbers = [re.findall(r"-?\d+(?:\.\d+)?", str(m.get("content"))) for m in seen]
    found = next((n[-1] for n in reversed(numbers) if n), None)
    if found is None:
        return StubReply(text="Thought: I was shown no earlier result.\nFinal Answer: I don't know")
    return StubReply(text=f"Thought: The earlier observation was {found}.\nFinal Answer: {float(found) - 6:g}")


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(responder=remembering) as server:
        yield server


@pytest.fixture(scope="module")
def served(stub, kit):
    demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
    with kit.launched(demo) as url:
        yield demo, url


@pytest.fixture(scope="module")
def client(served):
    return Client(served[1], verbose=False)


def export_of(result: list) -> dict:
    path = next(p for p in result[FILES] if str(p).endswith(".json"))
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def requests_of(stub: StubLLMServer, mode_hint: str) -> list[dict]:
    """The recorded request bodies whose system prompt has ``mode_hint``."""
    return [r.body for r in stub.requests if mode_hint in str(r.body["messages"][0].get("content"))]


def test_react_answers_turn_two_from_turn_one_observation(client, stub, kit):
    first = client.predict(question=FIRST, mode=["think", "react"], api_name="/compare")
    exported = export_of(first)
    assert exported["turn"] == 1 and exported["followup"]["turns"][0]["question"] == FIRST
    stub.requests.clear()
    second = client.predict(question=SECOND, mode=["think", "react"], previous=json.dumps(exported),
                            api_name="/compare")
    react = kit.panel_text(second[output_index("react")])
    think = kit.panel_text(second[output_index("think")])
    assert "396" in react and "390" in react  # the thread shows turn 1's answer, then turn 2's
    assert "Turn 1" in react and "Turn 2" in react
    react_bodies = requests_of(stub, "Action Input")
    assert len(react_bodies) == 1, "ReAct answered turn 2 without a new tool call"
    shown = json.dumps(react_bodies[0]["messages"])
    assert "Observation: 396" in shown and FIRST in shown and SECOND in shown
    think_bodies = requests_of(stub, "without any tools")
    assert len(think_bodies) == 1
    think_shown = think_bodies[0]["messages"]
    assert "Observation" not in json.dumps(think_shown)  # Think-only only has what it said
    assert [m["role"] for m in think_shown] == ["system", "user", "assistant", "user"]
    assert "I don't know" in think
    second_export = export_of(second)
    assert second_export["turn"] == 2 and [t["question"] for t in second_export["followup"]["turns"]] == [FIRST,
                                                                                                        SECOND]
    assert second_export["previous"]["turns"][0]["answers"]["react"] == "396"
    assert "Earlier turns" in second[2 * 3 + 1] and "| 1 |" in second[2 * 3 + 1]  # the table: a row per turn


def test_a_tampered_or_foreign_previous_is_one_line(client):
    first = client.predict(question=FIRST, mode=["react"], api_name="/compare")
    exported = export_of(first)
    exported["followup"]["history"]["react"][0]["content"] = "Question: something else"
    tampered = client.predict(question=SECOND, mode=["react"], previous=json.dumps(exported), api_name="/compare")
    status = tampered[2 * 3]
    assert "was changed" in status and "Traceback" not in status
    junk = client.predict(question=SECOND, mode=["react"], previous="{not json", api_name="/compare")
    assert "must be JSON" in junk[2 * 3]
    foreign = client.predict(question=SECOND, mode=["react"], previous=json.dumps({"a": 1}), api_name="/compare")
    assert "no follow-up block" in foreign[2 * 3]


def test_calls_without_previous_are_unchanged(client):
    result = client.predict(question=FIRST, mode=["react"], api_name="/compare")
    assert "396" in result[2 * 3] or "Done" in result[2 * 3]
    assert export_of(result)["turn"] == 1 and "previous" not in export_of(result)


def _mcp_call(url: str, arguments: dict):
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def work():
        async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("compare_reasoning_modes", arguments)

    return asyncio.run(asyncio.wait_for(work(), 60))


def test_mcp_turn_two_with_previous_and_a_tampered_previous(client, stub):
    pytest.importorskip("mcp", reason="gradio[mcp] is not installed")
    url = client.src.rstrip("/") + "/gradio_api/mcp/"
    first = _mcp_call(url, {"question": FIRST, "modes": ["react"]})
    assert not first.isError, first.content
    answer = json.loads(first.content[0].text)
    assert answer["turn"] == 1 and answer["modes"]["react"]["answer"] == "396"
    stub.requests.clear()
    second = _mcp_call(url, {"question": SECOND, "modes": ["react"], "previous": first.content[0].text})
    assert not second.isError, second.content
    data = json.loads(second.content[0].text)
    assert data["turn"] == 2 and data["modes"]["react"]["answer"] == "390"
    assert len(stub.requests) == 1 and "Observation: 396" in json.dumps(stub.requests[0].body["messages"])
    answer["followup"]["turns"][0]["answers"]["react"] = "400"
    tampered = _mcp_call(url, {"question": SECOND, "modes": ["react"], "previous": json.dumps(answer)})
    assert tampered.isError and "was changed" in tampered.content[0].text
    assert "\n" not in tampered.content[0].text.strip()


def _raw_compare(base: str, question: str, previous: str = "") -> list:
    """``/compare`` over plain HTTP, as the page's own files come back (server paths, for the fork event)."""
    return last_frame(base, "compare", [question, ["react"], None, "text", 5, 0.2, ["calculate"], "", None, "", None,
                                        previous])


def test_replay_share_and_fork_keep_the_turns(served, client, stub, kit):
    import asyncio

    from gradio_client import handle_file

    from ui.fork.screen import choice_value
    from ui.recordings.playback import final_frame
    from ui.recordings.reader import read_recording

    demo, base = served[0], served[1].rstrip("/")
    first = _raw_compare(base, FIRST)
    with open(next(f["path"] for f in first[FILES] if f["path"].endswith(".json")), encoding="utf-8") as f:
        second = _raw_compare(base, SECOND, previous=f.read())
    second_json = next(f["path"] for f in second[FILES] if f["path"].endswith(".json"))

    replayed = client.predict(handle_file(second_json), "instant", api_name="/replay")
    react = kit.panel_text(replayed[output_index("react", files=False)])
    assert "Turn 1" in react and "17 * 23" in react and "396" in react and "390" in react
    assert "Earlier turns" in replayed[2 * 3 + 1]
    # the step-aligned map: a band for turn 1 (its question, ReAct's answer), then this turn's: 390, worked out from
    # turn 1's observation (396) without a tool, is unbacked
    for shown in (second[-1], replayed[-1]):
        assert "Turn 1 · What is 17 * 23 + 5?" in shown and "Turn 2 · And that number minus 6?" in shown
        assert '<td data-label="ReAct">396</td>' in shown and 'class="claim unbacked" tabindex="0"' in shown

    shared, _ = asyncio.run(final_frame(read_recording(second_json), "✔ Shared run"))  # a share link's view
    assert "Turn 1" in json.dumps(shared.panels) and "396" in json.dumps(shared.panels)

    # a fork from an observation of turn 3 (the run that session's page shows): its live request carries turns 1 and
    # 2 exactly as turn 3's did
    compare_index = next(i for i, fn in demo.fns.items() if fn.api_name == "compare")
    with open(second_json, encoding="utf-8") as f:
        queue_frames(base, compare_index, ["And what is 2 + 3?", ["react"], None, "text", 5, 0.2, ["calculate"], "",
                                           None, "", None, f.read()], "followup-fork-test")
    stub.requests.clear()
    fork_index = next(i for i, fn in demo.fns.items() if fn.name == "fork")
    data = ["react", choice_value(0, "5"), "7", "new", None, "text", 5, 0.2, ["calculate"], None]
    frames = queue_frames(base, fork_index, data, "followup-fork-test")[-1]
    assert len(stub.requests) == 1, frames[2 * 3]
    sent = json.dumps(stub.requests[0].body["messages"])
    assert "Observation: 396" in sent and "390" in sent and "Observation: 7" in sent  # turns 1 and 2, then the edit
    assert "Turn 3" in json.dumps(frames)


def test_a_follow_up_steps_like_a_new_question(served, stub):
    """``/compare_step`` takes ``previous`` too: the follow-up pauses after its first step, and goes on."""
    import time

    client = Client(served[1], verbose=False)
    first = client.predict(question=FIRST, mode=["react"], api_name="/compare")
    job = client.submit(question="And what is 2 + 3?", mode=["react"], previous=json.dumps(export_of(first)),
                        api_name="/compare_step")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (job.outputs() and "Paused after step 1" in job.outputs()[-1][6]):
        time.sleep(0.05)
    paused = job.outputs()[-1]
    assert "Paused after step 1" in paused[6] and "Turn 2" in json.dumps(paused[output_index("react")])
    client.predict(api_name="/step_continue")
    result = job.result()
    assert "Done" in result[6] and export_of(result)["turn"] == 2


def test_a_context_length_error_in_a_follow_up_is_one_line(served, stub, monkeypatch):
    client = Client(served[1], verbose=False)
    first = export_of(client.predict(question=FIRST, mode=["react"], api_name="/compare"))

    def too_long(body: dict) -> StubReply:
        if any(SECOND in str(m.get("content")) for m in body["messages"]):
            return StubReply(status=400, error_code="context_length_exceeded",
                             error_body="This model's maximum context length is 4096 tokens.")
        return remembering(body)

    monkeypatch.setattr(stub, "responder", too_long)
    failed = client.predict(question=SECOND, mode=["react"], previous=json.dumps(first), api_name="/compare")
    status = failed[6]
    assert "longer than the model's context window" in status and "\n" not in status.strip()
