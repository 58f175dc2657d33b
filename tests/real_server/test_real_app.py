"""The app's ``/compare`` endpoint against a real model server (llama-cpp-python + SmolLM2-135M).

The app is built with ``app.build_demo(settings)`` pointing at the real server and driven through
``gradio_client``, as a visitor's browser would drive it: every panel must end with an answer or one
clear error line, "All" must finish all three panels when the server serves one request at a time,
and Stop must end a real stream on the server side, not only on the page.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator

import httpx
import pytest
from gradio_client import Client

import app
from agents.llm.settings import LLMSettings
from tools.calculator import calculate
from tools.registry import ToolRegistry

pytestmark = [pytest.mark.real_server, pytest.mark.slow]

QUESTION = "What is 17 * 23 + 5?"
LONG_QUESTION = "Explain step by step how a bicycle works, part by part."
INTERRUPTED = "Disconnected from client"  # llama-cpp-python's log line for a request it ended early
POSTS = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" 200')
ANSWER, ERROR = "Final answer", "Model error"


@contextlib.contextmanager
def real_app(server, **env: str) -> Iterator[Client]:
    """The app on loopback, configured as ``LLM_*`` variables would configure it, with the offline calculator."""
    settings = LLMSettings.from_env({"LLM_BASE_URL": server.url, "LLM_MODEL": server.model, "LLM_TIMEOUT": "120",
                                     "LLM_MAX_TOKENS": "64", **env})
    demo = app.build_demo(settings=settings, registry=ToolRegistry([calculate]))
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs())
    try:
        yield Client(demo.local_url, verbose=False)
    finally:
        demo.close()


def text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def verdicts(panel: list) -> list[str]:
    """The panel's closing lines: final answers and model errors, in order."""
    return [text_of(m) for m in panel or [] if not (m.get("metadata") or {}).get("title")
            and (ANSWER in text_of(m) or ERROR in text_of(m))]


def assert_panel_ends_clearly(name: str, panel: list) -> str:
    """The panel's last word is an answer or one error line; no traceback, no misreported empty answer."""
    whole = "\n".join(text_of(m) + str((m.get("metadata") or {}).get("title", "")) for m in panel or [])
    assert "Traceback" not in whole and "internal error" not in whole, (name, whole[-1500:])
    assert "empty answer" not in whole, (name, whole[-1500:])
    assert "Ended without an answer" not in whole, (name, whole[-1500:])
    ends = verdicts(panel)
    assert ends, (name, whole[-1500:])
    if ERROR in ends[-1]:
        line = ends[-1].split(ERROR, 1)[1]
        assert "\n" not in line.strip() and len(line) < 400, (name, ends[-1])
    return ends[-1]


@pytest.mark.timeout(300)
def test_all_gives_three_finished_panels_with_max_concurrent_1(real_server):
    mark = real_server.mark()
    with real_app(real_server, LLM_MAX_CONCURRENT="1") as client:
        final = client.predict(question=QUESTION, mode="All", max_steps=2, temperature=0, tools=["calculate"],
                               api_name="/compare")
    ends = [assert_panel_ends_clearly(name, panel) for name, panel in zip(("think", "act", "react"), final[:3],
                                                                           strict=True)]
    assert all(ANSWER in end for end in ends), ends
    assert "Done" in final[6], final[6]
    assert all("LLM call" in m for m in final[3:6]), final[3:6]
    assert real_server.log_since(mark).count(INTERRUPTED) == 0, real_server.log_since(mark)[-3000:]


@pytest.mark.timeout(300)
def test_all_without_a_limit_never_blames_the_model(real_server):
    """The server aborts a reply when the next request arrives: the app learns it serves one request at a time
    (the status line says so), the cut modes wait for their turn, and each panel ends with an answer."""
    mark = real_server.mark()
    with real_app(real_server) as client:
        final = client.predict(question=QUESTION, mode="All", protocol="tools", max_steps=2, temperature=0,
                               tools=["calculate"], api_name="/compare")
    ends = [assert_panel_ends_clearly(name, panel) for name, panel in zip(("think", "act", "react"), final[:3],
                                                                           strict=True)]
    # three requests at once: the server did cut some off (else this test would prove nothing) …
    assert real_server.log_since(mark).count(INTERRUPTED) >= 1, real_server.log_since(mark)[-3000:]
    # … and each cut mode waited for its turn and answered; the status line said why, once
    assert all(ANSWER in end for end in ends), ends
    assert final[6].count("serves one request at a time") == 1, final[6]


@pytest.mark.timeout(180)
def test_stop_ends_a_real_stream_on_the_server(real_server):
    with real_app(real_server, LLM_MAX_TOKENS="600") as client:
        mark = real_server.mark()
        job = client.submit(question=LONG_QUESTION, mode="Think", temperature=0, api_name="/compare")
        streaming = wait_for(lambda: job.outputs() and "".join(text_of(m) for m in job.outputs()[-1][0] or []), 60)
        assert streaming, "no text reached the Think panel within 60 s"
        posts = len(POSTS.findall(real_server.log_since(mark)))
        assert posts == 1 and INTERRUPTED not in real_server.log_since(mark)
        job.cancel()
        stopped_at = time.monotonic()
        # the server itself ends the request (it notices the closed connection at its next token)
        assert wait_for(lambda: INTERRUPTED in real_server.log_since(mark), 10), real_server.log_since(mark)[-2000:]
        ended_after = time.monotonic() - stopped_at
        time.sleep(0.5)
        assert len(POSTS.findall(real_server.log_since(mark))) == posts  # and nothing asked for more
    # the server is free again: a tiny request is answered at once, not after a 600-token ramble
    started = time.monotonic()
    reply = httpx.post(f"{real_server.url}/chat/completions", timeout=60, json={
        "model": real_server.model, "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]})
    assert reply.status_code == 200 and reply.json()["choices"][0]["finish_reason"]
    assert ended_after < 5.0 and time.monotonic() - started < 20.0, (ended_after, time.monotonic() - started)


def wait_for(condition, timeout: float):
    """Poll ``condition`` until it is truthy or ``timeout`` seconds pass; its last value."""
    deadline = time.monotonic() + timeout
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return value


def test_llm_base_url_alone_names_the_servers_model_in_the_header_and_the_status_line(real_server):
    """As ``python app.py`` starts with only ``LLM_BASE_URL``: the model comes from the server's ``/v1/models``."""
    from ui.core import backend

    settings = backend.choose_backend(LLMSettings.from_env({"LLM_BASE_URL": real_server.url, "LLM_TIMEOUT": "120",
                                                            "LLM_MAX_TOKENS": "16"}), on_space=False, toy=True)
    assert settings.model == real_server.model and settings.models == (real_server.model,)
    demo = app.build_demo(settings=settings, registry=ToolRegistry([calculate]))
    header = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "backend-status")
    assert f"{real_server.model} at {real_server.url}" in header.value
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs())
    try:
        result = Client(demo.local_url, verbose=False).predict(question=QUESTION, mode="Think", api_name="/compare")
    finally:
        demo.close()
    assert f"on {real_server.model} at {real_server.url}" in result[6], result[6]
