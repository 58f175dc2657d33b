"""patches/hf_stream_parse.py: the fast parse makes exactly the objects huggingface_hub makes, or stays off."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub import InferenceClient
from huggingface_hub.inference._generated.types import ChatCompletionStreamOutput

import patches
from agents.llm.stub_replies import StubReply
from agents.llm.stub_server import StubLLMServer
from patches import hf_stream_parse
from patches.hf_stream_parse import FastParse, _same

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "smollm2"


@pytest.fixture
def library_parse():
    """The library's own parse for the test, the patch as it was after it."""
    installed = "parse_obj_as_instance" in vars(ChatCompletionStreamOutput)
    hf_stream_parse.uninstall()
    yield
    hf_stream_parse.uninstall()
    if installed:
        hf_stream_parse.install()


def both_ways(payload: dict[str, Any]) -> tuple[Any, Any]:
    """The fast parse's and the library's result, or the exception each raised (type and message)."""
    fast = FastParse(ChatCompletionStreamOutput)
    results = []
    for parse in (lambda data: fast.parse(ChatCompletionStreamOutput, data), ChatCompletionStreamOutput.parse_obj):
        try:
            results.append(parse(json.loads(json.dumps(payload))))
        except Exception as exc:  # noqa: BLE001 - the library's refusal is part of what must match
            results.append((type(exc), str(exc)))
    return results[0], results[1]


def test_the_start_up_check_passes_on_the_installed_library():
    assert hf_stream_parse.fingerprint() == hf_stream_parse.WRITTEN_FOR
    assert hf_stream_parse.problem() is None


def test_a_real_servers_recorded_chunks_parse_identically(library_parse):
    payloads = [json.loads(line[5:]) for path in sorted(RECORDED.glob("*.sse"))
                for line in path.read_text().splitlines()
                if line.startswith("data:") and line.strip() != "data: [DONE]"]
    assert len(payloads) > 50
    for payload in payloads:
        fast, library = both_ways(payload)
        assert _same(fast, library), payload


def _json_value(rng: random.Random, depth: int) -> Any:
    kinds = ["str", "int", "float", "bool", "none"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "list":
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "dict":
        return {rng.choice(["a", "B-c", "d e", "index", "content"]): _json_value(rng, depth + 1)
                for _ in range(rng.randint(0, 3))}
    return {"str": "x", "int": 3, "float": -0.5, "bool": True, "none": None}[kind]


def _chunk(rng: random.Random) -> dict[str, Any]:
    """A chunk whose known keys may hold anything JSON can (a dict where a list is typed, and so on)."""
    def maybe(value: Any) -> Any:
        return value if rng.random() < 0.7 else _json_value(rng, 1)

    call = {"index": maybe(0), "id": maybe("call_0"), "type": "function",
            "function": maybe({"name": maybe("search"), "arguments": maybe("{")}), "Extra-Key": maybe(1)}
    delta = {"role": maybe("assistant"), "content": maybe("Hi"), "reasoning_content": maybe("hm"),
             "tool_calls": maybe([call, call] if rng.random() < 0.5 else call)}
    choice = {"index": 0, "delta": maybe(delta), "finish_reason": maybe(None),
              "logprobs": maybe({"content": [{"token": "a", "logprob": -1.0, "top_logprobs": maybe([])}]})}
    chunk = {"id": "c", "created": maybe(1), "model": "m", "choices": maybe([choice]),
             "usage": maybe({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}),
             "Content-Type": maybe("x"), "timings": _json_value(rng, 1)}
    return {key: value for key, value in chunk.items() if rng.random() < 0.85}


def test_five_hundred_odd_chunks_parse_identically(library_parse):
    rng = random.Random(17)
    for _ in range(500):
        payload = _chunk(rng)
        fast, library = both_ways(payload)
        assert _same(fast, library), payload


def test_the_real_client_streams_the_same_chunks_with_the_patch(library_parse):
    reply = StubReply(text="Thought: look it up.", reasoning="first I think",
                      tool_calls=[("search", {"query": "Eiffel tower height"})], usage=(12, 7))

    def stream() -> list[Any]:
        with StubLLMServer(lambda body: reply) as server:
            client = InferenceClient(base_url=server.url)
            return list(client.chat_completion(messages=[{"role": "user", "content": "hi"}], model="stub",
                                               stream=True, stream_options={"include_usage": True}))

    library = stream()
    assert hf_stream_parse.install()
    fast = stream()
    assert len(fast) == len(library) > 5
    for a, b in zip(fast, library, strict=True):
        b["id"], b.id = a["id"], a.id  # the only field a second request may change
        assert _same(a, b)
    assert fast[-1].usage.prompt_tokens == 12 and fast[0].choices[0].delta.reasoning == "first I "


def test_a_changed_library_leaves_the_patch_off_with_one_line(library_parse, monkeypatch, caplog):
    monkeypatch.setattr(hf_stream_parse, "WRITTEN_FOR", "0" * 16)
    monkeypatch.setattr(patches, "_decisions", {})
    with caplog.at_level(logging.WARNING, logger="patches"):
        assert not hf_stream_parse.install()
    assert "patch hf_stream_parse is off: the source of BaseInferenceType's parsing has changed" in caplog.text
    assert "parse_obj_as_instance" not in vars(ChatCompletionStreamOutput)


def test_a_class_that_is_no_longer_a_plain_dataclass_is_refused(monkeypatch):
    from huggingface_hub.inference._generated.types import ChatCompletionStreamOutputDelta

    monkeypatch.setattr(ChatCompletionStreamOutputDelta, "__post_init__", lambda self: None, raising=False)
    assert "ChatCompletionStreamOutputDelta is not a plain" in FastParse(ChatCompletionStreamOutput).problem
    assert "ChatCompletionStreamOutputDelta is not a plain" in hf_stream_parse.problem()


def test_turned_off_it_is_not_applied(library_parse, monkeypatch):
    monkeypatch.setenv(patches.ENV, "hf_stream_parse")
    monkeypatch.setattr(patches, "_decisions", {})
    assert not hf_stream_parse.install()
    assert "parse_obj_as_instance" not in vars(ChatCompletionStreamOutput)


def test_a_process_forked_after_install_keeps_it_without_a_warning(library_parse, monkeypatch, caplog):
    assert hf_stream_parse.install()
    monkeypatch.setattr(patches, "_decisions", {})  # what a forked run worker starts with
    with caplog.at_level(logging.WARNING, logger="patches"):
        assert hf_stream_parse.install()
        assert hf_stream_parse.problem() is None
    assert "hf_stream_parse" not in caplog.text
