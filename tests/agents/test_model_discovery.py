"""Any OpenAI-compatible server with one variable: ``LLM_BASE_URL`` alone finds the model at ``GET /v1/models``;
a model the server does not have ends the run with one line naming it and the ones the server has; the events
name the model that answered. Against the stub over real HTTP (the real client, nothing monkeypatched)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.comparison import compare
from agents.events import LLMError, Usage
from agents.llm.discovery import list_models, resolve_model
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from agents.modes import RunConfig
from tools.calculator import calculate
from tools.registry import ToolRegistry

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What is 17 * 23 + 5?"
REGISTRY = ToolRegistry([calculate])


def base_url_only(server: StubLLMServer, **env: str) -> LLMSettings:
    """What ``LLM_BASE_URL=<stub>`` and nothing else gives, resolved as the app and the CLI do at start."""
    return resolve_model(LLMSettings.from_env({"LLM_BASE_URL": server.url, **env}))


def test_base_url_alone_leaves_the_model_to_the_server():
    unresolved = LLMSettings.from_env({"LLM_BASE_URL": "http://127.0.0.1:9/v1"})
    assert unresolved.model == "" and "LLM_MODEL" in unresolved.problem()
    assert LLMSettings.from_env({"HF_TOKEN": "hf_x"}).model == "openai/gpt-oss-20b"  # the router keeps its default


def test_one_model_listed_is_used():
    with StubLLMServer(models=("smollm2-135m",)) as srv:
        settings = base_url_only(srv)
    assert settings.model == "smollm2-135m" and settings.models == ("smollm2-135m",) and settings.problem() is None
    assert settings.describe() == f"smollm2-135m at {srv.url}"


def test_several_listed_the_first_is_used_and_all_are_offered():
    with StubLLMServer(models=("qwen2.5:7b", "llama3.2:3b", "qwen2.5:7b")) as srv:
        settings = base_url_only(srv)
    assert settings.model == "qwen2.5:7b" and settings.models == ("qwen2.5:7b", "llama3.2:3b")


@pytest.mark.parametrize(("models", "why"), [((), "lists no models"), (None, "HTTP 404")])
def test_none_listed_or_no_endpoint_is_one_line_saying_to_set_llm_model(models, why):
    with StubLLMServer(models=models) as srv:
        settings = base_url_only(srv)
    problem = settings.problem()
    assert settings.model == "" and why in problem and "set LLM_MODEL" in problem and "\n" not in problem
    with pytest.raises(Exception, match="LLM_MODEL"):
        HFInferenceModel(settings)  # no call is made with a model nobody named


def test_an_unreachable_server_is_a_line_too():
    settings = resolve_model(LLMSettings.from_env({"LLM_BASE_URL": "http://127.0.0.1:9/v1"}), timeout=1)
    assert "could not be reached" in settings.problem() and "LLM_MODEL" in settings.problem()


def test_a_named_model_is_used_unchecked():
    with StubLLMServer(models=("other",)) as srv:
        settings = base_url_only(srv, LLM_MODEL="mine")
        assert settings.model == "mine" and srv.model_lists == 0


def test_the_listing_sends_llm_api_key_and_never_a_hugging_face_token(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token")
    seen: list[str] = []
    with StubLLMServer(models=("m",)) as srv:
        import http.server

        handler = srv._httpd.RequestHandlerClass
        original = handler.do_GET

        def spy(self: http.server.BaseHTTPRequestHandler) -> None:
            seen.append(self.headers.get("Authorization") or "")
            original(self)

        monkeypatch.setattr(handler, "do_GET", spy)
        assert list_models(srv.url).ids == ("m",)
        assert list_models(srv.url, "sk-local").ids == ("m",)
    assert seen == ["", "Bearer sk-local"]


def stub_settings(server: StubLLMServer, model: str) -> LLMSettings:
    return resolve_model(LLMSettings(model=model, base_url=server.url))


@pytest.mark.parametrize("style", ["ollama", "vllm", "openai"])
def test_a_model_the_server_lacks_ends_the_panel_naming_it_and_the_ones_it_has(style):
    with StubLLMServer(models=("qwen2.5:7b", "llama3.2:3b"), unknown_model=style) as srv:
        settings = stub_settings(srv, "openai/gpt-oss-20b")
        trace = compare(QUESTION, ["react"], model_factory=lambda: HFInferenceModel(settings),
                        registry=REGISTRY)["react"]
    assert trace.answer is None and len(trace.of(LLMError)) == 1
    line = trace.error
    assert "'openai/gpt-oss-20b'" in line and "qwen2.5:7b, llama3.2:3b" in line, line
    assert "LLM_MODEL" in line and "\n" not in line, line


def test_a_missing_model_on_a_server_that_lists_none_says_so():
    with StubLLMServer(models=None, unknown_model="ollama") as srv:
        settings = stub_settings(srv, "phi3")
        trace = compare(QUESTION, ["think"], model_factory=lambda: HFInferenceModel(settings),
                        registry=REGISTRY)["think"]
    assert trace.error == f"the server at {srv.url} has no model 'phi3' — set LLM_MODEL to a model it serves"


def test_a_listed_model_runs():
    with StubLLMServer(models=("qwen2.5:7b",), unknown_model="vllm") as srv:
        settings = base_url_only(srv)
        trace = compare(QUESTION, ["act"], model_factory=lambda: HFInferenceModel(settings), registry=REGISTRY)["act"]
    assert trace.error is None and "396" in trace.answer
    assert {r.body["model"] for r in srv.requests} == {"qwen2.5:7b"}


def test_a_wrong_path_is_not_taken_for_a_missing_model():
    with StubLLMServer(responder=lambda body: StubReply(status=404, error_body="404 page not found")) as srv:
        settings = stub_settings(srv, "m")
        trace = compare(QUESTION, ["think"], model_factory=lambda: HFInferenceModel(settings),
                        registry=REGISTRY)["think"]
    assert "has no /chat/completions" in trace.error and "/v1" in trace.error


def test_each_call_names_the_model_that_answered():
    """The reply's ``model`` field when the server sends one (here a router's resolved name), per call."""
    def named(body: dict) -> StubReply:
        reply = toy_policy(body)
        reply.model = "Qwen/Qwen3-32B:groq"
        return reply

    with StubLLMServer(responder=named) as srv:
        settings = LLMSettings(model="Qwen/Qwen3-32B", base_url=srv.url)
        traces = compare(QUESTION, ["think", "react"], model_factory=lambda: HFInferenceModel(settings),
                         registry=REGISTRY, config=RunConfig(protocol="tools"))
    for trace in traces.values():
        assert {u.model for u in trace.of(Usage)} == {"Qwen/Qwen3-32B:groq"}
        assert trace.answered_by == "Qwen/Qwen3-32B:groq"
    assert settings.describe(traces["react"].answered_by) == f"Qwen/Qwen3-32B:groq at {srv.url}"


def cli(srv_url: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_"))}
    clean.update(LLM_BASE_URL=srv_url, PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-m", "agents", "ask", QUESTION, "--tools", "calculate", *args],
                          capture_output=True, text=True, env=clean, cwd=ROOT, timeout=60)


def test_the_cli_needs_nothing_but_llm_base_url():
    with StubLLMServer(models=("qwen2.5:7b", "llama3.2:3b"), unknown_model="ollama") as srv:
        done = cli(srv.url, "--mode", "react", "--json")
        assert srv.model_lists == 1 and {r.body["model"] for r in srv.requests} == {"qwen2.5:7b"}
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["model"] == f"qwen2.5:7b at {srv.url}" and data["runs"]["react"]["answer"] == "396"


def test_the_cli_says_to_set_llm_model_when_the_server_lists_none():
    with StubLLMServer(models=None) as srv:
        done = cli(srv.url, "--mode", "think")
        assert srv.requests == []  # no call with a model nobody named
    assert done.returncode == 0 and "set LLM_MODEL" in done.stderr and "Traceback" not in done.stderr
    assert "no model named" in done.stdout


def test_the_cli_with_nothing_configured_and_the_toy_off_says_how_and_starts_no_toy():
    """With APP_TOY_MODEL=0 (as in the app; by default the toy answers: tests/agents/cli/test_cli_toy.py)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_"))}
    done = subprocess.run([sys.executable, "-m", "agents", "ask", QUESTION, "--mode", "think"], capture_output=True,
                          text=True, env={**clean, "PYTHONPATH": str(ROOT), "APP_TOY_MODEL": "0"}, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert "HF_TOKEN" in done.stderr and "LLM_BASE_URL" in done.stderr and "python -m agents stub" in done.stderr
    assert "no model configured" in done.stdout and "toy model" not in done.stdout
