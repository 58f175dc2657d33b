"""What a real local model server does, through the real InferenceClient against the stub server.

A reply is trusted only when the server says it is finished (a cut one is
never an answer), ``LLM_TIMEOUT`` bounds silence and ``LLM_MAX_DURATION`` a whole call, usage of
a call that ended early still counts, ``max_tokens`` reaches the request, and a Hugging Face
token never goes to a ``base_url`` server.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.comparison import compare
from agents.events import FinalAnswer, LLMError, ParseError, TokenDelta, Truncated, Usage
from agents.llm.discovery import resolve_model
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply
from agents.modes import RunConfig
from agents.trace import metrics_line
from tools.calculator import calculate
from tools.registry import ToolRegistry

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ToolRegistry([calculate])
QUESTION = "What is 17 * 23 + 5?"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server():
    with StubLLMServer() as srv:
        yield srv


def factory(srv: StubLLMServer, **kw):
    settings = LLMSettings(base_url=srv.url, model="stub", timeout_s=kw.pop("timeout_s", 10), **kw)
    return lambda: HFInferenceModel(settings)


def shown(trace) -> str:
    return "".join(e.text for _, e in trace.events if isinstance(e, TokenDelta))


# --- A. replies that are whole, or clearly not -------------------------------------------------


@pytest.mark.parametrize("mode", ["think", "react"])
def test_an_answer_cut_after_39_is_never_the_answer_39(server, mode):
    """A cut that looks like an answer: "Final Answer: 396" ends cleanly after "39", with no finish_reason and no
    [DONE]."""
    server.script(StubReply(text="Final Answer: 396", end_after=2))  # chunks of 8: "Final An", "swer: 39" | "6"
    trace = compare(QUESTION, [mode], model_factory=factory(server), registry=REGISTRY)[mode]
    assert shown(trace) == "Final Answer: 39"  # the partial text stays visible…
    assert trace.answer is None and not trace.of(FinalAnswer) and not trace.of(ParseError)  # …but is no answer
    assert trace.error == "the server closed the connection mid-reply after 4 tokens"
    assert len(trace.of(LLMError)) == 1 and trace.of(LLMError)[0].reason == "incomplete"
    assert len(server.requests) == 1  # text was shown: not retried
    usage = trace.of(Usage)
    assert len(usage) == 1 and usage[0].estimated and usage[0].completion_tokens == 4  # counted though cut
    assert "~" in metrics_line(trace)


def test_a_cut_native_tool_call_is_never_run(server):
    server.script(StubReply(tool_calls=[("calculate", {"expression": "17 * 23 + 5"})], end_after=2))
    trace = compare(QUESTION, ["act"], model_factory=factory(server), registry=REGISTRY,
                    config=RunConfig(protocol="tools"))["act"]
    assert trace.tool_calls == 0 and trace.answer is None and "mid-reply" in trace.error


def test_a_reply_cut_before_anything_was_shown_is_retried(server):
    server.script(StubReply(text="Final Answer: 396", end_after=0), StubReply(text="Final Answer: 396"))
    trace = compare(QUESTION, ["think"], model_factory=factory(server), registry=REGISTRY)["think"]
    assert trace.answer == "396" and trace.error is None and len(server.requests) == 2


def test_a_reply_at_the_token_limit_says_so(server):
    server.script(StubReply(text="Thought: I will ramble on and on", finish_reason="length"))
    trace = compare(QUESTION, ["think"], model_factory=factory(server), registry=REGISTRY,
                    config=RunConfig(max_tokens=9))["think"]
    assert [e.message for e in trace.of(Truncated)] == [
        "the reply hit the token limit of 9 tokens and may be cut short"]
    assert "hit the token limit" in metrics_line(trace) and "hit the token limit" in trace.to_markdown()
    assert trace.summary()["hit_token_limit"] == 1 and trace.error is None
    assert server.requests[0].body["max_tokens"] == 9


def test_a_whole_reply_without_usage_is_complete_and_estimated(server):
    server.script(StubReply(text="Final Answer: 396", usage_in_stream=False))
    trace = compare(QUESTION, ["think"], model_factory=factory(server), registry=REGISTRY)["think"]
    assert trace.answer == "396" and trace.tokens_estimated and not trace.of(Truncated)


# --- timeouts -----------------------------------------------------------------------------------


def test_a_steady_stream_longer_than_llm_timeout_finishes(server):
    text = "Thought: steady words. " * 6 + "Final Answer: 396"  # ~20 chunks, 0.1 s apart: ~2 s in all
    server.script(StubReply(text=text, token_delay=0.1))
    start = time.perf_counter()
    trace = compare(QUESTION, ["think"], model_factory=factory(server, timeout_s=0.6), registry=REGISTRY)["think"]
    assert trace.error is None and trace.answer == "396"
    assert time.perf_counter() - start > 1.2  # longer than LLM_TIMEOUT, and never cut by it


def test_a_silent_gap_longer_than_llm_timeout_fails_fast(server):
    server.script(StubReply(text="Thought: this goes quiet. Final Answer: 396", pause_after=2, pause_s=8))
    start = time.perf_counter()
    trace = compare(QUESTION, ["think"], model_factory=factory(server, timeout_s=0.5), registry=REGISTRY)["think"]
    assert time.perf_counter() - start < 4
    assert trace.error == "the model server went silent for 0.5 s mid-reply, after 4 tokens (LLM_TIMEOUT)"
    assert trace.answer is None and trace.of(Usage)[0].completion_tokens == 4


def test_llm_max_duration_ends_a_steady_call_and_counts_its_tokens(server):
    server.script(StubReply(text="Thought: " + "slow but steady " * 40, token_delay=0.05))
    start = time.perf_counter()
    trace = compare(QUESTION, ["think"], model_factory=factory(server, timeout_s=5, max_duration_s=1.0),
                    registry=REGISTRY)["think"]
    assert time.perf_counter() - start < 3.5
    assert trace.error is not None and trace.error.startswith("the reply was cut at 1 s (LLM_MAX_DURATION) after ")
    usage = trace.of(Usage)
    assert len(usage) == 1 and usage[0].estimated and usage[0].completion_tokens > 5


# --- max tokens ---------------------------------------------------------------------------------


def _env(srv: StubLLMServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "LLM_"))}
    env.update(LLM_BASE_URL=srv.url, LLM_MODEL="stub", PYTHONPATH=str(ROOT), **extra)
    return env


@pytest.mark.parametrize(("args", "extra", "expected"), [
    (["--max-tokens", "77"], {"LLM_MAX_TOKENS": "55"}, 77),  # the flag wins
    ([], {"LLM_MAX_TOKENS": "55"}, 55),
])
def test_max_tokens_reaches_the_request_from_the_cli(server, args, extra, expected):
    done = subprocess.run([sys.executable, "-m", "agents", "ask", QUESTION, "--mode", "think", *args],
                          capture_output=True, text=True, env=_env(server, **extra), cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [r.body["max_tokens"] for r in server.requests] == [expected]


def test_default_max_tokens_is_2048(server):
    compare(QUESTION, ["think"], model_factory=factory(server), registry=REGISTRY)
    assert server.requests[0].body["max_tokens"] == 2048


@pytest.mark.parametrize(("args", "env", "expected"), [
    (["--max-tokens", "33"], {}, 33), ([], {"LLM_MAX_TOKENS": "44"}, 44),
    (["--max-tokens", "33"], {"LLM_MAX_TOKENS": "44"}, 33),
])
def test_eval_max_tokens_reaches_the_request(server, monkeypatch, tmp_path, args, env, expected):
    from agents.cli import eval_main

    for name in [k for k in os.environ if k.startswith(("HF_", "LLM_"))]:
        monkeypatch.delenv(name)
    for name, value in {"LLM_BASE_URL": server.url, "LLM_MODEL": "stub", **env}.items():
        monkeypatch.setenv(name, value)
    data = tmp_path / "q.csv"
    data.write_text("question,answer\nWhat is 2+2?,4\n")
    argv = ["--dataset", str(data), "--modes", "think", "--out", str(tmp_path / "out"), *args, "--json"]
    assert eval_main(argv, registry=REGISTRY) == 0
    assert {r.body["max_tokens"] for r in server.requests} == {expected}


# --- F.3: a Hugging Face token goes to Hugging Face only ----------------------------------------


def test_hf_token_is_never_sent_to_a_base_url_server(server, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_canary_never_send_me_123")
    monkeypatch.delenv("LLM_API_KEY", raising=False)
    settings = LLMSettings.from_env({"LLM_BASE_URL": server.url, "LLM_MODEL": "stub",
                                     "HF_TOKEN": "hf_canary_never_send_me_123"})
    visitor = settings.with_overrides(token="hf_visitor_oauth_canary_456")  # a signed-in visitor's token
    for s in (settings, visitor):
        assert "".join(c.text for c in HFInferenceModel(s).stream(HI))
    assert len(server.requests) == 2
    for request in server.requests:
        assert "authorization" not in request.headers, request.headers
        assert "canary" not in repr(request.headers)


def test_llm_api_key_is_what_a_base_url_server_gets(server, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_canary_never_send_me_123")
    settings = resolve_model(LLMSettings.from_env({"LLM_BASE_URL": server.url, "LLM_API_KEY": "sk-local-key",
                                                   "HF_TOKEN": "hf_canary_never_send_me_123"}))
    list(HFInferenceModel(settings).stream(HI))
    assert server.requests[0].headers["authorization"] == "Bearer sk-local-key"


def test_cli_shows_waiting_and_the_token_limit(monkeypatch):
    """The readable CLI output says when a mode waits for the server and when a reply hit the limit."""
    import io

    from agents.cli import ask_main

    with StubLLMServer() as srv:
        # every call holds the one slot for over half a second, so the modes started together must queue
        srv.responder = lambda body: StubReply(text="Thought: long enough words here", finish_reason="length",
                                               first_token_delay=0.6)
        for name in [k for k in os.environ if k.startswith(("HF_", "LLM_"))]:
            monkeypatch.delenv(name)
        for key, value in {"LLM_BASE_URL": srv.url, "LLM_MODEL": "stub", "LLM_MAX_CONCURRENT": "1"}.items():
            monkeypatch.setenv(key, value)
        out = io.StringIO()
        assert ask_main([QUESTION, "--mode", "all", "--max-steps", "1", "--tools", "calculate"], out) == 0
        assert srv.max_in_flight == 1
    text = out.getvalue()
    assert "waiting for the model server" in text and "Note: the reply hit the token limit" in text
    assert "Traceback" not in text
