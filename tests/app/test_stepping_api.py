"""Step through over the API: ``/compare_step`` (``/compare``'s inputs and outputs) pauses after each
step; ``/step_next`` and ``/step_continue`` from the same client session move it on, and another
session's calls leave it alone. The REST route accepts ``/compare_step`` without ``expected`` too."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from gradio_client import Client

import app
from agents.llm.stub_server import StubLLMServer
from tests.stepping import calculator_steps

STATUS = 6


responder = calculator_steps(2, "396", lambda step: f"17 * 23 + {step}")


@pytest.fixture(scope="module")
def url(kit):
    with StubLLMServer(responder, latency=0.02, token_delay=0.001) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
        with kit.launched(demo) as base:
            yield base


def wait_status(job, text: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        outputs = job.outputs()
        if outputs and text in outputs[-1][STATUS]:
            return outputs[-1][STATUS]
        if job.done():
            break
        time.sleep(0.05)
    raise AssertionError(f"never saw {text!r}; last status: {job.outputs()[-1][STATUS] if job.outputs() else None}")


def test_an_api_client_steps_next_and_continues_in_its_session(url):
    client, other = Client(url, verbose=False), Client(url, verbose=False)
    job = client.submit(question="What is 17 * 23 + 5?", mode="ReAct", api_name="/compare_step")
    wait_status(job, "⏸ Paused after step 1")
    other.predict(api_name="/step_next")  # another session: nothing moves
    other.predict(api_name="/step_continue")
    time.sleep(0.5)
    assert "Paused after step 1" in job.outputs()[-1][STATUS] and not job.done()
    client.predict(api_name="/step_next")
    wait_status(job, "⏸ Paused after step 2")
    client.predict(api_name="/step_continue")
    result = job.result()
    assert "Done" in result[STATUS] and "396" in str(result[2]) and "Paused after step 2" in str(result[2])
    assert "Paused after step 3" not in str(result[2])


def rest_call(url: str, api: str, data: list, session: str) -> str:
    """POST to Gradio's REST route with a chosen ``session_hash``; the event id to read the stream with.
    Gradio streams a session's messages on one GET at a time, so a step call is only POSTed."""
    posted = httpx.post(f"{url}gradio_api/call/{api}", json={"data": data, "session_hash": session}, timeout=30)
    assert posted.status_code == 200, posted.text
    return posted.json()["event_id"]


def rest_events(url: str, api: str, event_id: str) -> Iterator[tuple[str, object]]:
    """The (event, data) pairs of one REST call's stream."""
    with httpx.stream("GET", f"{url}gradio_api/call/{api}/{event_id}", timeout=60) as s:
        event = ""
        for line in s.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                yield event, json.loads(line[6:])


def test_a_rest_client_steps_with_its_own_session_hash_and_may_omit_expected(url):
    session = "rest-stepper-1"
    nine = ["What is 17 * 23 + 5?", "ReAct", "stub", "text", 5, 0.2, ["calculate"], "None", None]
    stream = rest_events(url, "compare_step", rest_call(url, "compare_step", nine, session))
    for event, data in stream:
        if event == "generating" and "Paused after step 1" in data[STATUS]:
            break
    rest_call(url, "step_continue", [], session)  # its completion arrives on the session's one stream (above)
    last = [data for event, data in stream if event == "complete" and data and len(data) > STATUS][-1]
    assert "Done" in last[STATUS] and "396" in str(last[2])
