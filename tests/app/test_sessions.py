"""Idle sessions give their memory back in a launched app: ours expire, busy ones stay, and Gradio's own sweep reaches
them (the session classes themselves: tests/patches/test_gradio_sessions.py)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import time
import urllib.request
import uuid

import app
from agents.llm.stub_server import StubLLMServer
from patches import gradio_sessions as sessions
from patches.gradio_sessions import ExpiringStateHolder, LeanSessionState
from ui.core import settings
from ui.core.settings import app_settings


def run_in_new_session(url: str, question: str) -> None:
    """One REST run with a session of its own, read to the end."""
    body = {"data": [question, "Think", "stub", "text", 5, 0.2, ["calculate"], "None", None],
            "session_hash": uuid.uuid4().hex}
    request = urllib.request.Request(f"{url}gradio_api/call/compare", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        event_id = json.loads(response.read())["event_id"]
    with urllib.request.urlopen(f"{url}gradio_api/call/compare/{event_id}", timeout=30) as response:
        assert b"event: complete" in response.read()


def test_idle_sessions_expire_and_busy_ones_stay(kit, monkeypatch):
    with StubLLMServer() as server:
        demo = app.build_demo(settings=kit.settings(server), registry=kit.registry())
        with kit.launched(demo) as url:
            holder = demo.state_holder
            assert isinstance(holder, ExpiringStateHolder)
            for k in range(5):
                run_in_new_session(url, f"What is {k} + 1?")
            assert len(holder.session_data) == 5
            assert all(isinstance(s, LeanSessionState) and not s.config_values for s in holder.session_data.values())
            busy = next(iter(holder.session_data))
            demo._queue.pending_event_ids_session[busy] = {"an-event-still-running"}
            later = datetime.datetime.now() + datetime.timedelta(seconds=app_settings().session_ttl_s + 1)
            try:
                assert holder.expire_idle(later) == 4
            finally:
                demo._queue.pending_event_ids_session.pop(busy, None)
            assert list(holder.session_data) == [busy] and list(holder.time_last_used) == [busy]
            assert holder.expire_idle(datetime.datetime.now()) == 0  # not idle long enough yet
            run_in_new_session(url, "What is 2 + 2?")  # the app goes on as before
            assert len(holder.session_data) == 2


def test_gradio_s_own_sweep_expires_idle_sessions(kit, monkeypatch):
    """Nobody calls ``expire_idle`` here: Gradio's once-a-second sweep (``delete_all_expired_state``, run by
    the launched app's lifespan task) must reach it, or the sessions would only look expirable in tests."""
    monkeypatch.setattr(sessions, "SWEEP_EVERY_S", 0.5)
    monkeypatch.setattr(settings, "_current", dataclasses.replace(app_settings(), session_ttl_s=1.0))
    with StubLLMServer() as server:
        demo = app.build_demo(settings=kit.settings(server), registry=kit.registry())
        with kit.launched(demo) as url:
            for k in range(3):
                run_in_new_session(url, f"What is {k} + 2?")
            assert len(demo.state_holder.session_data) == 3
            deadline = time.monotonic() + 10
            while demo.state_holder.session_data and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not demo.state_holder.session_data, "the app's own sweep never expired the idle sessions"
            run_in_new_session(url, "What is 2 + 2?")  # an expired visitor comes back to a fresh session
