"""Paused runs cannot take the room: one visitor holds a few, all of them together half the slots, a run
left paused ends by itself (its panels say why), and a visitor who leaves gives theirs back — over the REST API, as
an attacker would send it (``POST /gradio_api/call/compare_step``, a new ``session_hash`` each, streams never read).
The app runs its live runs in worker processes (the calculator's registry is importable by module name)."""

from __future__ import annotations

import dataclasses
import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

import app
import ui.core.settings
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from ui.core.settings import AppSettings

STATUS = 6
ASK = ["What is 17 * 23 + 5?", "All", "stub", "text", 5, 0.2, ["calculate"], "None", None, None]


def post(url: str, api: str, data: list, session: str, headers: dict | None = None) -> str:
    """POST a call with a chosen ``session_hash``; its event id (the stream is read only if the caller wants)."""
    posted = httpx.post(f"{url}gradio_api/call/{api}", json={"data": data, "session_hash": session},
                        headers=headers or {}, timeout=30)
    assert posted.status_code == 200, posted.text
    return posted.json()["event_id"]


def frames(url: str, api: str, event_id: str, *, until: str | None = None, timeout: float = 60) -> list[list]:
    """The outputs streamed to one call, until it completes (or a status holds ``until``: then it disconnects)."""
    out = []
    deadline = time.monotonic() + timeout
    with httpx.stream("GET", f"{url}gradio_api/call/{api}/{event_id}", timeout=timeout) as s:
        event = ""
        for line in s.iter_lines():
            assert time.monotonic() < deadline, f"no end after {timeout} s; last: {out[-1][STATUS] if out else None}"
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event in ("generating", "complete"):
                data = json.loads(line[6:])
                if data and len(data) > STATUS:
                    out.append(data)
                    if until is not None and until in data[STATUS]:
                        return out
            if event in ("complete", "error") and line.startswith("data: "):
                break
    return out


def paused_or_refused(url: str, event_id: str) -> str:
    """``"refused"`` (one line in the status) or ``"paused"`` (then the stream is left: the visitor leaves)."""
    seen = frames(url, "compare_step", event_id, until="⏸ Paused", timeout=30)
    last = seen[-1][STATUS]
    if "Paused" in last:
        return "paused"
    assert last.startswith("⚠") and last.count("\n") == 0, last
    return "refused"


def slow_steps(body: dict) -> StubReply:
    """The toy model, a little slow: a step takes a moment, like a real one."""
    reply = toy_policy(body)
    return dataclasses.replace(reply, first_token_delay=0.2)


@pytest.fixture
def one_app(kit, monkeypatch):
    """The app with its default limits (64 slots; 3 paused runs per visitor, half the slots in all)."""
    monkeypatch.setattr(ui.core.settings, "_current", AppSettings())
    with StubLLMServer(slow_steps) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
        with kit.launched(demo) as url:
            yield url


def test_66_unread_paused_runs_leave_room_for_a_normal_run_which_finishes(one_app):
    url = one_app
    with ThreadPoolExecutor(16) as pool:  # the attack: 66 stepping runs, a new session and X-Forwarded-For each
        ids = list(pool.map(lambda k: post(url, "compare_step", ASK, f"attacker-{k}",  # ... and never read
                                           {"X-Forwarded-For": f"198.51.100.{k}"}), range(66)))
    started = time.monotonic()
    normal = frames(url, "compare", post(url, "compare", ASK, "teacher"), timeout=30)
    assert normal[-1][STATUS].startswith("✔ Done") and "396" in json.dumps(normal[-1][2])
    assert time.monotonic() - started < 30
    assert all("in the queue" not in f[STATUS] for f in normal)  # no wait behind the paused runs
    more = frames(url, "compare_step", post(url, "compare_step", ASK, "attacker-66"))
    assert "You already have 3 runs going step by step" in more[-1][STATUS]  # one visitor: three at most
    assert more[-1][STATUS].count("\n") == 0
    # the attacker leaves: reading each stream and hanging up ends its paused runs at once
    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(lambda i: paused_or_refused(url, i), ids))
    assert outcomes.count("paused") == 3 and outcomes.count("refused") == 63
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        again = frames(url, "compare_step", post(url, "compare_step", ASK, f"back-{time.monotonic()}"),
                       until="⏸ Paused")
        if "Paused" in again[-1][STATUS]:
            break
        time.sleep(0.5)
    assert "Paused" in again[-1][STATUS], again[-1][STATUS]


def test_paused_runs_of_many_visitors_hold_half_the_slots_at_most(kit, monkeypatch):
    """Behind a trusted proxy every X-Forwarded-For is another visitor: together they still hold half the slots."""
    monkeypatch.setattr(ui.core.settings, "_current", AppSettings(concurrency=8, trusted_proxies=("127.0.0.1",)))
    with StubLLMServer(slow_steps) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
        with kit.launched(demo) as url:
            with ThreadPoolExecutor(16) as pool:
                ids = list(pool.map(lambda k: post(url, "compare_step", ASK, f"v-{k}",
                                                   {"X-Forwarded-For": f"198.51.100.{k}"}), range(20)))
            normal = frames(url, "compare", post(url, "compare", ASK, "teacher"))
            assert normal[-1][STATUS].startswith("✔ Done")
            full = frames(url, "compare_step", post(url, "compare_step", ASK, "late",
                                                    {"X-Forwarded-For": "198.51.100.99"}))
            assert "The app holds 4 runs paused step by step" in full[-1][STATUS]
            with ThreadPoolExecutor(16) as pool:
                outcomes = list(pool.map(lambda i: paused_or_refused(url, i), ids))
            assert outcomes.count("paused") == 4


def test_a_run_left_paused_ends_and_its_panels_say_why(kit, monkeypatch):
    monkeypatch.setattr(ui.core.settings, "_current", AppSettings(pause_ttl_s=1.0))
    with StubLLMServer(toy_policy) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
        with kit.launched(demo) as url:
            seen = frames(url, "compare_step", post(url, "compare_step", ASK, "idle-teacher"), timeout=30)
            statuses = [f[STATUS] for f in seen]
            assert any("⏸ Paused after step 1" in s for s in statuses)
            last = seen[-1]
            assert "nobody pressed Next step or Continue for 1 s" in last[STATUS] and last[STATUS].startswith("⏹")
            react = json.dumps(last[2])
            assert "nobody pressed Next step or Continue" in react and "Ended" in react
            assert "Paused after step 2" not in react
            # its place is free again: the same visitor can step through another run
            again = frames(url, "compare_step", post(url, "compare_step", ASK, "idle-teacher-2"), until="⏸ Paused")
            assert "Paused" in again[-1][STATUS]
