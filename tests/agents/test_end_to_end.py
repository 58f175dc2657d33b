"""All three modes through the real InferenceClient, over real HTTP, against the local stub server.

Nothing is monkeypatched: the stub speaks OpenAI's SSE format on 127.0.0.1 and injects
the faults real providers produce (429 with Retry-After, a rejected `stop`, a dropped
connection, a hung request).
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from agents.comparison import ComparisonRun, compare, run_comparison
from agents.events import Action, TokenDelta
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply
from agents.modes import RunConfig
from tools.calculator import calculate
from tools.registry import ToolRegistry

QUESTION = "What is 17 * 23 + 5?"
REGISTRY = ToolRegistry([calculate])


@pytest.fixture
def server():
    with StubLLMServer() as srv:
        yield srv


def factory(srv: StubLLMServer, **kw):
    settings = LLMSettings(base_url=srv.url, model="stub", timeout_s=kw.pop("timeout_s", 10), **kw)
    return lambda: HFInferenceModel(settings)


@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_all_modes_answer_through_the_calculator(server, protocol):
    traces = compare(QUESTION, model_factory=factory(server), registry=REGISTRY, config=RunConfig(protocol=protocol))
    for mode in ("act", "react"):
        trace = traces[mode]
        assert trace.error is None and trace.answer is not None and "396" in trace.answer, trace.to_markdown()
        assert [s.action for s in trace.steps] == ["calculate"] and trace.steps[0].observation == "396"
        assert trace.llm_calls == 2 and trace.prompt_tokens > 0 and not trace.tokens_estimated
    assert traces["think"].answer is not None and traces["think"].tool_calls == 0
    assert traces["react"].steps[0].thought and not traces["act"].steps[0].thought
    bodies = [r.body for r in server.requests]
    if protocol == "tools":
        assert all("stop" not in b or b["stop"] is None for b in bodies)
        assert any(b.get("tools") for b in bodies)
    else:
        assert any(b.get("stop") == ["Observation:"] for b in bodies)
    assert all(r.body["stream"] and r.body["stream_options"] == {"include_usage": True} for r in server.requests)
    assert all("authorization" not in r.headers for r in server.requests)


def test_hallucinated_observation_from_server_is_cut(server):
    """The toy model writes a fake 'Observation: 42' when the server does not apply `stop`."""
    server.script(StubReply(text="Thought: t\nAction: calculate\nAction Input: 2*21\nObservation: 41",
                            reject_stop=True))
    trace = compare("What is 2*21?", ["react"], model_factory=factory(server), registry=REGISTRY)["react"]
    assert trace.steps[0].observation == "42" and "42" in trace.answer
    assert "stop" not in server.requests[1].body or server.requests[1].body["stop"] is None
    assert "Observation: 41" not in "".join(e.text for _, e in trace.events if isinstance(e, TokenDelta))


def test_rate_limited_then_success(server):
    server.script(StubReply(status=429, headers={"Retry-After": "0.1"}))
    trace = compare(QUESTION, ["react"], model_factory=factory(server), registry=REGISTRY)["react"]
    assert trace.error is None and "396" in trace.answer
    assert len(server.requests) == 3


def test_rate_limited_three_times_is_one_human_line(server):
    server.script(*[StubReply(status=429, headers={"Retry-After": "0"})] * 3)
    trace = compare(QUESTION, ["react"], model_factory=factory(server), registry=REGISTRY)["react"]
    assert trace.error == "rate-limited by the provider after 3 tries — wait a minute or pick another model"


def test_mid_stream_disconnect(server):
    server.script(StubReply(text="Thought: this is a long thought that will be cut" * 3, disconnect_after=2))
    trace = compare(QUESTION, ["react"], model_factory=factory(server), registry=REGISTRY)["react"]
    assert trace.error == "the server closed the connection mid-reply after 4 tokens" and trace.answer is None


def test_hung_request_ends_at_the_wall_clock_limit(server):
    server.script(StubReply(hang=True))
    start = time.perf_counter()
    trace = compare(QUESTION, ["react"], model_factory=factory(server, timeout_s=1), registry=REGISTRY)["react"]
    assert trace.error == "no reply from the model server within 1 s (LLM_TIMEOUT)"
    assert time.perf_counter() - start < 4


def test_provider_errors_are_one_line_without_token(server):
    secret = "hf_secret_canary_123456"
    server.script(StubReply(status=400,
                            error_body=f"Model stub is not supported by any provider you have enabled {secret}"))
    trace = compare(QUESTION, ["think"], model_factory=factory(server, token=secret), registry=REGISTRY)["think"]
    assert trace.error == "model stub is not served by any enabled provider — pick another model"
    assert server.requests[0].headers["authorization"] == f"Bearer {secret}"
    assert secret not in trace.to_json()


def test_modes_overlap_and_take_as_long_as_the_slowest():
    with StubLLMServer(latency=0.3) as srv:
        start = time.perf_counter()
        traces = compare(QUESTION, model_factory=factory(srv), registry=REGISTRY)
        wall = time.perf_counter() - start
        assert all(t.answer for t in traces.values())
        firsts = sorted(srv.requests, key=lambda r: r.started)[:3]
        assert max(r.started for r in firsts) < min(r.finished for r in firsts), "first calls did not overlap"
        assert wall < 0.3 * 2 + 0.5  # react and act make two calls each: ~0.6 s, not 1.5 s


def test_closing_the_comparison_stops_all_streams_promptly():
    with StubLLMServer(token_delay=0.05) as srv:
        srv.responder = lambda body: StubReply(text="Thought: " + "slow words " * 200)
        stream = run_comparison(QUESTION, model_factory=factory(srv), registry=REGISTRY)
        seen = {mode for mode, event in _take(stream, 30)}
        start = time.perf_counter()
        stream.close()
        assert time.perf_counter() - start < 2.5
        assert seen
        time.sleep(0.2)
        assert not [t for t in threading.enumerate() if t.name.startswith("mode-")]


def _take(stream, n):
    for i, item in enumerate(stream):
        yield item
        if i + 1 >= n:
            return


def test_unconfigured_model_is_an_error_in_every_panel():
    traces = compare(QUESTION, model_factory=lambda: HFInferenceModel(LLMSettings()), registry=REGISTRY)
    assert all(t.error and "HF_TOKEN" in t.error and "LLM_BASE_URL" in t.error for t in traces.values())


def test_native_tool_call_arguments_reach_the_tool(server):
    trace = compare(QUESTION, ["act"], model_factory=factory(server), registry=REGISTRY,
                    config=RunConfig(protocol="tools"))["act"]
    assert trace.of(Action)[0].input == {"expression": "17 * 23 + 5"}


def test_stop_interrupts_a_request_still_waiting_for_headers():
    """A hung provider must not keep a run's thread alive after Stop (close from another thread)."""
    with StubLLMServer() as srv:
        srv.responder = lambda body: StubReply(hang=True)
        run = ComparisonRun(QUESTION, model_factory=factory(srv, timeout_s=30), registry=REGISTRY).start()
        assert run.poll(timeout=0.2) is None and not run.done
        deadline = time.time() + 5
        while len(srv.requests) < 3 and time.time() < deadline:
            time.sleep(0.02)
        assert len(srv.requests) == 3
        start = time.perf_counter()
        run.close()
        assert time.perf_counter() - start < 1.0
        assert not [t for t in threading.enumerate() if t.name.startswith("mode-")]


def test_model_close_before_the_read_still_aborts_it(server):
    server.script(StubReply(hang=True))
    model = HFInferenceModel(LLMSettings(base_url=server.url, model="stub", timeout_s=30))
    threading.Timer(0.3, model.close).start()
    start = time.perf_counter()
    with pytest.raises(Exception) as info:
        list(model.stream([{"role": "user", "content": "hi"}]))
    assert str(info.value) == "the run was stopped" and time.perf_counter() - start < 2


def test_late_close_does_not_reach_the_next_stream_on_the_same_thread(server):
    """Thread ids are reused: closing a finished model must not abort another model's stream."""
    settings = LLMSettings(base_url=server.url, model="stub", timeout_s=10)
    first, second = HFInferenceModel(settings), HFInferenceModel(settings)
    server.script("done", StubReply(text="a fairly long streamed reply " * 4, token_delay=0.02))
    assert "".join(c.text for c in first.stream([{"role": "user", "content": "hi"}])) == "done"
    chunks = second.stream([{"role": "user", "content": "hi"}])
    text = next(chunks).text
    first.close()  # late, from the same thread that now streams for `second`
    text += "".join(c.text for c in chunks)
    assert text == "a fairly long streamed reply " * 4


def test_a_reply_refused_for_stop_waits_for_its_own_retry(server):
    """The stub keeps a reply refused for `stop` for the retry of that same request, not for whichever
    request of another mode happens to arrive first."""
    server.script(StubReply(text="for A", reject_stop=True), StubReply(text="for B"))
    a = {"model": "stub", "stream": True, "messages": [{"role": "user", "content": "A"}]}
    b = {"model": "stub", "stream": True, "messages": [{"role": "user", "content": "B"}]}
    assert httpx.post(f"{server.url}/chat/completions", json={**a, "stop": ["Observation:"]}).status_code == 400
    assert "for B" in httpx.post(f"{server.url}/chat/completions", json=b).text  # another mode's request
    assert "for A" in httpx.post(f"{server.url}/chat/completions", json=a).text  # A's retry without `stop`
