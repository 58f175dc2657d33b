"""Real replies of a real server, replayed byte for byte: the stream shapes scripted stubs never had.

The bodies in ``tests/fixtures/smollm2/`` were recorded from llama-cpp-python's server running
SmolLM2-135M-Instruct (see the README there). ``SSEReplayServer`` serves them to the real
``InferenceClient`` / ``HFInferenceModel`` on 127.0.0.1, so no model server is needed here.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from huggingface_hub import InferenceClient

from agents.events import FinalAnswer, LLMError, ParseError, TokenDelta, Usage
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.modes import RunConfig
from agents.modes.base import complete
from agents.modes.text_protocol import text_loop
from agents.modes.think import think_only
from agents.modes.tool_protocol import tools_loop
from agents.parsing import parse_step
from tests.model_servers.sse_replay import ReplayBody, SSEReplayServer, split_events
from tools.calculator import calculate
from tools.registry import ToolRegistry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "smollm2"
COMPLETE = ["think", "react_text", "react_tools", "length"]
ALL = [*COMPLETE, "aborted"]


def recording(name: str) -> tuple[ReplayBody, dict]:
    """The body (cut like the original when the client saw an error) and the request that produced it."""
    meta = json.loads((FIXTURES / f"{name}.request.json").read_text())
    raw = (FIXTURES / f"{name}.sse").read_bytes()
    return ReplayBody(raw, complete=meta["client_saw"] is None), meta["request"]


def events_of(raw: bytes) -> list[dict | str]:
    """The ``data:`` payloads of a body: JSON objects, or the literal ``[DONE]``."""
    out: list[dict | str] = []
    for part in split_events(raw):
        data = part.strip().removeprefix(b"data: ")
        out.append("[DONE]" if data == b"[DONE]" else json.loads(data))
    return out


def content_of(raw: bytes) -> str:
    return "".join((c["delta"].get("content") or "") for e in events_of(raw) if isinstance(e, dict)
                   for c in e["choices"])


def model_for(server: SSEReplayServer) -> HFInferenceModel:
    return HFInferenceModel(LLMSettings(model="smollm2-135m", base_url=server.url))


def run_events(gen) -> list:
    return list(gen)


@pytest.mark.parametrize("name", ALL)
def test_replay_sends_the_recorded_bytes_exactly(name):
    body, request = recording(name)
    got = bytearray()
    with SSEReplayServer([body]) as server:
        try:
            with httpx.stream("POST", f"{server.url}/chat/completions", json=request, timeout=10) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                for part in response.iter_raw():
                    got += part
            assert body.complete
        except httpx.RemoteProtocolError:  # what the real client saw when the server cut the stream
            assert not body.complete
    assert bytes(got) == body.raw


def test_the_recordings_show_the_real_servers_quirks():
    for name in COMPLETE:
        events = events_of(recording(name)[0].raw)
        assert events[-1] == "[DONE]"
        assert events[0]["choices"][0]["delta"] == {"role": "assistant"}  # a role-only first chunk
        assert all("usage" not in e for e in events if isinstance(e, dict))  # include_usage is ignored
        last = events[-2]["choices"][0]
        assert last["delta"] == {} and last["finish_reason"] == ("length" if name == "length" else "stop")
    aborted = events_of(recording("aborted")[0].raw)
    # An interrupted stream still ends with [DONE]: only the missing finish_reason (and the cut
    # connection after it) tells it from a complete reply.
    assert aborted[-1] == "[DONE]"
    assert all(c["finish_reason"] is None for e in aborted if isinstance(e, dict) for c in e["choices"])


@pytest.mark.parametrize("name", COMPLETE)
def test_inference_client_sees_finish_reason_and_no_usage(name):
    body, request = recording(name)
    with SSEReplayServer([body]) as server, InferenceClient(base_url=server.url) as client:
        outputs = list(client.chat_completion(
            request["messages"], model="smollm2-135m", stream=True, max_tokens=request["max_tokens"],
            tools=request.get("tools"), stream_options={"include_usage": True}))
    reasons = [o.choices[0].finish_reason for o in outputs if o.choices]
    assert reasons[-1] == ("length" if name == "length" else "stop") and not any(reasons[:-1])
    assert all(o.usage is None for o in outputs)
    assert "".join(o.choices[0].delta.content or "" for o in outputs if o.choices) == content_of(body.raw)


@pytest.mark.parametrize("name", ["think", "react_text", "react_tools"])
def test_complete_assembles_the_text_and_estimates_usage(name):
    body, request = recording(name)
    with SSEReplayServer([body]) as server:
        events = []
        gen = complete(model_for(server), request["messages"], RunConfig(max_tokens=request["max_tokens"]),
                       stop=request.get("stop"), tools=request.get("tools"))
        try:
            while True:
                events.append(next(gen))
        except StopIteration as done:
            reply = done.value
        assert len(server.requests) == 1
        assert server.requests[0].get("tools") == request.get("tools")
    text = content_of(body.raw)
    assert reply is not None and reply.text == text and reply.tool_calls == []
    assert "".join(e.text for e in events if isinstance(e, TokenDelta)) == text
    usage = [e for e in events if isinstance(e, Usage)]
    assert len(usage) == 1 and usage[0].estimated  # no usage in the stream → ~4 characters per token
    assert usage[0].completion_tokens == len(text) // 4 and usage[0].prompt_tokens > 100
    assert not any(isinstance(e, LLMError) for e in events)


@pytest.mark.parametrize("name", COMPLETE)
def test_parse_step_on_real_replies(name):
    """A 135M model does not keep the format: every recorded reply is a format error with its text kept,
    never a made-up action or answer."""
    text = content_of(recording(name)[0].raw)
    step = parse_step(text, ["calculate"])
    assert isinstance(step, ParseError) and step.text == text and "Final Answer" in step.message


def test_native_tools_request_is_answered_in_text():
    """llama-cpp-python's default chat handler streams plain text for a ``tools=`` request; the
    tools loop takes a reply without tool calls as the final answer."""
    body, request = recording("react_tools")
    with SSEReplayServer([body]) as server:
        events = run_events(tools_loop("What is 17 * 23 + 5?", model_for(server), ToolRegistry([calculate]),
                                       RunConfig(protocol="tools", max_steps=2), thoughts=True, prompt="react"))
        assert len(server.requests) == 1 and server.requests[0]["tools"][0]["function"]["name"] == "calculate"
    answers = [e for e in events if isinstance(e, FinalAnswer)]
    assert [a.text for a in answers] == [content_of(body.raw).strip()]


# --- cut replies and the token limit, on real recorded replies ---


def test_a_reply_cut_at_the_token_limit_says_so():
    body, _ = recording("length")
    with SSEReplayServer([body]) as server:
        events = run_events(think_only("What is 17 * 23 + 5?", model_for(server), ToolRegistry([calculate]),
                                       RunConfig(max_tokens=12)))
    assert any("token limit" in str(e).lower() for e in events), events


@pytest.mark.parametrize("mode", ["think", "react"])
def test_a_real_aborted_stream_is_never_an_answer(mode):
    """The real server cut this reply when another request arrived (after sending ``[DONE]``, without a
    ``finish_reason``): the fragment must not become an answer or be parsed into a step."""
    body, _ = recording("aborted")
    registry, config = ToolRegistry([calculate]), RunConfig(max_steps=2)
    with SSEReplayServer([body]) as server:
        model = model_for(server)
        loop = (think_only("Explain how a bicycle works.", model, registry, config) if mode == "think"
                else text_loop("Explain how a bicycle works.", model, registry, config, thoughts=True, prompt="react"))
        events = run_events(loop)
    assert not any(isinstance(e, (FinalAnswer, ParseError)) for e in events), events
    errors = [e for e in events if isinstance(e, LLMError)]
    assert len(errors) == 1, events
    assert "empty answer" not in errors[0].message
    assert any(w in errors[0].message.lower() for w in ("mid-reply", "incomplete", "closed", "cut")), errors
