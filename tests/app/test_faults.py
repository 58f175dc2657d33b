"""Faults through the whole app: one fault in one panel at a time, through ``/compare``; and nothing leaks.

The real ``InferenceClient`` talks to the local stub server, whose responder (``fault_kit.FaultPolicy``)
breaks only the mode named in the question — by HTTP status, a hung or cut stream, a reasoning-only
reply, garbage instead of the format — while the tools that hang or raise are real tools in the app's
registry. Each test checks the faulty panel ends with an answer (a fault that retries or re-prompts) or
with exactly one clear line, the other panels finish with their answers, and the status line says which
mode failed. The leak test runs the app in its own process and counts its threads and file descriptors.
"""

from __future__ import annotations

import re
import threading
import time

import pytest
from gradio_client import Client

import app
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer

TIMEOUT_S = 3.0  # LLM_TIMEOUT for the launched app: the hung request ends here, healthy calls take ~0.2 s
TITLES = {"think": "Think-only", "act": "Act-only", "react": "ReAct"}
MODES = tuple(TITLES)
NEEDS_LLM = "needs branch llm: "
_nonce = iter(range(10**6))


def text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def title_of(message: dict) -> str:
    return str((message.get("metadata") or {}).get("title") or "")


def panel_text(panel: list) -> str:
    return "\n".join(f"{text_of(m)} {title_of(m)}" for m in panel or [])


def error_lines(panel: list) -> list[str]:
    """The panel's '⚠ Model error' lines (and the '⚠ Ended without an answer' note, which is a failure too)."""
    return [text_of(m) for m in panel or [] if text_of(m).startswith("⚠")]


def final_answers(panel: list) -> list[str]:
    return [text_of(m) for m in panel or [] if "Final answer" in text_of(m)]


def nonce() -> str:
    """Letters only, so the toy model's arithmetic reader never mistakes it for part of the question."""
    return "run-" + "".join(chr(ord("a") + int(d)) for d in str(next(_nonce)))


def assert_no_internals(panel: list) -> None:
    text = panel_text(panel)
    for bad in ("Traceback", "internal error", "Exception:", 'File "'):
        assert bad not in text, text


def assert_healthy(panels: list, victim: str) -> None:
    """Every panel but the victim's finished with an answer (396 from the calculator where tools exist)."""
    for i, mode in enumerate(MODES):
        if mode == victim:
            continue
        assert_no_internals(panels[i])
        assert error_lines(panels[i]) == [], panel_text(panels[i])
        assert len(final_answers(panels[i])) == 1, panel_text(panels[i])
        if mode != "think":
            assert "396" in final_answers(panels[i])[0]


def assert_one_clear_line(panel: list, pattern: str) -> str:
    """The faulty panel: no answer, exactly one error line, matching ``pattern``, and no internals."""
    assert_no_internals(panel)
    assert final_answers(panel) == [], panel_text(panel)
    lines = error_lines(panel)
    assert len(lines) == 1, lines
    assert re.search(pattern, lines[0], re.I), lines[0]
    assert "\n" not in lines[0].strip()
    return lines[0]


def requests_of(stub: StubLLMServer, question: str, mode: str, faults) -> list:
    return [r for r in list(stub.requests)
            if faults.mode_of(r.body) == mode and question in str(r.body["messages"][1].get("content"))]


@pytest.fixture(scope="module")
def faults(kit):
    return kit.faults()


@pytest.fixture(scope="module")
def stub(faults):
    with StubLLMServer(faults.FaultPolicy(chunk_chars=8), latency=0.05, token_delay=0.002, chunk_chars=8) as server:
        yield server


def env_settings(url: str, timeout: float = TIMEOUT_S) -> LLMSettings:
    """Settings as the app reads them from its environment (LLM_MAX_DURATION is read once branch llm is in)."""
    return LLMSettings.from_env({"LLM_BASE_URL": url, "LLM_MODEL": "stub", "LLM_TIMEOUT": str(timeout),
                                 "LLM_MAX_DURATION": "30"})


@pytest.fixture(scope="module")
def client(stub, kit, faults):
    demo = app.build_demo(settings=env_settings(stub.url), registry=faults.fault_registry())
    with kit.launched(demo) as url:
        yield Client(url, verbose=False)


def run(client, faults, fault: str, victim: str, **options) -> tuple[str, list, float]:
    """One All run with ``fault`` in ``victim``'s panel → (question, final outputs, seconds)."""
    question = faults.question(fault, victim, nonce())
    options.setdefault("max_steps", 3)
    start = time.monotonic()
    result = client.predict(question=question, mode="All", api_name="/compare", **options)
    return question, result, time.monotonic() - start


# --------------------------------------------------------------------------------------------------
# Faults the engine recovers from: the faulty panel still finishes with the answer
# --------------------------------------------------------------------------------------------------


def test_429_with_retry_after_then_success(client, stub, faults):
    question, result, _ = run(client, faults, "429", "react")
    assert_healthy(result, "react")
    assert_no_internals(result[2])
    assert error_lines(result[2]) == [] and "396" in final_answers(result[2])[0]
    first, second = requests_of(stub, question, "react", faults)[:2]
    assert second.started - first.finished >= 0.15  # Retry-After: 0.2 was honoured
    assert result[6].startswith("✔ Done"), result[6]


@pytest.mark.parametrize("victim", ["act", "react"])
def test_400_for_stop_is_retried_without_stop(client, stub, faults, victim):
    question, result, _ = run(client, faults, "stop-400", victim)
    i = MODES.index(victim)
    assert_healthy(result, victim)
    assert error_lines(result[i]) == [] and "396" in final_answers(result[i])[0], panel_text(result[i])
    bodies = [r.body for r in requests_of(stub, question, victim, faults)]
    assert bodies[0].get("stop") and not bodies[1].get("stop")
    assert result[6].startswith("✔ Done"), result[6]


@pytest.mark.parametrize("protocol", ["text", "tools"])
@pytest.mark.parametrize(("fault", "victim", "observation"), [
    ("tool-hang", "react", "slow_lookup timed out after 0.3 s"),
    ("tool-raise", "act", "broken_tool failed: RuntimeError: boom"),
])
def test_a_tool_that_hangs_or_raises_is_an_error_observation(client, faults, fault, victim, observation, protocol):
    _, result, elapsed = run(client, faults, fault, victim, protocol=protocol)
    i = MODES.index(victim)
    assert_healthy(result, victim)
    text = panel_text(result[i])
    assert observation in text and "✗ Observation 1" in text  # shown as a failed step …
    assert "⚙ Action 2: calculate" in text and "396" in final_answers(result[i])[0]  # … and the loop went on
    assert error_lines(result[i]) == [] and "Traceback" not in text
    assert elapsed < faults.HANG_S + 5  # the hung tool did not hold the run for its whole sleep
    assert result[6].startswith("✔ Done"), result[6]


def test_garbage_instead_of_the_format_is_re_prompted_then_forced(client, faults):
    _, result, _ = run(client, faults, "garbage", "react", max_steps=2)
    assert_healthy(result, "react")
    panel = result[2]
    assert_no_internals(panel)
    assert sum("Format error" in title_of(m) for m in panel) == 2  # one corrective re-prompt per step
    assert len(final_answers(panel)) == 1 and "forced" in final_answers(panel)[0]
    assert error_lines(panel) == []
    assert result[6].startswith("✔ Done"), result[6]


# --------------------------------------------------------------------------------------------------
# Faults that end the panel: one clear line, the others finish, the status says which mode failed
# --------------------------------------------------------------------------------------------------


def assert_status_names(status: str, victim: str) -> None:
    assert "Done" in status and TITLES[victim] in status and "error" in status, status
    assert "every mode" not in status and "The run failed" not in status


def test_503_three_times_is_one_unavailable_line(client, stub, faults):
    question, result, _ = run(client, faults, "503", "think")
    assert_healthy(result, "think")
    assert_one_clear_line(result[0], r"unavailable.*503")
    assert len(requests_of(stub, question, "think", faults)) == 3
    assert_status_names(result[6], "think")


def test_hung_request_ends_at_llm_timeout(client, faults):
    _, result, elapsed = run(client, faults, "hang", "act")
    assert_healthy(result, "act")
    assert_one_clear_line(result[1], r"LLM_TIMEOUT|in time|within")
    assert TIMEOUT_S - 0.5 <= elapsed < TIMEOUT_S + 4
    assert_status_names(result[6], "act")


@pytest.mark.parametrize("victim", ["think", "react"])
def test_reply_cut_mid_stream_is_never_the_answer(client, faults, victim):
    """The answer "396" is cut after "39": the panel keeps the partial text marked, and has no answer."""
    _, result, _ = run(client, faults, "cut", victim)
    i = MODES.index(victim)
    assert_healthy(result, victim)
    assert_one_clear_line(result[i], r"mid-reply|closed|dropped")
    partial = [m for m in result[i] if "Final Answer: 39" in text_of(m)]
    assert partial and re.search(r"partial|incomplete", title_of(partial[0]), re.I)  # shown, marked
    assert "Final Answer: 396" not in panel_text(result[i])
    assert_status_names(result[6], victim)


@pytest.mark.xfail(reason=NEEDS_LLM + "a connection closed before any text is retried and then reported as "
                   "closed, not as 'no complete reply within LLM_TIMEOUT' (the retries' backoff eats the "
                   "whole-call deadline today)", strict=False)
def test_reply_cut_before_any_text_is_not_blamed_on_the_timeout(client, faults):
    _, result, _ = run(client, faults, "cut-early", "think")
    assert_healthy(result, "think")
    line = assert_one_clear_line(result[0], r"clos|dropp|connection")
    assert "LLM_TIMEOUT" not in line and "empty answer" not in line
    assert_status_names(result[6], "think")


def test_empty_content_from_a_reasoning_model_names_the_token_budget(client, faults):
    _, result, _ = run(client, faults, "reasoning-only", "think")
    assert_healthy(result, "think")
    assert_one_clear_line(result[0], r"token (budget|limit)")
    assert any("Hidden reasoning" in title_of(m) for m in result[0])  # the reasoning is still there to read
    assert_status_names(result[6], "think")


def test_stop_ends_a_hung_request_at_once(client, faults):
    """Think and ReAct finish; Act hangs waiting for headers; Stop ends it long before LLM_TIMEOUT."""
    question = faults.question("hang", "act", nonce())
    job = client.submit(question=question, mode="All", api_name="/compare")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        outputs = job.outputs()
        if outputs and all(final_answers(outputs[-1][i]) for i in (0, 2)):
            break
        time.sleep(0.05)
    else:
        pytest.fail("Think and ReAct did not finish beside the hung Act")

    def act_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "mode-act"]

    assert act_threads(), "Act should still be waiting for the hung server"
    stopped = time.monotonic()
    job.cancel()
    while act_threads() and time.monotonic() - stopped < TIMEOUT_S:
        time.sleep(0.02)
    assert not act_threads() and time.monotonic() - stopped < 1.5  # Stop, not LLM_TIMEOUT, ended it
