"""Servers that serve one request at a time, and waiting for them, through the real client against the stub.

The stub's ``one_at_a_time`` mode does what llama-cpp-python's server does by default: a request that waits for
the model ends the reply in flight (``[DONE]`` without a ``finish_reason``, then the connection closes). The
app then sends that server one request at a time, and a mode's waits (the app's gate, the server's turn, a
back-off) are said as they happen and counted apart from its own time.
"""

from __future__ import annotations

import threading
import time

import pytest

from agents.agreement import agreement
from agents.comparison import BUSY_NOTE, HELD, ComparisonRun, compare
from agents.events import BACKOFF, QUEUE, TURN, FinalAnswer, LLMError, Retry, Thought, Waited, Waiting
from agents.llm.base import LLMFailure
from agents.llm.gate import Gate, OpenStreams, gate_for
from agents.llm.hf import INTERRUPTED, LEARNED, HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from agents.modes import RunConfig
from agents.modes.base import REPEATED_FAILURE
from agents.trace import metrics_line
from tools.calculator import calculate
from tools.registry import ToolRegistry
from ui.core.verdicts import comparison_table

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


def test_without_the_setting_an_interrupted_mode_waits_for_its_turn_and_the_app_goes_one_at_a_time():
    """Three modes sent together: the server closes the first replies; those modes wait for the server's turn
    (shown as waiting, never as an error) and, from the first interruption on, every request goes alone."""
    with StubLLMServer(responder=slow_toy, one_at_a_time=True) as srv:
        s = settings(srv)
        traces = compare(QUESTION, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)
        records = list(srv.requests)
    cut = [r for r in records if r.cut]
    assert cut, "the one-at-a-time server interrupted nobody?"
    first = min(r.finished for r in cut)
    later = [r for r in records if r.started > first]
    assert later and all(not (a.started < b.finished and b.started < a.finished)
                         for a in later for b in records if a is not b), "two requests overlapped after the first cut"
    waited = [m for m, t in traces.items() if any(w.cause == TURN for w in t.of(Waiting))]
    assert waited
    for mode, trace in traces.items():
        assert trace.error is None and trace.answer, (mode, trace.to_markdown())
        assert not trace.of(LLMError) and not trace.of(Retry), (mode, trace.to_markdown())
    assert traces["act"].answer == traces["react"].answer == "396"
    assert sum(w.learned for t in traces.values() for w in t.of(Waiting)) == 1  # learned, and said, once
    assert gate_for(s.server_key(), None).one_at_a_time


def test_the_waiting_time_is_split_from_the_modes_own_time_exactly():
    """Two one-call modes on a one-at-a-time server with known delays: the one whose reply was closed waits exactly
    as long as the server took to serve the other, and that time is its waiting, not its own."""
    def answer(body):
        return StubReply(text="Final Answer: 396", first_token_delay=0.8, token_delay=0.05)

    with StubLLMServer(responder=answer, one_at_a_time=True) as srv:
        s = settings(srv)
        traces = compare(QUESTION, ["act", "react"], model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)
        records = list(srv.requests)
    cut = [r for r in records if r.cut]
    assert len(cut) == 1 and len(records) == 3
    served_first = next(r for r in records if not r.cut and r.started < cut[0].finished)
    waiter = next(m for m, t in traces.items() if t.of(Waiting))
    other = next(m for m in traces if m != waiter)
    expected = served_first.finished - cut[0].finished  # the server's turn for the other mode, as it measured it
    assert expected > 0.8
    assert abs(traces[waiter].waiting_s - expected) < 0.15, (traces[waiter].waiting_s, expected)
    assert traces[other].waiting_s == 0
    assert abs(traces[waiter].own_s - (traces[waiter].elapsed_s - traces[waiter].waiting_s)) < 1e-9
    assert traces[waiter].own_s < traces[waiter].elapsed_s - 0.8  # its own time leaves the wait out
    assert f"{traces[waiter].waiting_s:.1f} s of it waiting for the model server" in metrics_line(traces[waiter])
    assert "waiting" not in metrics_line(traces[other])
    assert all(t.answer == "396" and t.error is None for t in traces.values())


def test_a_back_off_before_a_retry_is_waiting_said_with_its_seconds():
    with StubLLMServer() as srv:
        srv.script(StubReply(status=503, headers={"Retry-After": "1"}), "Final Answer: 396")
        s = settings(srv)
        model = HFInferenceModel(s)
        trace = compare(QUESTION, ["think"], model_factory=lambda: model, registry=REGISTRY)["think"]
    waits = trace.of(Waiting)
    assert [w.cause for w in waits] == [BACKOFF] and waits[0].seconds == 1.0
    assert waits[0].message == "waiting for the model server: retry 2 in 1.0 s (it answered HTTP 503)"
    assert abs(trace.waiting_s - 1.0) < 0.1 and trace.answer == "396" and trace.error is None
    assert trace.of(Waited)[0].cause == BACKOFF


def test_a_call_queued_at_the_apps_own_gate_waits_the_other_calls_time():
    def answer(body):
        return StubReply(text="Final Answer: 396", first_token_delay=0.6)

    with StubLLMServer(responder=answer) as srv:
        s = settings(srv, max_concurrent=1)
        traces = compare(QUESTION, ["act", "react"], model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)
    waiter = next(m for m, t in traces.items() if t.of(Waiting))
    assert [w.cause for w in traces[waiter].of(Waiting)] == [QUEUE]
    assert "LLM_MAX_CONCURRENT=1" in traces[waiter].of(Waiting)[0].message
    assert 0.5 < traces[waiter].waiting_s < 1.0 and traces[waiter].own_s < traces[waiter].elapsed_s - 0.5


def test_modes_queued_past_llm_timeout_behind_the_others_wait_and_run_again():
    """A server that queues requests silently (Ollama with one slot): the queued modes time out; they say they
    wait to run again (no error shown meanwhile), then run again."""
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
        trace = traces[mode]
        held = [w for w in trace.of(Waiting) if w.rerun]
        assert held and held[0].reason == "busy" and held[0].message == HELD["busy"]
        assert not trace.of(LLMError)  # the error that a retry followed is never shown
        assert trace.of(Retry)[0].message == BUSY_NOTE and trace.waiting_s > 0


def test_a_hung_server_is_not_waited_for_twice():
    with StubLLMServer() as srv:
        srv.responder = lambda body: StubReply(hang=True)
        s = settings(srv, timeout_s=0.5)
        start = time.perf_counter()
        traces = compare(QUESTION, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)
    assert time.perf_counter() - start < 3 and len(srv.requests) == 3
    assert all(t.error and not t.of(Retry) for t in traces.values())


def test_one_mode_cut_off_by_another_request_of_ours_waits_for_its_turn():
    with StubLLMServer(one_at_a_time=True) as srv:
        srv.script(StubReply(text="Thought: " + "slow words " * 60, token_delay=0.02), StubReply(text="other"),
                   StubReply(text="Final Answer: 396"))
        s = settings(srv)
        intruder = threading.Timer(0.3, lambda: list(HFInferenceModel(s).stream(HI)))
        intruder.start()
        trace = compare(QUESTION, ["think"], model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)["think"]
        intruder.join()
    assert trace.answer == "396" and trace.error is None
    wait = trace.of(Waiting)[0]
    assert wait.learned and wait.cause == TURN and wait.message.startswith(LEARNED)
    assert "slow words" not in "".join(e.text for e in trace.of(Thought))  # the closed reply is not the reply


def test_with_llm_max_concurrent_0_a_mode_cut_off_gets_the_clear_line():
    """The owner chose no limit: nothing is learned, and a single mode is not retried: the line says what probably
    happened and what to set."""
    with StubLLMServer(one_at_a_time=True) as srv:
        srv.script(StubReply(text="Thought: " + "slow words " * 60, token_delay=0.02), StubReply(text="other"))
        s = settings(srv, max_concurrent=0)
        intruder = threading.Timer(0.3, lambda: list(HFInferenceModel(s).stream(HI)))
        intruder.start()
        trace = compare(QUESTION, ["think"], model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)["think"]
        intruder.join()
    assert trace.error == INTERRUPTED and trace.answer is None
    assert "LLM_MAX_CONCURRENT=1" in trace.error and not trace.of(Retry) and not trace.of(Waiting)


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


def test_a_model_that_repeats_its_unreadable_reply_is_forced_not_reprompted_again_and_no_agreement_is_claimed():
    """The teacher's run on a small model, on a one-at-a-time server: each mode writes the same reply that fits no
    format; it is re-prompted at most twice (here once), then forced; three forced, identical, wrong answers are
    said to be that, never "All answers agree"."""
    def rambler(body):
        last = str(body["messages"][-1].get("content") or "")
        text = "Final Answer: 409" if "no steps left" in last else "409"
        return StubReply(text=text, first_token_delay=0.2, token_delay=0.01)

    with StubLLMServer(responder=rambler, one_at_a_time=True) as srv:
        s = settings(srv)
        traces = compare(QUESTION, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY,
                         config=RunConfig(max_steps=5))
        bodies = [r.body for r in srv.requests if not r.cut]
    for mode in ("act", "react"):
        trace = traces[mode]
        assert trace.parse_errors <= 2 and trace.llm_calls == 3, trace.to_markdown()  # reply, again, the forced ask
        answer = trace.of(FinalAnswer)[-1]
        assert answer.forced and answer.why == REPEATED_FAILURE and answer.text == "409"
        assert REPEATED_FAILURE in trace.to_markdown()
    reprompts = [b for b in bodies if "Reply in exactly this format" in str(b["messages"][-1].get("content"))]
    assert len(reprompts) <= 4  # at most twice for each of the two tool modes
    assert all(t.answer == "409" and t.forced for t in traces.values())
    line = agreement(traces, {m: False for m in traces})
    assert line == "✗ All three forced to the same wrong answer." and "agree" not in line
    table = comparison_table(traces, "396")
    assert "All three forced to the same wrong answer" in table and "0 of 3 right" in table
    assert "All answers agree" not in table


def test_a_request_queued_in_the_server_behind_our_others_waits_its_turn_without_timing_out():
    """Sent together, the third request waits in the server while the first two are served and closed: longer
    than LLM_TIMEOUT, but the server is busy with our calls, not silent, so it is not cut (as the real server
    showed, where the third timed out for good)."""
    def prompt_eval(body):
        reply = toy_policy(body)
        reply.first_token_delay, reply.token_delay = 0.5, 0.01
        return reply

    with StubLLMServer(responder=prompt_eval, one_at_a_time=True) as srv:
        list(HFInferenceModel(settings(srv, max_concurrent=0)).stream(HI))  # the process's client made (seconds)
        s = settings(srv, timeout_s=0.8)
        traces = compare(QUESTION, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY)
        first_chunks = sorted(r.first_byte - r.started for r in srv.requests[1:] if r.first_byte)
    assert first_chunks[-1] > 0.8  # some request waited longer than LLM_TIMEOUT for its first chunk
    for mode, trace in traces.items():
        assert trace.answer and trace.error is None and not trace.of(Retry), (mode, trace.to_markdown())
