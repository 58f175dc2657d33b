"""Servers that serve one request at a time, through the real client against the stub.

The stub's ``one_at_a_time`` mode does what llama-cpp-python's server does by default: a new
request aborts the one in flight (``[DONE]`` without a ``finish_reason``, then the end of the body).
"""

from __future__ import annotations

import threading
import time

import pytest

from agents.comparison import BUSY_NOTE, RETRY_NOTE, ComparisonRun, compare
from agents.events import LLMError, Retry, Waiting
from agents.llm.base import LLMFailure
from agents.llm.gate import Gate, OpenStreams
from agents.llm.hf import INTERRUPTED, HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from agents.modes import RunConfig
from tools.calculator import calculate
from tools.registry import ToolRegistry

REGISTRY = ToolRegistry([calculate])
QUESTION = "What is 17 * 23 + 5?"
HI = [{"role": "user", "content": "hi"}]


def settings(srv: StubLLMServer, **kw) -> LLMSettings:
    return LLMSettings(base_url=srv.url, model="stub", timeout_s=kw.pop("timeout_s", 10), **kw)


def slow_toy(body):
    """The toy model, slow enough that requests started together overlap even on a loaded machine."""
    reply = toy_policy(body)
    reply.first_token_delay, reply.token_delay = 0.3, 0.02
    return reply


@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_max_concurrent_1_runs_the_modes_in_turn_and_all_finish(protocol):
    with StubLLMServer(responder=slow_toy, one_at_a_time=True) as srv:
        s = settings(srv, max_concurrent=1)
        traces = compare(QUESTION, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY,
                         config=RunConfig(protocol=protocol))
        assert srv.max_in_flight == 1  # calls never overlapped on the server
    for mode, trace in traces.items():
        assert trace.error is None and trace.answer, (mode, trace.to_markdown())
        assert not trace.of(Retry)
    assert any(t.of(Waiting) for t in traces.values())  # the panels said they were waiting


def test_without_the_setting_an_interrupted_mode_runs_again_once_the_others_finish():
    with StubLLMServer(responder=slow_toy, one_at_a_time=True) as srv:
        s = settings(srv)
        traces = compare(QUESTION, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)
    retried = [m for m, t in traces.items() if t.of(Retry)]
    assert retried, "the one-at-a-time server interrupted nobody?"
    for mode, trace in traces.items():
        assert trace.error is None and trace.answer, (mode, trace.to_markdown())
    for mode in retried:
        trace = traces[mode]
        errors = trace.of(LLMError)
        assert errors and errors[0].message == INTERRUPTED and errors[0].reason == "interrupted"
        assert trace.of(Retry)[0].message == RETRY_NOTE
        assert "empty answer" not in trace.to_markdown()


def test_modes_queued_past_llm_timeout_behind_the_others_run_again():
    """A server that queues requests silently (Ollama with one slot): the queued modes time out, then run again."""
    def steady_toy(body):  # no wait for the first token, then ~1 s of steady chunks: a queued call times out
        reply = toy_policy(body)
        reply.first_token_delay, reply.token_delay = 0.0, 0.1
        return reply

    with StubLLMServer(responder=steady_toy, serial=True) as srv:
        s = settings(srv, timeout_s=0.4)
        traces = compare(QUESTION, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)
    retried = [m for m, t in traces.items() if t.of(Retry)]
    assert retried
    for mode, trace in traces.items():
        assert trace.error is None and trace.answer, (mode, trace.to_markdown())
    for mode in retried:
        error = traces[mode].of(LLMError)[0]
        assert error.reason == "busy" and "LLM_MAX_CONCURRENT=1" in error.message
        assert traces[mode].of(Retry)[0].message == BUSY_NOTE


def test_a_hung_server_is_not_waited_for_twice():
    with StubLLMServer() as srv:
        srv.responder = lambda body: StubReply(hang=True)
        s = settings(srv, timeout_s=0.5)
        start = time.perf_counter()
        traces = compare(QUESTION, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)
    assert time.perf_counter() - start < 3 and len(srv.requests) == 3
    assert all(t.error and not t.of(Retry) for t in traces.values())


def test_one_mode_cut_off_by_another_request_gets_the_clear_line():
    """A single mode is not retried: the line says what probably happened and what to set."""
    with StubLLMServer(one_at_a_time=True) as srv:
        srv.script(StubReply(text="Thought: " + "slow words " * 60, token_delay=0.02), StubReply(text="other"))
        s = settings(srv)
        intruder = threading.Timer(0.3, lambda: list(HFInferenceModel(s).stream(HI)))
        intruder.start()
        trace = compare(QUESTION, ["think"], model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)["think"]
        intruder.join()
    assert trace.error == INTERRUPTED and trace.answer is None
    assert "LLM_MAX_CONCURRENT=1" in trace.error and not trace.of(Retry)


def test_stop_while_waiting_at_the_gate_ends_promptly():
    with StubLLMServer() as srv:
        srv.responder = lambda body: StubReply(hang=True)
        s = settings(srv, max_concurrent=1, timeout_s=30)
        holder, waiter = HFInferenceModel(s), HFInferenceModel(s)
        hold = threading.Thread(target=lambda: pytest.raises(LLMFailure, list, holder.stream(HI)), daemon=True)
        hold.start()
        while not srv.requests:
            time.sleep(0.01)
        chunks = waiter.stream(HI)
        assert next(chunks).waiting  # queued behind the hung call, and says so
        threading.Timer(0.3, waiter.close).start()
        start = time.perf_counter()
        with pytest.raises(LLMFailure) as info:
            next(chunks)
        assert str(info.value) == "the run was stopped" and time.perf_counter() - start < 1.5
        assert len(srv.requests) == 1  # the waiting call never reached the server
        holder.close()
        hold.join(2)
        assert not hold.is_alive()


def test_closing_a_comparison_waiting_at_the_gate_is_prompt():
    with StubLLMServer() as srv:
        srv.responder = lambda body: StubReply(hang=True)
        s = settings(srv, max_concurrent=1, timeout_s=30)
        run = ComparisonRun(QUESTION, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY).start()
        waiting = 0
        deadline = time.time() + 5
        while waiting < 2 and time.time() < deadline:
            item = run.poll(timeout=0.1)
            waiting += bool(item and isinstance(item[1], Waiting))
        while not srv.requests and time.time() < deadline:
            time.sleep(0.01)
        assert waiting == 2 and len(srv.requests) == 1
        start = time.perf_counter()
        run.close()
        assert time.perf_counter() - start < 1.0
        assert not [t for t in threading.enumerate() if t.name.startswith("mode-")]


def test_gate_is_first_come_first_served():
    gate, order = Gate(1), []
    assert gate.try_acquire() and not gate.try_acquire()

    def take(name: str) -> None:
        assert gate.acquire(lambda: False)
        order.append(name)
        gate.release()

    threads = []
    for name in "abc":
        threads.append(threading.Thread(target=take, args=(name,)))
        threads[-1].start()
        time.sleep(0.05)  # arrive in order
    gate.release()
    for t in threads:
        t.join(2)
    assert order == ["a", "b", "c"] and gate.in_flight == 0


def test_open_streams_know_when_another_one_came():
    streams = OpenStreams()
    first = streams.opened("s")
    assert not streams.crowded("s", first)
    second = streams.opened("s")
    streams.closed("s", second)
    assert streams.crowded("s", first)  # one arrived after ours, even if it is gone now
    assert streams.crowded("s", second)  # the first one is still open
    streams.closed("s", first)
    third = streams.opened("s")
    assert not streams.crowded("s", third) and not streams.crowded("other", first)
