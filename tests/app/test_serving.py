"""What keeps one app process responsive for a classroom: no thread starts or sys.path scans on the
event loop, and an HTTP pool big enough for every stream."""

from __future__ import annotations

import importlib.util
import sys
import threading

import pytest

import app
from agents.llm import abort
from agents.llm.settings import LLMSettings
from ui.launcher import Launcher


def test_the_launcher_runs_targets_in_their_own_named_threads():
    ran: list[str] = []
    done = threading.Event()

    def target() -> None:
        ran.append(threading.current_thread().name)
        done.set()

    Launcher().start(target, "run-pump")
    assert done.wait(5) and ran == ["run-pump"]


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is not None, reason="matplotlib is installed here")
def test_gradio_s_matplotlib_probe_fails_fast_when_matplotlib_is_absent(monkeypatch):
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    app.skip_matplotlib_probe()
    assert sys.modules["matplotlib"] is None
    with pytest.raises(ImportError):
        import matplotlib  # noqa: F401 - Gradio does exactly this on every handler call


def test_gradio_s_queue_sends_estimates_on_a_clock_not_to_every_queued_event_at_every_start(kit):
    """With ``status_update_rate="auto"`` each event start told every queued event its estimate: in a flood of 300
    that was O(n²) messages on the event loop, and the last visitor heard its first word after ~10 s."""
    demo = app.build_demo(settings=LLMSettings(model="stub", base_url="http://127.0.0.1:9/v1"), registry=kit.registry())
    assert demo._queue.live_updates is False and demo._queue.update_intervals == 1.0


def test_the_shared_model_client_has_room_for_fifty_visitors_streams():
    client = abort._client_factory()
    try:
        pool = client._transport._pool
        assert pool._max_connections >= 50 * 3 and pool._max_keepalive_connections >= 100
        assert isinstance(pool._network_backend, abort._Backend)  # Stop can still abort a waiting read
    finally:
        client.close()


def test_login_checks_run_on_the_event_loop_and_still_refuse_strangers(kit):
    import inspect
    import json
    import urllib.error
    import urllib.request

    demo = app.build_demo(settings=kit.settings(_NoServer()), registry=kit.registry())
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, auth=("teacher", "secret"),
                **app.launch_kwargs())
    try:
        overrides = list(demo.server_app.dependency_overrides.items())
        assert [k.__name__ for k, _ in overrides] == ["login_check"]
        assert inspect.iscoroutinefunction(overrides[0][1])
        body = json.dumps({"data": ["What is 2 + 2?", "Think"]}).encode()
        request = urllib.request.Request(f"{demo.local_url}gradio_api/call/compare", data=body,
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401
    finally:
        demo.close()


class _NoServer:
    url = "http://127.0.0.1:9/v1"  # never called: the request is refused before any run


def test_live_runs_stream_from_the_worker_process_and_stop_reaches_it(kit, monkeypatch):
    """With APP_RUN_WORKERS on, no mode thread runs in the app's process; Stop closes the worker's run."""
    import time

    from gradio_client import Client

    from agents import run_host
    from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy

    monkeypatch.setenv(run_host.ENV, "1")
    host = run_host.default_host()
    with StubLLMServer(responder=toy_policy) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
        with kit.launched(demo) as url:
            client = Client(url, verbose=False)
            result = client.predict(question="What is 17 * 23 + 5?", mode="All", api_name="/compare")
            assert all("Final answer" in str(panel) for panel in result[:3]) and "396" in str(result[2])
            assert host.pids(), "the app started no worker"
            stub.responder = lambda body: StubReply(hang=True)
            job = client.submit(question="What is 2 + 2?", mode="All", api_name="/compare")
            deadline = time.monotonic() + 15
            while host.active_runs() == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert host.active_runs() == 1
            assert not [t for t in threading.enumerate() if t.name.startswith("mode-")]  # they are in the worker
            job.cancel()
            stopped = time.monotonic()
            while host.active_runs() and time.monotonic() - stopped < 5:
                time.sleep(0.02)
            assert host.active_runs() == 0 and time.monotonic() - stopped < 2.0  # Stop, not LLM_TIMEOUT
