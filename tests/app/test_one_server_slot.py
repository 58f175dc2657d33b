"""A one-request-at-a-time server and the limit on calls in flight, through the whole app as it is really run: the
default tools (so live Compare runs go to the run workers, ``APP_RUN_WORKERS``' default) against a stub that serves
one request at a time and aborts the one in flight when another arrives, as llama-cpp-python's server does.

``LLM_MAX_CONCURRENT`` is "at most this many model calls in flight per app process": it must hold for
everything the app runs at once (Compare, the Benchmark tab, a second visitor), whichever process a
run's threads live in. ``LLM_MAX_TOKENS`` is shown in the settings panel and is what a call sends.
"""

from __future__ import annotations

import json
import threading

import pytest
from gradio_client import Client, handle_file

import app
from agents.llm.stub_server import StubLLMServer, toy_policy
from tools import default_registry
from ui.benchmark import tab as bt

QUESTION = "What is 17 * 23 + 5?"
MAX_TOKENS = 256


def slow_toy(body):
    """The toy model, slow enough that requests started together overlap even on a loaded machine."""
    reply = toy_policy(body)
    reply.first_token_delay, reply.token_delay = 0.2, 0.01
    return reply


@pytest.fixture(scope="module")
def one_slot(kit):
    """The app with every default tool, LLM_MAX_CONCURRENT=1 and LLM_MAX_TOKENS=256, on a one-slot server."""
    with StubLLMServer(responder=slow_toy, one_at_a_time=True) as stub:
        settings = kit.settings(stub, max_concurrent=1, max_tokens=MAX_TOKENS)
        demo = app.build_demo(settings=settings, registry=default_registry())
        with kit.launched(demo) as url:
            yield stub, demo, Client(url, verbose=False)


def test_the_limit_holds_across_compare_runs_and_a_benchmark(one_slot, kit, tmp_path):
    stub, _, client = one_slot
    panel_text = kit.panel_text
    data = tmp_path / "arith.jsonl"
    data.write_text(json.dumps({"question": "What is 12 * 12?", "answer": "144"}) + "\n", encoding="utf-8")
    stub.requests.clear()
    stub.max_in_flight = 0
    results: dict[str, object] = {}

    def compare(name: str) -> None:
        results[name] = Client(client.src, verbose=False).submit(question=QUESTION, mode="All",
                                                                 api_name="/compare")

    visitors = [threading.Thread(target=compare, args=(f"visitor {i}",)) for i in range(2)]
    for t in visitors:
        t.start()
    bench = client.submit(dataset=bt.UPLOAD, upload=handle_file(str(data)), n=1, modes=["act", "react"],
                          concurrency=2, sc_n=1, api_name="/benchmark")
    for t in visitors:
        t.join()
    streams = {name: list(job) for name, job in results.items()}  # every frame, to see the waiting ones
    finals = {name: job.result() for name, job in results.items()}
    assert bench.result()[0].startswith("✔ Done: 2 / 2 pairs"), bench.result()[0]
    assert stub.max_in_flight == 1, "two model calls were open at once on a one-request server"
    for name, final in finals.items():
        panels = [panel_text(p) for p in final[:3]]
        assert all("Final answer" in p for p in panels), (name, panels)
        assert "396" in panels[2] and "interrupted" not in " ".join(panels).lower(), name
    waited = [frame for frames in streams.values() for frame in frames
              if any("Waiting for the model server" in panel_text(frame[i]) for i in range(3))]
    assert waited, "no panel said it was waiting for the model server"


def test_the_settings_panel_shows_llm_max_tokens_and_a_call_sends_it(one_slot):
    stub, demo, client = one_slot
    boxes = [c for c in demo.config["components"]
             if c.get("type") == "number" and c.get("props", {}).get("label", "").lower().startswith("max tokens")]
    assert [c["props"]["value"] for c in boxes] == [MAX_TOKENS]
    stub.requests.clear()
    client.predict(question=QUESTION, mode="Act", api_name="/compare")
    assert stub.requests and {r.body["max_tokens"] for r in stub.requests} == {MAX_TOKENS}
