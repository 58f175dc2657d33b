"""The app on loopback, driven through gradio_client against the local OpenAI-compatible stub server."""

from __future__ import annotations

import json
import threading
import time

import gradio as gr
import pytest
from gradio_client import Client, handle_file

import app
from agents.llm.settings import NOT_CONFIGURED, LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from ui.core.frame import output_index
from ui.core.modes import PANEL_MODES
from ui.page.parts import TEXT_ONLY_NOTE

QUESTION = "What is 17 * 23 + 5?"
# 3 panels, 3 metrics, status, table, export files, the panel beside and its metrics (the outputs before the mode
# picker, unchanged), then a panel and a metrics line per further panel mode, then the step-aligned map
# (ui/core/frame.py)
N_OUTPUTS = 2 * len(PANEL_MODES) + 6


def text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def panel_text(panel: list) -> str:
    return "\n".join(text_of(m) + " " + str((m.get("metadata") or {}).get("title", "")) for m in panel or [])


def think_fails(body: dict) -> StubReply:
    """The toy model, except that Think-only's request is refused with HTTP 401."""
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    if "without any tools" in system:
        return StubReply(status=401, error_body="bad token")
    return toy_policy(body)


def slow_policy(body: dict) -> StubReply:
    return StubReply(text="Thought: " + "thinking " * 400, token_delay=0.05)


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(latency=0.3, token_delay=0.02) as server:
        yield server


@pytest.fixture(scope="module")
def client(stub, kit):
    demo = app.build_demo(settings=kit.settings(stub, token="hf_SECRET_TOKEN_XYZ"), registry=kit.registry())
    with kit.launched(demo) as url:
        yield Client(url, verbose=False)


def first_requests_overlap(requests) -> bool:
    """The first request of each of the three modes ran at the same time (not one after another)."""
    first = sorted(requests, key=lambda r: r.started)[:3]
    return max(r.started for r in first) < min(r.finished for r in first)


def test_compare_streams_three_panels_in_parallel(client, stub):
    stub.requests.clear()
    job = client.submit(question=QUESTION, mode="All", api_name="/compare")
    updates = list(job)
    final = job.result()
    assert len(final) == N_OUTPUTS
    # several streamed updates, and panels that grew token by token before the answers arrived
    assert len(updates) >= 5
    partial = [u for u in updates if any(u[i] for i in range(3)) and "Final answer" not in panel_text(u[2])]
    assert len(partial) >= 2
    assert any("Writing" in panel_text(u[i]) for u in updates for i in range(3))
    think, act, react = (panel_text(p) for p in final[:3])
    assert "Final answer" in think and "Final answer" in act and "Final answer" in react
    assert "396" in act and "396" in react
    assert "calculate" in react and "Observation 1" in react
    assert all("LLM call" in m for m in final[3:6])
    assert "Done" in final[6] and "Agrees with" in final[7] and "Act-only and ReAct agree" in final[7]
    assert "step-map" in final[-1] and "calculate(17 * 23 + 5)" in final[-1]  # the map, the last output
    # the three LLM streams overlapped in time
    assert len(stub.requests) >= 5
    assert first_requests_overlap(stub.requests)


def test_predict_with_only_question_and_mode(client):
    result = client.predict(question=QUESTION, mode="All", api_name="/compare")
    assert len(result) == N_OUTPUTS and "396" in panel_text(result[2])


def test_export_files_hold_the_trace_and_no_token(client):
    result = client.predict(question=QUESTION, mode="ReAct", api_name="/compare")
    paths = result[8]
    json_path = next(p for p in paths if p.endswith(".json"))
    md_path = next(p for p in paths if p.endswith(".md"))
    data = json.load(open(json_path, encoding="utf-8"))
    markdown = open(md_path, encoding="utf-8").read()
    assert "hf_SECRET" not in json.dumps(data) + markdown
    assert data["question"] == QUESTION and data["selection"] == "ReAct" and list(data["traces"]) == ["react"]
    assert data["settings"]["model"] == "stub" and data["settings"]["tools"] == ["calculate"]
    assert any(e["kind"] == "token" for e in data["traces"]["react"]["events"])
    assert "### ReAct" in markdown and "396" in markdown
    # ... and replays with no model: the replay endpoint plays it back into the panels
    replayed = client.predict(handle_file(json_path), "instant", api_name="/replay")
    assert "396" in panel_text(replayed[2]) and "not run" in panel_text(replayed[0])


def test_single_mode_leaves_the_others_not_run(client):
    result = client.predict(question=QUESTION, mode="Act", api_name="/compare")
    assert "not run" in panel_text(result[0]) and "not run" in panel_text(result[2])
    assert "396" in panel_text(result[1])
    assert result[3] == "_not run_" or "not run" in result[3]


@pytest.mark.parametrize(("question", "why"), [("   ", "Please type a question"), ("x" * 2001, "limit is 2,000")])
def test_bad_input_is_refused_without_an_llm_call(client, stub, question, why):
    stub.requests.clear()
    result = client.predict(question=question, mode="All", api_name="/compare")
    assert why in result[6] and why in panel_text(result[1])
    assert stub.requests == []


def test_settings_reach_the_model(client, stub):
    stub.requests.clear()
    client.predict(question=QUESTION, mode="Act", model="other-model", protocol="tools", max_steps=2,
                   temperature=0.7, tools=["calculate"], api_name="/compare")
    body = stub.requests[0].body
    assert body["model"] == "other-model" and body["temperature"] == 0.7 and body.get("tools")
    assert body["max_tokens"] == 2048  # LLM_MAX_TOKENS' default, when the API call leaves it out


def test_max_tokens_is_the_last_compare_input_and_reaches_the_model(client, stub):
    stub.requests.clear()
    client.predict(QUESTION, "Think", "stub", "text", 5, 0.2, ["calculate"], "None", 64, api_name="/compare")
    assert [r.body["max_tokens"] for r in stub.requests] == [64]


def test_prompts_view(client):
    think, act, react, *others = client.predict(protocol="tools", max_steps=3, tools=["calculate"], api_name="/prompts")
    assert "calculate" in act and "[tools" in act and "at most 3" not in think
    assert len(others) == 4 and "calculate(" in others[0]  # CodeAct: the tools as Python functions
    assert "[system]" in react and "<question>" in react
    reflexion = others[1]  # each trial's first request is ReAct's; then the memory note, the check, the reflection
    assert reflexion.startswith(react) and "[reflexion.md]" in reflexion and "[reflexion_check.md]" in reflexion
    assert "<reflections>" in reflexion and "$" not in reflexion.removeprefix(react)
    worked, placebo = others[2:]  # the benchmark's placebo ablation: the same example, its thoughts neutral
    assert "Action Input: Alan Turing" in worked and "Thought: I will take the next step." in placebo
    for text_only in (worked, placebo):  # they run under the text protocol only: its prompt, saying so
        assert text_only.startswith(TEXT_ONLY_NOTE) and "[tools" not in text_only and "Action Input:" in text_only


def test_stop_closes_every_stream(kit):
    with StubLLMServer(responder=slow_policy) as slow:
        demo = app.build_demo(settings=kit.settings(slow), registry=kit.registry())
        with kit.launched(demo) as url:
            job = Client(url, verbose=False).submit(question="think slowly", mode="All", api_name="/compare")
            deadline = time.monotonic() + 20
            while len([r for r in slow.requests if r.first_byte]) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(slow.requests) == 3
            job.cancel()
            deadline = time.monotonic() + 5
            while any(r.finished is None for r in slow.requests) and time.monotonic() < deadline:
                time.sleep(0.05)
            # each stream would have taken ~2.5 s more; all three were closed promptly
            assert all(r.finished is not None for r in slow.requests)
            assert all(r.finished - r.first_byte < 2.0 for r in slow.requests)
            time.sleep(0.5)
            assert len(slow.requests) == 3  # and no mode went on to a new call


def test_model_error_stays_in_its_panel(kit):
    with StubLLMServer(responder=think_fails) as server:
        demo = app.build_demo(settings=kit.settings(server), registry=kit.registry())
        with kit.launched(demo) as url:
            result = Client(url, verbose=False).predict(question=QUESTION, mode="All", api_name="/compare")
    think, act, react = (panel_text(p) for p in result[:3])
    assert "Model error" in think and "refused" in think
    assert "396" in act and "396" in react and "Model error" not in act + react


def test_unconfigured_app_starts_and_explains_the_three_ways(kit):
    demo = app.build_demo(settings=LLMSettings(), registry=kit.registry())
    banner = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "setup-banner")
    assert "HF_TOKEN" in banner.value and "LLM_BASE_URL" in banner.value and banner.visible
    assert not any(isinstance(b, gr.LoginButton) for b in demo.blocks.values())
    with kit.launched(demo) as url:
        c = Client(url, verbose=False)
        result = c.predict(question=QUESTION, mode="All", api_name="/compare")
        assert NOT_CONFIGURED[:40] in result[6]
        assert "calculate" in c.predict(api_name="/prompts")[2]  # other tabs still work


@pytest.mark.filterwarnings("ignore:Gradio does not support OAuth features outside of a Space")
def test_login_button_only_on_a_space(kit, monkeypatch):
    import gradio.oauth

    # off a Space, Gradio mocks the login with the machine's own HF login (a Hub call): stub that out
    monkeypatch.setattr(gradio.oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {}})
    demo = app.build_demo(settings=LLMSettings(), registry=kit.registry(), on_space=True)
    assert any(isinstance(b, gr.LoginButton) for b in demo.blocks.values())


def test_many_visitors_run_at_once(client, stub):
    """Runs from different visitors are not serialized by the queue."""
    stub.requests.clear()
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(
        client.predict(question=QUESTION, mode="Think", api_name="/compare"))) for _ in range(4)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    wall = time.perf_counter() - start
    assert len(results) == 4
    assert wall < 30
    # all four were in flight at once (the proof the queue does not serialize them; a wall-clock ratio flaked
    # on a loaded machine, where the app's own CPU, not the queue, stretched the runs)
    assert max(r.started for r in stub.requests) < min(r.finished for r in stub.requests)


def test_replay_refuses_a_bad_file(client, tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_text("{not json", encoding="utf-8")
    result = client.predict(handle_file(str(junk)), "instant", api_name="/replay")
    assert "does not read" in result[6] and "does not read" in panel_text(result[0])


def test_the_older_fourth_input_runs_a_hybrid_beside_the_selected_mode(kit):
    """``mode`` and ``fourth`` as callers sent them before the mode picker: the same outputs at the same places (the
    hybrid's panel at 9 and its metrics at 10), and the hybrid in its own panel too."""
    with StubLLMServer(responder=toy_policy) as server:
        demo = app.build_demo(settings=kit.settings(server), registry=kit.registry())
        with kit.launched(demo) as url:
            client = Client(url, verbose=False)
            result = client.predict(question=QUESTION, mode="Think", fourth="ReAct → CoT-SC", api_name="/compare")
            refused = client.predict(question=QUESTION, mode="ReAct", fourth="Tree of Thoughts", api_name="/compare")
    assert len(result) == N_OUTPUTS
    assert "about 400" in panel_text(result[0]) and "not run" in panel_text(result[2]).lower()
    hybrid = panel_text(result[9])
    assert "Final answer" in hybrid and "396" in hybrid, hybrid  # ReAct answered, so no CoT-SC fallback
    assert "LLM call" in result[10]
    assert "ReAct → CoT-SC" in result[7]  # the comparison table includes the hybrid
    assert panel_text(result[output_index("react_cot_sc")]) == panel_text(result[9])
    assert "Unknown mode 'Tree of Thoughts' for `fourth`" in refused[6]


@pytest.mark.parametrize(("chosen", "shows"), [("CodeAct", "Call 1.1"), ("Reflexion", "Trial 1 of 3")])
def test_codeact_and_reflexion_run_export_and_replay_in_their_own_panels(client, chosen, shows):
    mode = chosen.lower()
    result = client.predict(question=QUESTION, mode=["think", mode], expected="396", api_name="/compare")
    assert len(result) == N_OUTPUTS and "not run" in panel_text(result[1]).lower() and result[9] == []
    others = [m for m in PANEL_MODES[3:] if m != mode]  # further modes not chosen: empty, their columns hidden
    assert all(result[output_index(m)] == [] and result[output_index(m, metrics=True)] == "" for m in others)
    shown = panel_text(result[output_index(mode)])
    assert shows in shown and "Final answer" in shown and "396" in shown, shown
    assert "| Correct | F1 |" in result[7] and f"**{chosen}**" in result[7]  # its row in the table, graded
    assert "LLM call" in result[output_index(mode, metrics=True)]
    export = next(p for p in result[8] if p.endswith(".json"))
    assert list(json.load(open(export, encoding="utf-8"))["traces"]) == ["think", mode]
    replayed = client.predict(handle_file(export), "instant", api_name="/replay")
    own = panel_text(replayed[output_index(mode, files=False)])  # replay has no files output
    assert shows in own and "396" in own and replayed[-2] == ["think", mode]  # the picker, then the map
    assert "step-map" in replayed[-1] and "Answer" in replayed[-1]
