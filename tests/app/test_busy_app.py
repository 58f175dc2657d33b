"""A busy app tells each visitor its place in line, or that it is full — never a silent wait; and its page still loads
at once. Driven over REST against a launched app (the line itself: tests/ui/core/test_admission.py)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import app
import ui.core.settings
from agents.llm.stub_server import StubLLMServer, StubReply
from ui.core.settings import AppSettings

STATUS = 6  # output index of the status line


def slow_answer(body: dict) -> StubReply:
    return StubReply(text="Thought: thinking.\nFinal Answer: 42", first_token_delay=1.5)


def submit(url: str, question: str) -> str:
    request = urllib.request.Request(f"{url}gradio_api/call/compare", method="POST",
                                     data=json.dumps({"data": [question, "Think", "stub", "text", 5, 0.2,
                                                               ["calculate"], "None", None]}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["event_id"]


def statuses(url: str, event_id: str) -> list[str]:
    """Every status line the REST client is sent, in order, until the run completes."""
    seen: list[str] = []
    with urllib.request.urlopen(f"{url}gradio_api/call/compare/{event_id}", timeout=30) as response:
        for line in response:
            if line.startswith(b"data:") and line[5:].strip().startswith(b"["):
                status = json.loads(line[5:])[STATUS]
                if not seen or seen[-1] != status:
                    seen.append(status)
    return seen


def test_a_full_app_says_so_and_a_queued_visitor_sees_its_place(kit, monkeypatch):
    monkeypatch.setattr(ui.core.settings, "_current", AppSettings(concurrency=1, queue_size=1))
    with StubLLMServer(slow_answer) as server:
        demo = app.build_demo(settings=kit.settings(server), registry=kit.registry())
        with kit.launched(demo) as url:
            results: dict[int, list[str]] = {}
            ids = []
            for k in range(3):  # one runs, one waits, one is turned away (in this order)
                ids.append(submit(url, f"question {k}"))
                deadline = time.monotonic() + 5
                while k == 0 and not server.requests and time.monotonic() < deadline:
                    time.sleep(0.02)
                time.sleep(0.2)
            threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, statuses(url, ids[k])))
                       for k in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
    runner, waiter, refused = results[0], results[1], results[2]
    assert runner[-1].startswith("✔ Done")
    assert "number 1** in the queue" in waiter[0] and waiter[-1].startswith("✔ Done")
    assert len(refused) == 1 and "full" in refused[0] and "try again" in refused[0]
    assert len(server.requests) == 2  # the refused question never reached the model


def test_the_page_loads_at_once_while_the_app_is_full(kit, monkeypatch):
    """The page and its scripts never wait behind the runs: with every slot busy, the line
    full and more visitors turned away, a new visitor's page still arrives at once, not after a reply."""
    import re

    monkeypatch.setattr(ui.core.settings, "_current", AppSettings(concurrency=1, queue_size=1))

    def load(url: str) -> tuple[bytes, float]:
        started = time.monotonic()
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.read(), time.monotonic() - started

    with StubLLMServer(lambda body: StubReply(text="Final Answer: 42", first_token_delay=6.0)) as server:
        demo = app.build_demo(settings=kit.settings(server), registry=kit.registry())
        with kit.launched(demo) as url:
            ids = [submit(url, f"question {k}") for k in range(5)]  # one runs, one waits, three are turned away
            readers = [threading.Thread(target=statuses, args=(url, i), daemon=True) for i in ids]
            for t in readers:
                t.start()
            deadline = time.monotonic() + 5
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            assert server.requests and server.requests[0].first_byte is None  # the run is waiting for the model
            page, took = load(url)
            asset = re.search(r'src="\./(assets/[^"]+\.js)"', page.decode()).group(1)
            script, took_script = load(url + asset)
            _, took_config = load(url + "config")
            assert b"run-btn" in page and script
            assert max(took, took_script, took_config) < 3.0, (took, took_script, took_config)  # the reply: 6 s
            assert server.requests[0].first_byte is None  # and it was still waiting when the page arrived
            for t in readers:
                t.join(40)
