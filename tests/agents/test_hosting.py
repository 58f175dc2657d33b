"""Hosted live runs (agents/hosting/) behave like ComparisonRuns, in a worker process and in the app's process.

The same behaviour cases run against the three ways: a plain ComparisonRun, a run hosted in this process
(LocalHost) and one in a worker process (ProcessHost), each with the real InferenceClient talking to the stub
server on 127.0.0.1 over real HTTP. Plus what only a worker can do: die (its runs end with one clear line, a
new worker takes the next run) and outlive nothing (no stray processes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agents import hosting
from agents.comparison import ComparisonRun
from agents.events import TURN, Action, LLMError, Retry, TokenDelta, Waiting, event_to_dict
from agents.hosting import WORKER_DIED, HostedRun, make_fork, make_run
from agents.hosting.host import LocalHost
from agents.hosting.processes import ProcessHost
from agents.hosting.worker import CLOSED, RunSpec, coalesce
from agents.llm.gate import one_at_a_time
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from agents.modes import RunConfig
from agents.prompts import system_prompt
from agents.request import RunRequest
from agents.trace import Trace
from settings import SettingError
from tools.calculator import calculate
from tools.registry import ToolRegistry, tool

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What is 17 * 23 + 5?"
REGISTRY = ToolRegistry([calculate])  # the default registry's own calculator: a worker imports it by reference
KINDS = ["thread", "local", "process"]
THINK = RunRequest(QUESTION, ("think",))


@pytest.fixture(scope="module")
def host():
    pool = ProcessHost(1).start()
    yield pool
    pool.stop()


def spec(s: LLMSettings, modes=("think", "act", "react"), config=None, stepping=False) -> RunSpec:
    c = config or RunConfig()
    request = RunRequest(QUESTION, tuple(modes), c.protocol, c.max_steps, c.temperature, c.max_tokens,
                         stepping=stepping)
    return RunSpec(request, s, tools=(("tools.calculator", "calculate"),))


def settings(srv: StubLLMServer, **kw) -> LLMSettings:
    return LLMSettings(base_url=srv.url, model="stub", timeout_s=kw.pop("timeout_s", 10), **kw)


def new_run(kind: str, host: ProcessHost, s: LLMSettings, modes=("think", "act", "react"), config=None):
    if kind == "thread":
        return ComparisonRun(QUESTION, modes, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY,
                             config=config)
    return HostedRun(spec(s, modes, config), host if kind == "process" else LocalHost())


def run_to_end(run, timeout: float = 30.0) -> dict[str, Trace]:
    traces = {m: Trace(m, QUESTION) for m in run.modes}
    run.start()
    deadline = time.monotonic() + timeout
    try:
        while not run.done and time.monotonic() < deadline:
            item = run.poll(timeout=0.5)
            if item is not None:
                traces[item[0]].add(item[1])
    finally:
        run.close()
    assert run.done, "the run did not end"
    return traces


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_every_mode_answers_with_its_events_in_order(kind, protocol, host):
    with StubLLMServer() as srv:
        traces = run_to_end(new_run(kind, host, settings(srv), config=RunConfig(protocol=protocol)))
    for mode in ("act", "react"):
        trace = traces[mode]
        assert trace.error is None and "396" in (trace.answer or ""), trace.to_markdown()
        assert [s.action for s in trace.steps] == ["calculate"] and trace.steps[0].observation == "396"
        kinds = [e.kind for _, e in trace.events]
        assert kinds.index("action") < kinds.index("observation") < kinds.index("answer")  # in order, per mode
    assert traces["think"].answer and traces["think"].tool_calls == 0


@pytest.mark.parametrize("kind", KINDS)
def test_close_from_another_thread_ends_a_hung_servers_requests_within_a_second(kind, host):
    with StubLLMServer() as srv:
        srv.responder = lambda body: StubReply(hang=True)
        run = new_run(kind, host, settings(srv, timeout_s=30)).start()
        deadline = time.monotonic() + 10
        while len(srv.requests) < 3 and time.monotonic() < deadline:
            assert run.poll(timeout=0.05) is None or not run.done
        assert len(srv.requests) == 3
        closer = threading.Thread(target=run.close)
        start = time.perf_counter()
        closer.start()
        closer.join(5)
        assert time.perf_counter() - start < 1.0
        if kind != "thread":
            assert run.closed_in_worker  # the worker joined the run's threads: their reads were aborted
        if kind != "process":
            assert not [t for t in threading.enumerate() if t.name.startswith("mode-")]


@pytest.mark.parametrize("kind", KINDS)
def test_close_ends_a_streaming_reply_at_once(kind, host):
    with StubLLMServer(token_delay=0.05) as srv:
        srv.responder = lambda body: StubReply(text="Thought: " + "slow words " * 200)
        run = new_run(kind, host, settings(srv), modes=("think",)).start()
        while (item := run.poll(timeout=5)) is not None and not isinstance(item[1], TokenDelta):
            pass
        assert item is not None
        run.close()
        deadline = time.monotonic() + 1.0
        while srv.requests[0].finished is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert srv.requests[0].finished is not None  # the server saw the stream closed (10 s of reply left)


@pytest.mark.parametrize("kind", KINDS)
def test_a_failing_mode_leaves_the_others_running(kind, host):
    think_prompt = system_prompt("think", REGISTRY, max_steps=5)

    def responder(body):
        if body["messages"][0]["content"] == think_prompt:
            return StubReply(status=400, error_body="bad request for think")
        return toy_policy(body)

    with StubLLMServer(responder=responder) as srv:
        traces = run_to_end(new_run(kind, host, settings(srv)))
    assert traces["think"].error and traces["think"].answer is None
    assert all(traces[m].error is None and "396" in traces[m].answer for m in ("act", "react"))


@pytest.mark.parametrize("kind", KINDS)
def test_an_interrupted_mode_waits_for_its_turn_wherever_the_run_is_hosted(kind, host):
    def slow_toy(body):
        reply = toy_policy(body)
        reply.first_token_delay, reply.token_delay = 0.3, 0.02
        return reply

    with StubLLMServer(responder=slow_toy, one_at_a_time=True) as srv:
        traces = run_to_end(new_run(kind, host, settings(srv)), timeout=60)
        assert any(r.cut for r in srv.requests), "the one-at-a-time server interrupted nobody?"
    waited = [m for m, t in traces.items() if any(w.cause == TURN for w in t.of(Waiting))]
    assert waited and sum(w.learned for t in traces.values() for w in t.of(Waiting)) == 1
    for mode, trace in traces.items():
        assert trace.error is None and trace.answer and not trace.of(Retry), (mode, trace.to_markdown())


def test_what_a_worker_learned_about_a_server_keeps_the_next_runs_in_the_apps_process(monkeypatch):
    """The app hears from a run's events that a server serves one request at a time; the next runs to it then stay
    in the app's process, where one gate sends it one request at a time for every visitor."""
    s = LLMSettings(base_url="http://127.0.0.1:9/v1", model="stub")
    monkeypatch.setenv(hosting.ENV, "1")
    process, local = hosting.default_host(), hosting.local_host()
    first = make_run(THINK, s, REGISTRY)
    assert first.host is process
    first.deliver([("think", Waiting("the server closed this reply", TURN, learned=True))])
    assert one_at_a_time(s.server_key()) and make_run(THINK, s, REGISTRY).host is local
    unlimited = LLMSettings(base_url="http://127.0.0.1:9/v1", model="stub", max_concurrent=0)
    assert make_run(THINK, unlimited, REGISTRY).host is process  # the owner's LLM_MAX_CONCURRENT=0 is not gated


def test_a_worker_that_dies_ends_its_runs_with_one_clear_line_and_is_replaced():
    pool = ProcessHost(1).start()
    try:
        with StubLLMServer(token_delay=0.05) as srv:
            srv.responder = lambda body: StubReply(text="Thought: " + "slow words " * 200)
            run = HostedRun(spec(settings(srv)), pool).start()
            assert run.poll(timeout=10) is not None  # streaming
            [pid] = pool.pids()
            os.kill(pid, signal.SIGKILL)
            events = []
            deadline = time.monotonic() + 5
            while not run.done and time.monotonic() < deadline:
                if (item := run.poll(timeout=0.5)) is not None:
                    events.append(item)
            assert run.done
            errors = [(m, e) for m, e in events if isinstance(e, LLMError)]
            assert sorted(m for m, _ in errors) == ["act", "react", "think"]
            assert all(e.message == WORKER_DIED for _, e in errors)
            run.close()  # nothing left to close: returns at once
            srv.responder = toy_policy
            traces = run_to_end(HostedRun(spec(settings(srv)), pool))
            assert all(t.answer for t in traces.values())
            assert pool.pids() and pool.pids()[0] != pid
    finally:
        pool.stop()


def test_stopping_the_pool_leaves_no_process_or_thread():
    before = set(threading.enumerate())
    pool = ProcessHost(2).start()
    pids = pool.pids()
    assert len(pids) == 2
    pool.stop()
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped: not even a zombie is left
    assert not set(threading.enumerate()) - before


def test_the_worker_exits_when_the_app_process_dies():
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from agents.hosting.processes import ProcessHost\n"
            "print(ProcessHost(1).start().pids()[0], flush=True)\n"
            "import os; os._exit(0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_make_run_sends_to_a_worker_every_run_that_can_travel(monkeypatch):
    s = LLMSettings(base_url="http://127.0.0.1:9/v1", model="stub")

    @tool
    def fake(x: str) -> str:
        """A test's own tool, made inside a function: no other process can import it."""
        return x

    monkeypatch.setenv(hosting.ENV, "1")
    process, local = hosting.default_host(), hosting.local_host()
    assert make_run(THINK, s, REGISTRY).host is process
    assert make_run(RunRequest(QUESTION, ("think",), stepping=True), s, REGISTRY).host is process
    assert make_run(THINK, s, ToolRegistry([calculate, fake])).host is local
    assert make_run(THINK, s, REGISTRY, HFInferenceModel).host is local
    gated = LLMSettings(base_url="http://127.0.0.1:9/v1", model="stub", max_concurrent=1)
    assert make_run(THINK, gated, REGISTRY).host is local  # one gate in this process
    monkeypatch.setenv(hosting.ENV, "0")
    assert make_run(THINK, s, REGISTRY).host is local
    with pytest.raises(ValueError, match="unknown mode"):
        make_run(RunRequest(QUESTION, ("nope",)), s, REGISTRY)


@pytest.mark.parametrize(("raw", "expected"), [("", hosting.DEFAULT_WORKERS), ("0", 0), ("1", 1), ("2", 2), ("8", 8)])
def test_workers_from_env(raw, expected):
    assert hosting.workers_from_env({hosting.ENV: raw}) == expected


@pytest.mark.parametrize("raw", ["99", "-1", "many"])
def test_a_bad_worker_count_is_one_line(raw):
    with pytest.raises(SettingError, match=r"^APP_RUN_WORKERS must be an integer from 0 to 8, got"):
        hosting.workers_from_env({hosting.ENV: raw})


def test_coalesce_joins_the_tokens_of_one_mode_and_channel_keeping_each_modes_order():
    a = Action("calculate", "1+1")
    batch = [(1, "think", TokenDelta("a")), (1, "think", TokenDelta("b")), (1, "act", TokenDelta("c")),
             (1, "think", TokenDelta("d")), (1, "think", TokenDelta("e", "answer")), (2, "think", TokenDelta("f")),
             (1, "act", a), (1, "act", TokenDelta("g")), (1, "act", None)]
    assert coalesce(batch) == [(1, "think", TokenDelta("abd")), (1, "act", TokenDelta("c")),
                               (1, "think", TokenDelta("e", "answer")), (2, "think", TokenDelta("f")), (1, "act", a),
                               (1, "act", TokenDelta("g")), (1, "act", None)]


def test_event_to_dict_copies_containers():
    action = Action("calculate", {"expression": [1, 2]}, "why")
    data = event_to_dict(action)
    assert data == {"kind": "action", "tool": "calculate", "input": {"expression": [1, 2]}, "thought": "why"}
    data["input"]["expression"].append(3)
    assert action.input == {"expression": [1, 2]}


def test_a_run_closed_before_it_started_never_reaches_the_worker(host):
    run = HostedRun(spec(LLMSettings(base_url="http://127.0.0.1:9/v1")), host)
    run.close()
    run.start()
    assert run.poll(timeout=1) is None and run.done and host.active_runs() == 0


def test_a_thread_that_finds_the_abortable_client_installed_really_gets_it(monkeypatch):
    """A fresh worker's first run: three mode threads install the abortable backend at once. One that comes
    second must not go on before the first has set the factory, or its hung read could not be aborted."""
    from agents.llm import abort

    set_factories: list = []

    def slow_set(factory) -> None:
        time.sleep(0.3)
        set_factories.append(factory)

    monkeypatch.setattr(abort, "_installed", False)
    monkeypatch.setattr(abort.hf_http, "set_client_factory", slow_set)
    first = threading.Thread(target=abort.install)
    first.start()
    time.sleep(0.05)
    abort.install()  # the second caller returns only once the factory is in place
    assert set_factories == [abort._client_factory]
    first.join()


def test_a_close_acknowledged_in_a_later_batch_than_the_runs_end_is_not_lost():
    """The modes' ends and the worker's "closed" may arrive in two batches: close() must not wait 3 s for it."""
    host = LocalHost()
    run = HostedRun(spec(LLMSettings(base_url="http://127.0.0.1:9/v1"), ("think",)), host)
    host._register(run, None)
    host.route([(run.run_id, "think", None)])
    host.route([(run.run_id, "", CLOSED)])
    assert run.closed_in_worker and host.active_runs() == 0


@pytest.mark.parametrize("kind", ["local", "process"])
def test_a_stepping_run_pauses_in_its_host_and_one_step_is_granted_per_pause(kind, host):
    with StubLLMServer() as srv:
        srv.script(*(f"Thought: once more.\nAction: calculate\nAction Input: {n} + 1" for n in (1, 2)))
        run = HostedRun(spec(settings(srv), ("react",), stepping=True), host if kind == "process" else LocalHost())
        run.start()
        seen: list = []

        def until_waiting() -> None:
            deadline = time.monotonic() + 10
            while not run.waiting_for_step and time.monotonic() < deadline:
                if (item := run.poll(timeout=0.05)) is not None:
                    seen.append(item[1])
            assert run.waiting_for_step and run.paused == ["react"]

        until_waiting()
        requests = len(srv.requests)
        run.step()
        run.step()  # a double click: the second finds no pause to end
        assert not run.waiting_for_step
        until_waiting()  # paused again: the double click did not grant a second step
        assert len(srv.requests) == requests + 1  # one more model call, not two
        run.resume()
        while not run.done:
            if (item := run.poll(timeout=1)) is not None:
                seen.append(item[1])
        run.close()
    trace = Trace("react", QUESTION)
    for event in seen:
        trace.add(event)
    assert [s.observation for s in trace.steps] == ["2", "3"] and trace.answer == "3"  # the toy answers its last result
    assert [e.kind for e in seen].count("paused") == 2 and len(srv.requests) == 3


def test_a_fork_runs_in_a_worker_from_the_original_trace(host, monkeypatch):
    monkeypatch.setenv(hosting.ENV, "1")
    with StubLLMServer() as srv:
        original = run_to_end(new_run("thread", host, settings(srv), modes=("react",)))["react"]
        fork = make_fork(original, 0, "400", settings(srv), REGISTRY, RunConfig())
        assert fork.host is hosting.default_host()
        traces = run_to_end(fork)
    assert traces["react"].steps[0].observation == "400" and "400" in (traces["react"].answer or "")
    with pytest.raises(ValueError, match="no observation 9"):
        make_fork(original, 8, "x", settings(srv), REGISTRY, RunConfig())


@pytest.mark.parametrize("kind", ["local", "process"])
def test_a_hosted_run_tells_its_news_urgent_at_each_modes_first_event_and_end(kind, host):
    """The stream adapter sleeps until told (ui/core/stream.py): every delivery says so, and a mode's first
    event and its end say it is urgent."""
    told: list[bool] = []
    with StubLLMServer() as srv:
        run = new_run(kind, host, settings(srv))
        run.on_news(told.append)
        traces = run_to_end(run)
    assert all(trace.answer for trace in traces.values())
    assert told[0] is True and told[-1] is True  # the first delivery holds first events, the last an end


def test_a_submit_is_quick_only_while_every_worker_runs():
    """The event loop hands a run over itself only when that is a write to a running worker's pipe."""
    pool = ProcessHost(1)
    assert not pool.quick_submit  # no worker yet: a submit would start one
    pool.start()
    try:
        assert pool.quick_submit and not LocalHost().quick_submit  # a LocalHost starts threads
        with StubLLMServer() as srv:
            assert HostedRun(spec(settings(srv)), pool).quick_start
    finally:
        pool.stop()
    assert not pool.quick_submit


def test_a_failing_news_listener_does_not_stop_the_delivery(caplog):
    """A listener's fault (e.g. its event loop closed) is logged; the events still reach the run, and the host's
    routing thread (every other run's events) goes on."""
    with StubLLMServer() as srv:
        run = HostedRun(spec(settings(srv), modes=("think",)), LocalHost())

    def broken(urgent: bool) -> None:
        raise RuntimeError("Event loop is closed")

    run.on_news(broken)
    run.deliver([("think", TokenDelta("hi", "text"))])
    assert run.poll(timeout=0) == ("think", TokenDelta("hi", "text"))
    assert "news listener failed" in caplog.text
