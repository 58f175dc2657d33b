"""The Stop button, clicked in a real browser, ends a real model server's stream.

``tests/real_server/test_real_app.py`` cancels through Gradio's API (what a closed tab does); a visitor
presses ■ Stop, a private event that signals this session's streams (``ui/core/stream.Stops``). Only a real
server shows that the request really ends there: llama-cpp-python logs "Disconnected from client" when
it notices the closed connection, and it is free for the next request at once instead of finishing a
600-token ramble.
"""

from __future__ import annotations

import time

import httpx
import pytest

import app
from agents.llm.settings import LLMSettings
from tools.calculator import calculate
from tools.registry import ToolRegistry

pytestmark = [pytest.mark.browser, pytest.mark.real_server, pytest.mark.slow]

LONG_QUESTION = "Explain step by step how a bicycle works, part by part."
INTERRUPTED = "Disconnected from client"  # llama-cpp-python's log line for a request it ended early


def wait_for(condition, timeout: float):
    deadline = time.monotonic() + timeout
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return value


@pytest.mark.timeout(240)
def test_the_stop_button_ends_a_real_stream_on_the_server(real_server, browser, kit):
    settings = LLMSettings.from_env({"LLM_BASE_URL": real_server.url, "LLM_MODEL": real_server.model,
                                     "LLM_TIMEOUT": "120", "LLM_MAX_TOKENS": "600"})
    demo = app.build_demo(settings=settings, registry=ToolRegistry([calculate]))
    with kit.launched(demo) as url, kit.open_page(browser, url) as page:
        page.fill("#question textarea", LONG_QUESTION)
        kit.pick_modes(page, ["Think-only"])
        mark = real_server.mark()
        page.click("#run-btn")
        # the reply is streaming into the Think panel: a few words of it are on screen
        page.wait_for_function("() => (document.querySelector('#panel-think')?.innerText || '')"
                               ".split(/\\s+/).length > 12",
                               timeout=90_000)
        assert INTERRUPTED not in real_server.log_since(mark)
        page.click("#stop-btn")
        stopped_at = time.monotonic()
        kit.wait_text(page, "#run-status", "Stopped", timeout=10_000)
        assert wait_for(lambda: INTERRUPTED in real_server.log_since(mark), 10), real_server.log_since(mark)[-2000:]
        ended_after = time.monotonic() - stopped_at
        assert "Stopped" in page.inner_text("#panel-think")
    # the server is free again: a tiny request is answered at once, not after a 600-token ramble
    started = time.monotonic()
    reply = httpx.post(f"{real_server.url}/chat/completions", timeout=60, json={
        "model": real_server.model, "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]})
    assert reply.status_code == 200 and reply.json()["choices"][0]["finish_reason"]
    assert ended_after < 5.0 and time.monotonic() - started < 20.0, (ended_after, time.monotonic() - started)
