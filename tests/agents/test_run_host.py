"""Live runs in a worker process (agents/run_host.py) behave like in-process ComparisonRuns.

The same behaviour cases run against both kinds: the real InferenceClient in the worker, talking
to the stub server on 127.0.0.1 over real HTTP. Plus what only a worker can do: die (its runs end
with one clear line, a new worker takes the next run) and outlive nothing (no stray processes).
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

from agents import run_host
from agents.comparison import RETRY_NOTE, ComparisonRun
from agents.events import Action, LLMError, Retry, TokenDelta, event_to_dict
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from agents.modes import RunConfig
from agents.prompts import system_prompt
from agents.run_host import WORKER_DIED, ProcessRun, RunHost, make_run
from agents.run_worker import merged
from agents.settings import SettingError
from agents.trace import Trace
from tools.calculator import calculate
from tools.registry import ToolRegistry, tool

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What is 17 * 23 + 5?"
REGISTRY = ToolRegistry([calculate])  # the default registry's own calculator: a worker can rebuild it by name
KINDS = ["thread", "process"]


@pytest.fixture(scope="module")
def host():
    pool = RunHost(1).start()
    yield pool
    pool.stop()


def settings(srv: StubLLMServer, **kw) -> LLMSettings:
    return LLMSettings(base_url=srv.url, model="stub", timeout_s=kw.pop("timeout_s", 10), **kw)


def new_run(kind: str, host: RunHost, s: LLMSettings, modes=("think", "act", "react"), config=None):
    if kind == "thread":
        return ComparisonRun(QUESTION, modes, model_factory=lambda: HFInferenceModel(s), registry=REGISTRY,
                             config=config)
    return ProcessRun(QUESTION, modes, settings=s, tools=REGISTRY.names, config=config, host=host)


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
        if kind == "process":
            assert run.closed_in_worker  # the worker joined the run's threads: their reads were aborted
        else:
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
def test_an_interrupted_mode_runs_again_once_the_others_finish(kind, host):
    def slow_toy(body):
        reply = toy_policy(body)
        reply.first_token_delay, reply.token_delay = 0.3, 0.02
        return reply

    with StubLLMServer(responder=slow_toy, one_at_a_time=True) as srv:
        traces = run_to_end(new_run(kind, host, settings(srv)), timeout=60)
    retried = [m for m, t in traces.items() if t.of(Retry)]
    assert retried, "the one-at-a-time server interrupted nobody?"
    for mode, trace in traces.items():
        assert trace.error is None and trace.answer, (mode, trace.to_markdown())
    assert all(traces[m].of(Retry)[0].message == RETRY_NOTE for m in retried)


def test_a_worker_that_dies_ends_its_runs_with_one_clear_line_and_is_replaced():
    pool = RunHost(1).start()
    try:
        with StubLLMServer(token_delay=0.05) as srv:
            srv.responder = lambda body: StubReply(text="Thought: " + "slow words " * 200)
            run = ProcessRun(QUESTION, settings=settings(srv), tools=["calculate"], host=pool).start()
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
            traces = run_to_end(ProcessRun(QUESTION, settings=settings(srv), tools=["calculate"], host=pool))
            assert all(t.answer for t in traces.values())
            assert pool.pids() and pool.pids()[0] != pid
    finally:
        pool.stop()


def test_stopping_the_pool_leaves_no_process_or_thread():
    before = set(threading.enumerate())
    pool = RunHost(2).start()
    pids = pool.pids()
    assert len(pids) == 2
    pool.stop()
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped: not even a zombie is left
    assert not set(threading.enumerate()) - before


def test_the_worker_exits_when_the_app_process_dies():
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from agents.run_host import RunHost\n"
            "print(RunHost(1).start().pids()[0], flush=True)\n"
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


def test_make_run_uses_a_worker_only_for_runs_built_from_defaults(monkeypatch):
    s = LLMSettings(base_url="http://127.0.0.1:9/v1", model="stub")

    @tool
    def fake(x: str) -> str:
        """A test's own tool."""
        return x

    monkeypatch.setenv(run_host.ENV, "1")
    assert isinstance(make_run(QUESTION, ["think"], s, REGISTRY, RunConfig()), ProcessRun)
    assert isinstance(make_run(QUESTION, ["think"], s, ToolRegistry([calculate, fake]), RunConfig()), ComparisonRun)
    assert isinstance(make_run(QUESTION, ["think"], s, REGISTRY, RunConfig(), HFInferenceModel), ComparisonRun)
    stepping = make_run(QUESTION, ["think"], s, REGISTRY, RunConfig(), stepping=True)  # step control is in-process
    assert isinstance(stepping, ComparisonRun) and stepping._gates["think"].allowed == 1
    monkeypatch.setenv(run_host.ENV, "0")
    assert isinstance(make_run(QUESTION, ["think"], s, REGISTRY, RunConfig()), ComparisonRun)


@pytest.mark.parametrize(("raw", "expected"), [("", run_host.DEFAULT_WORKERS), ("0", 0), ("1", 1), ("2", 2), ("8", 8)])
def test_workers_from_env(raw, expected):
    assert run_host.workers_from_env({run_host.ENV: raw}) == expected


@pytest.mark.parametrize("raw", ["99", "-1", "many"])
def test_a_bad_worker_count_is_one_line(raw):
    with pytest.raises(SettingError, match=r"^APP_RUN_WORKERS must be an integer from 0 to 8, got"):
        run_host.workers_from_env({run_host.ENV: raw})


def test_merged_joins_consecutive_tokens_of_one_mode_and_channel_only():
    a = Action("calculate", "1+1")
    batch = [(1, "think", TokenDelta("a")), (1, "think", TokenDelta("b")), (1, "act", TokenDelta("c")),
             (1, "think", TokenDelta("d")), (1, "think", TokenDelta("e", "answer")), (2, "think", TokenDelta("f")),
             (1, "act", a), (1, "act", TokenDelta("g")), (1, "act", None)]
    assert merged(batch) == [(1, "think", TokenDelta("ab")), (1, "act", TokenDelta("c")), (1, "think", TokenDelta("d")),
                             (1, "think", TokenDelta("e", "answer")), (2, "think", TokenDelta("f")), (1, "act", a),
                             (1, "act", TokenDelta("g")), (1, "act", None)]


def test_event_to_dict_copies_containers():
    action = Action("calculate", {"expression": [1, 2]}, "why")
    data = event_to_dict(action)
    assert data == {"kind": "action", "tool": "calculate", "input": {"expression": [1, 2]}, "thought": "why"}
    data["input"]["expression"].append(3)
    assert action.input == {"expression": [1, 2]}


def test_a_run_closed_before_it_started_never_reaches_the_worker(host):
    run = ProcessRun(QUESTION, settings=LLMSettings(base_url="http://127.0.0.1:9/v1"), tools=["calculate"], host=host)
    run.close()
    run.start()
    assert run.poll(timeout=1) is None and run.done and host.active_runs() == 0


def test_a_thread_that_finds_the_abortable_client_installed_really_gets_it(monkeypatch):
    """A fresh worker's first run: three mode threads install the abortable backend at once. One that came
    second used to go on before the first had set the factory, and its hung read could not be aborted."""
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


def test_a_close_acknowledged_in_a_later_batch_than_the_runs_end_is_not_lost(host):
    """The modes' ends and the worker's "closed" may arrive in two batches: close() must not wait 3 s for it."""
    from types import SimpleNamespace

    run = ProcessRun(QUESTION, ["think"], settings=LLMSettings(base_url="http://127.0.0.1:9/v1"), host=host)
    run.run_id = 999_999
    worker = SimpleNamespace(lock=threading.Lock(), runs={run.run_id: run})
    run_host._Worker._route(worker, run.run_id, [("think", None)])  # type: ignore[arg-type]
    run_host._Worker._route(worker, run.run_id, [("", run_host.CLOSED)])  # type: ignore[arg-type]
    assert run.closed_in_worker and worker.runs == {}
