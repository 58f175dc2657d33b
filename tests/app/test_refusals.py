"""Inputs Gradio refuses before the app's handlers run reach the client as one readable line
(patches/gradio_refusals.py), never ``{"error": null}``: a file path that was not uploaded, a value a component
cannot read, too few inputs — over the REST API and through the queue, as a browser sends a private event."""

from __future__ import annotations

import json

import httpx
import pytest

import app
from agents.llm.stub_server import StubLLMServer, toy_policy
from tests.gradio_rest import call

QUESTION = ["What is 17 * 23 + 5?", "All", "stub", "text", 5, 0.2, ["calculate"], "None", None]


@pytest.fixture(scope="module")
def url(kit):
    with StubLLMServer(toy_policy) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
        with kit.launched(demo) as local_url:
            yield local_url


@pytest.mark.parametrize(("name", "data", "why"), ids=["path-dict", "path-text", "number", "too-few", "modes-null"],
                         argvalues=[
    ("replay", [{"path": "/etc/passwd", "meta": {"_type": "gradio.FileData"}}, "instant"],
     "names a file that was not uploaded to this app"),
    ("replay", ["/etc/passwd", "instant"], "Replay a saved run (input 1 of /replay) must be an uploaded file"),
    ("replay", [5, "instant"], "must be an uploaded file (the path /gradio_api/upload returns); got a number"),
    ("compare", QUESTION[:1], "/compare takes 13 input values (Question, Modes, "),
    ("benchmark", ["hotpotqa", None, 5, None, 2, 1, "stub", "text", 3, 0.2, ["calculate"]],
     "Modes (input 4 of /benchmark) must be a list; got nothing"),
])
def test_a_refused_input_is_one_readable_line(url, name, data, why):
    event, payload = call(url, name, data)
    assert event == "error" and isinstance(payload, dict)
    line = payload.get("error")
    assert isinstance(line, str) and why in line and line.count("\n") == 0, payload
    assert "/etc/passwd" not in line and "Traceback" not in line  # what was sent is not echoed


def test_a_private_event_through_the_queue_gets_the_line_too(url):
    """The page's Replay button with a forged path, as the browser's queue sends it."""
    config = httpx.get(f"{url}config", timeout=30).json()
    fn = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "play_on_page")
    session = "refused-replay"
    body = {"data": [{"path": "/etc/hostname", "meta": {"_type": "gradio.FileData"}}, "instant"], "fn_index": fn,
            "session_hash": session, "event_data": None, "trigger_id": None}
    assert httpx.post(f"{url}gradio_api/queue/join", json=body, timeout=30).status_code == 200
    with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session}, timeout=30) as s:
        done = next(json.loads(line[5:]) for line in s.iter_lines()
                    if line.startswith("data:") and '"process_completed"' in line)
    assert done["success"] is False and "was not uploaded to this app" in done["output"]["error"]


@pytest.mark.parametrize(("method", "path", "body", "why"), ids=["call", "call-v2", "run", "api", "join", "predict"],
                         argvalues=[
    ("POST", "gradio_api/call/nope", {"data": []}, "There is no API endpoint named 'nope'"),
    ("POST", "gradio_api/call/v2/nope", {}, "There is no API endpoint named 'nope'"),
    ("POST", "gradio_api/run/nope", {"data": []}, "There is no API endpoint named 'nope'"),
    ("POST", "gradio_api/api/nope", {"data": []}, "There is no API endpoint named 'nope'"),
    ("POST", "gradio_api/queue/join", {"data": [], "fn_index": 9999, "session_hash": "s-unknown"},
     "There is no event with fn_index 9999"),
    ("POST", "gradio_api/run/predict", {"data": [], "fn_index": 9999, "session_hash": "s-unknown"},
     "There is no event with fn_index 9999"),
])
def test_an_unknown_endpoint_or_event_is_a_404_line_not_a_500(url, method, path, body, why):
    """Gradio looks the event up without a check (a KeyError, or its FnIndexInferError): ui/core/route_errors.py."""
    response = httpx.request(method, f"{url}{path}", json=body, timeout=30)
    assert response.status_code == 404, (response.status_code, response.text)
    line = response.json()["detail"]
    assert why in line and "/gradio_api/info" in line and line.count("\n") == 0


def test_a_long_unknown_name_is_not_echoed_whole(url):
    response = httpx.post(f"{url}gradio_api/call/{'x' * 5000}", json={"data": []}, timeout=30)
    assert response.status_code == 404 and len(response.text) < 300, response.text


def test_a_known_endpoint_still_answers(url):
    config = httpx.get(f"{url}config", timeout=30).json()
    fn = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "compare")
    joined = httpx.post(f"{url}gradio_api/queue/join", timeout=30, json={
        "data": QUESTION + [None, None], "fn_index": fn, "session_hash": "known-event", "event_data": None})
    assert joined.status_code == 200 and "event_id" in joined.json()
