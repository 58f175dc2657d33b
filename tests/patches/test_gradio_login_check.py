"""Gradio's login check inline (patches/gradio_login_check.py) and its failing matplotlib import made instant
(patches/matplotlib_probe.py): the two per-run costs a burst of clicks paid on the event loop's way."""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
import urllib.error
import urllib.request

import gradio as gr
import pytest

from patches import gradio_login_check, matplotlib_probe


def _demo() -> gr.Blocks:
    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        box.submit(lambda text: text.upper(), box, out, api_name="shout")
    return demo


def _call(url: str) -> tuple[int, str]:
    """One REST run (the POST, then its stream): the status that refused it, or the stream's text."""
    request = urllib.request.Request(f"{url}gradio_api/call/shout", json.dumps({"data": ["hi"]}).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            event_id = json.loads(response.read())["event_id"]
        with urllib.request.urlopen(f"{url}gradio_api/call/shout/{event_id}", timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def test_the_check_runs_inline_and_a_call_still_goes_through():
    demo = _demo()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        assert gradio_login_check.install(demo.server_app)
        overrides = list(demo.server_app.dependency_overrides.values())
        assert len(overrides) == 1 and inspect.iscoroutinefunction(overrides[0])  # no thread-pool hop
        status, text = _call(demo.local_url)
        assert status == 200 and '"HI"' in text
    finally:
        demo.close()


def test_with_gradio_s_auth_on_a_caller_without_login_is_still_refused():
    """The override calls Gradio's own check: the same 401 when the app has a password."""
    demo = _demo()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, auth=("teacher", "secret"))
    try:
        assert gradio_login_check.install(demo.server_app)
        assert _call(demo.local_url)[0] == 401
    finally:
        demo.close()


def test_an_app_without_the_route_keeps_gradio_s_check(caplog):
    from fastapi import FastAPI

    assert not gradio_login_check.install(FastAPI())
    assert "patch gradio_login_check is off: no login_check route" in caplog.text


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is not None, reason="matplotlib is installed here")
def test_gradio_s_matplotlib_probe_fails_fast_when_matplotlib_is_absent(monkeypatch):
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    assert matplotlib_probe.install()
    assert sys.modules["matplotlib"] is None
    with pytest.raises(ImportError):
        import matplotlib  # noqa: F401 - Gradio does exactly this around every handler call
