"""What keeps one app process responsive for a classroom: no thread starts on the event loop,
handlers whose type hints cost nothing to read, and an HTTP pool big enough for every stream."""

from __future__ import annotations

import threading

import pytest

import app
from agents.llm import abort
from agents.llm.settings import LLMSettings
from ui.core.launcher import Launcher


def test_the_launcher_runs_targets_in_their_own_named_threads():
    ran: list[str] = []
    done = threading.Event()

    def target() -> None:
        ran.append(threading.current_thread().name)
        done.set()

    Launcher().start(target, "run-pump")
    assert done.wait(5) and ran == ["run-pump"]


def test_gradio_s_queue_sends_estimates_on_a_clock_not_to_every_queued_event_at_every_start(kit):
    """With ``status_update_rate="auto"`` each event start told every queued event its estimate: in a flood of 300
    that was O(n²) messages on the event loop, and the last visitor heard its first word after ~10 s."""
    demo = app.build_demo(settings=LLMSettings(model="stub", base_url="http://127.0.0.1:9/v1"), registry=kit.registry())
    assert demo._queue.live_updates is False and demo._queue.update_intervals == 1.0


def test_the_shared_model_client_has_room_for_fifty_visitors_streams():
    client = abort._client_factory()
    try:
        pools = [shard._pool for shard in client._transport.shards]
        assert sum(p._max_connections for p in pools) >= 50 * 3
        assert sum(p._max_keepalive_connections for p in pools) >= 100
        assert all(isinstance(p._network_backend, abort._Backend) for p in pools)  # Stop can abort a waiting read
    finally:
        client.close()


def test_gradio_s_own_login_check_refuses_strangers(kit):
    import json
    import urllib.error
    import urllib.request

    demo = app.build_demo(settings=kit.settings(_NoServer()), registry=kit.registry())
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, auth=("teacher", "secret"),
                **app.launch_kwargs())
    try:
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

    from agents import hosting
    from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy

    monkeypatch.setenv(hosting.ENV, "1")
    host = hosting.default_host()
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


def test_no_handler_has_string_annotations(kit):
    """Gradio calls ``typing.get_type_hints`` on the handler at every event: string annotations (``from __future__
    import annotations``) would be compiled again each time, so the modules that define handlers do without it."""
    demo = app.build_demo(settings=kit.settings(_NoServer()), registry=kit.registry())
    for block_fn in demo.fns.values():
        target = getattr(block_fn.fn, "__func__", block_fn.fn)
        assert not any(isinstance(v, str) for v in getattr(target, "__annotations__", {}).values()), target


def test_the_launched_app_serves_its_page_and_assets_from_memory(kit):
    """Gradio rebuilds the page (deep copy of a ~300 KB config, template) on every load, in its thread pool."""
    import re
    import urllib.request

    import brotli

    from patches.page_cache import PageCache
    from ui.core.visitors import BrowserCookie

    def load(url: str, **headers: str) -> tuple[bytes, dict]:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            return response.read(), dict(response.headers)

    demo = app.build_demo(settings=kit.settings(_NoServer()), registry=kit.registry())
    with kit.launched(demo) as url:
        outer = demo.server_app.middleware_stack  # each browser's cookie, in front of the cache (ui/core/visitors.py)
        cache = outer.app
        assert isinstance(outer, BrowserCookie) and isinstance(cache, PageCache)
        page, first = load(url)
        again, second = load(url)
        assert again == page and cache.hits == 1
        # a page from memory still gives each new browser a cookie of its own
        cookies = [{k.lower(): v for k, v in h.items()}["set-cookie"] for h in (first, second)]
        assert cookies[0].startswith("tar_browser=") and cookies[0] != cookies[1]
        html = page.decode()
        asset = re.search(r'src="\./(assets/[^"]+\.js)"', html).group(1)
        assert load(url + asset)[0] == load(url + asset)[0] and cache.hits == 2
        load(url, **{"Accept-Encoding": "br"})
        compressed, headers = load(url, **{"Accept-Encoding": "br"})
        assert headers["content-encoding"] == "br" and brotli.decompress(compressed) == page
        assert len(compressed) < len(page) / 4
        proxied, _ = load(url, **{"X-Forwarded-Host": "classroom.example", "X-Forwarded-Proto": "https"})
        assert "https://classroom.example" in proxied.decode() and "https://classroom.example" not in html


def test_only_a_launch_that_serves_until_stopped_settles(kit, monkeypatch):
    """``python app.py`` blocks in launch(): that process settles. Tests launch and close many apps in one process."""
    from agents import gc_tuning

    settled: list[bool] = []
    monkeypatch.setattr(gc_tuning, "settle", lambda: settled.append(True))
    monkeypatch.setattr(app.AppBlocks, "block_thread", lambda self: None)
    for prevent in (True, False):
        demo = app.build_demo(settings=kit.settings(_NoServer()), registry=kit.registry())
        try:
            demo.launch(prevent_thread_lock=prevent, server_name="127.0.0.1", quiet=True, **app.launch_kwargs())
            assert settled == ([] if prevent else [True])
        finally:
            demo.close()
