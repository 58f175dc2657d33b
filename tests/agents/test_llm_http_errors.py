"""A server's HTTP error as one clear line (agents/llm/http_errors.py): what the server said, not the repr of its
body; and a request longer than the model's context window at once, without a retry.

Against the tests' stub server in the shapes real servers answer (OpenAI, vLLM and llama-cpp-python's 400 with
``code: context_length_exceeded``; TGI's 422), and against a real llama-cpp-python server, which answers a
*streamed* request past its context with a 200 and no body."""

from __future__ import annotations

import pytest

from agents.comparison import compare
from agents.llm.base import LLMFailure
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply
from tools.calculator import calculate
from tools.registry import ToolRegistry

LLAMA_CPP = ("This model's maximum context length is 256 tokens. However, you requested 641 tokens (385 in the "
             "messages, 256 in the completion). Please reduce the length of the messages or completion.")
TGI = ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 2100 `inputs` tokens "
       "and 100 `max_new_tokens`")


def _react(server: StubLLMServer):
    settings = LLMSettings(base_url=server.url, model="stub", timeout_s=10)
    return compare("What is 17 * 23?", ["react"], model_factory=lambda: HFInferenceModel(settings),
                   registry=ToolRegistry([calculate]))["react"]


@pytest.mark.parametrize(("reply", "said"), [
    (StubReply(status=400, error_body=LLAMA_CPP, error_code="context_length_exceeded"), "maximum context length"),
    (StubReply(status=422, error_body=TGI), "max_new_tokens"),
])
def test_a_request_past_the_context_is_one_line_and_one_request(reply, said):
    with StubLLMServer() as server:
        server.script(reply)
        trace = _react(server)
        assert len(server.requests) == 1  # not retried without `stop`: the same request would fail again
    assert trace.error.startswith("the conversation is longer than the model's context window (the server: ")
    assert said in trace.error and trace.error.endswith("pick a model with a longer context")
    assert "\n" not in trace.error


def test_another_400_still_gets_its_retry_without_stop():
    with StubLLMServer() as server:
        server.script(StubReply(status=400, error_body="bad request"), StubReply(status=400, error_body="bad request"))
        trace = _react(server)
        first, second = server.requests
        assert first.body.get("stop") and not second.body.get("stop")
    assert trace.error == "the model server answered HTTP 400: bad request"


def test_an_openai_shaped_model_not_found_names_the_models_the_server_has():
    with StubLLMServer() as server:
        server.script(StubReply(status=404, error_body="The model `stub` does not exist or you do not have access to "
                                "it.", error_code="model_not_found"))
        trace = _react(server)
    assert trace.error.startswith(f"the server at {server.url} has no model 'stub'") and "{" not in trace.error


@pytest.mark.real_server
@pytest.mark.slow
def test_a_real_server_s_empty_answer_to_a_long_stream_names_the_context(real_server):
    model = HFInferenceModel(LLMSettings(base_url=real_server.url, model=real_server.model, timeout_s=60))
    long_question = "Count these words: " + "apple banana cherry " * 2000  # ~6,000 tokens, past n_ctx=4096
    with pytest.raises(LLMFailure) as failure:
        list(model.stream([{"role": "user", "content": long_question}], max_tokens=8))
    assert "longer than the model's context window" in str(failure.value)
