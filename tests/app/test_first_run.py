"""What a new user meets: ``python app.py`` with nothing configured runs the built-in toy model (so the examples
answer in three panels at once), ``LLM_BASE_URL`` alone is enough, and on a Space nothing changes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gradio_client import Client

import app
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from ui.core import backend
from ui.core.settings import AppSettings

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What is 17 * 23 + 5?"


def component(demo, elem_id: str):
    return next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)


@pytest.fixture
def toy_settings():
    settings = backend.choose_backend(LLMSettings(), on_space=False, toy=True)
    yield settings
    backend.stop_toys()


def test_nothing_configured_off_a_space_starts_the_toy(toy_settings):
    assert toy_settings.toy and toy_settings.base_url.startswith("http://127.0.0.1:") and toy_settings.problem() is None
    assert toy_settings.model == "toy" and toy_settings.describe() == "the built-in toy model"


def test_on_a_space_or_with_app_toy_model_0_no_toy_starts():
    assert backend.choose_backend(LLMSettings(), on_space=True, toy=True) == LLMSettings()
    assert backend.choose_backend(LLMSettings(), on_space=False, toy=False) == LLMSettings()
    assert backend._servers == []
    assert AppSettings.from_env({}).toy_model and not AppSettings.from_env({"APP_TOY_MODEL": "0"}).toy_model


def test_the_header_says_it_is_a_toy_and_how_to_connect_a_real_model(toy_settings, kit):
    demo = app.build_demo(settings=toy_settings, registry=kit.registry())
    status, banner = component(demo, "backend-status"), component(demo, "setup-banner")
    assert "toy model" in status.value and "arithmetic" in status.value and "calculator" in banner.value
    assert banner.visible and all(way.lower() in banner.value.lower() for way in (
        "HF_TOKEN", "Sign in with Hugging Face", "LLM_BASE_URL", "APP_TOY_MODEL=0"))


def test_the_toy_answers_arithmetic_in_three_panels_and_says_i_dont_know_otherwise(toy_settings, kit):
    demo = app.build_demo(settings=toy_settings, registry=kit.registry())
    with kit.launched(demo) as url:
        client = Client(url, verbose=False)
        result = client.predict(question=QUESTION, mode="All", api_name="/compare")
        other = client.predict(question="Who wrote Pride and Prejudice?", mode="All", api_name="/compare")
    think, act, react = (kit.panel_text(p) for p in result[:3])
    assert "Final Answer" in think + act + react or "Final answer" in think
    assert "396" in act and "396" in react and "Done" in result[6] and "toy model" in result[6]
    assert all("I don't know" in kit.panel_text(p) for p in other[:3]) and "Done" in other[6]


def test_base_url_alone_in_the_app_offers_the_servers_models(kit):
    """The Settings box offers what the server lists (not the router's models); the status line names the model."""
    with StubLLMServer(models=("qwen2.5:7b", "llama3.2:3b"), unknown_model="ollama") as srv:
        settings = backend.choose_backend(LLMSettings.from_env({"LLM_BASE_URL": srv.url}), on_space=False, toy=True)
        demo = app.build_demo(settings=settings, registry=kit.registry())
        model_box = next(b for b in demo.blocks.values() if getattr(b, "label", None) == "Model")
        assert [c[0] for c in model_box.choices] == ["qwen2.5:7b", "llama3.2:3b"] and model_box.value == "qwen2.5:7b"
        assert f"qwen2.5:7b at {srv.url}" in component(demo, "backend-status").value
        with kit.launched(demo) as url:
            client = Client(url, verbose=False)
            result = client.predict(question=QUESTION, mode="ReAct", api_name="/compare")
            missing = client.predict(question=QUESTION, mode="ReAct", model="phi3", api_name="/compare")
    assert "396" in kit.panel_text(result[2]) and f"on qwen2.5:7b at {srv.url}" in result[6]
    line = kit.panel_text(missing[2])
    assert "'phi3'" in line and "qwen2.5:7b, llama3.2:3b" in line and "failed" in missing[6]


def test_a_server_that_lists_nothing_is_a_setup_line_and_runs_are_refused(kit):
    with StubLLMServer(models=None) as srv:
        settings = backend.choose_backend(LLMSettings.from_env({"LLM_BASE_URL": srv.url}), on_space=False, toy=True)
        demo = app.build_demo(settings=settings, registry=kit.registry())
        banner = component(demo, "setup-banner")
        assert banner.visible and "set LLM_MODEL" in banner.value
        with kit.launched(demo) as url:
            result = Client(url, verbose=False).predict(question=QUESTION, mode="Think", api_name="/compare")
        assert srv.requests == [] and "LLM_MODEL" in result[6]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(180)
def test_python_app_py_with_nothing_configured_answers_the_example():
    """A new user's first run: ``python app.py`` on a machine with nothing configured shows three panels answering
    "What is 17 * 23 + 5?" (run workers included: they reach the toy in the app's process)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_", "APP_", "SPACE_"))}
    env.update(GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        client = None
        deadline = time.monotonic() + 120
        while client is None and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()
            try:
                client = Client(f"http://127.0.0.1:{port}/", verbose=False)
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.5)
        assert client is not None, "the app did not come up"
        result = client.predict(question=QUESTION, mode="All", api_name="/compare")
    finally:
        proc.terminate()
        proc.wait(20)
    think, act, react = (p for p in result[:3])
    texts = ["\n".join(str(m.get("content")) for m in panel) for panel in (think, act, react)]
    assert all(texts) and "396" in texts[1] and "396" in texts[2], texts
    assert "Done" in result[6] and "toy model" in result[6]
