"""Faults through the whole app: one fault in one panel at a time, through ``/compare``; and nothing leaks.

The real ``InferenceClient`` talks to the local stub server, whose responder (``fault_kit.FaultPolicy``)
breaks only the mode named in the question — by HTTP status, a hung or cut stream, a reasoning-only
reply, garbage instead of the format — while the tools that hang or raise are real tools in the app's
registry. Each test checks the faulty panel ends with an answer (a fault that retries or re-prompts) or
with exactly one clear line, the other panels finish with their answers, and the status line says which
mode failed. The leak tests run the app in its own process and count its threads and file descriptors
(and its run workers': the second test sends its runs there, as in production).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections import Counter

import pytest
from gradio_client import Client

import app
from agents import hosting
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer

TIMEOUT_S = 3.0  # LLM_TIMEOUT for the launched app: the hung request ends here, healthy calls take ~0.2 s
TITLES = {"think": "Think-only", "act": "Act-only", "react": "ReAct"}
MODES = tuple(TITLES)
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
    return "run-" + "".join(chr(ord("a") + int(d)) for d in f"{next(_nonce):06d}")  # fixed width: no prefixes


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
    if "token" not in pattern:  # only a reply with no content at all is an "empty answer"
        assert "empty answer" not in lines[0], lines[0]
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
    """Settings as the app reads them from its environment (with a whole-call limit, LLM_MAX_DURATION). The stub
    serves many requests at once, as the owner says (``LLM_MAX_CONCURRENT=0``): its cut replies, made while other
    streams are open, would otherwise teach the run workers it serves one at a time (agents/llm/gate.py), and a
    later test's hung call would hold every other call back."""
    return LLMSettings.from_env({"LLM_BASE_URL": url, "LLM_MODEL": "stub", "LLM_TIMEOUT": str(timeout),
                                 "LLM_MAX_DURATION": "30", "LLM_MAX_CONCURRENT": "0"})


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
    # one corrective re-prompt; the same garbage again is not re-prompted but forced (agents/modes/base.py)
    assert sum("Format error" in title_of(m) for m in panel) == 1
    assert len(final_answers(panel)) == 1 and "forced" in final_answers(panel)[0]
    assert error_lines(panel) == []
    assert result[6].startswith("✔ Done"), result[6]


# --------------------------------------------------------------------------------------------------
# Faults that end the panel: one clear line, the others finish, the status says which mode failed
# --------------------------------------------------------------------------------------------------


def assert_status_names(status: str, victim: str) -> None:
    assert "Done" in status and TITLES[victim] in status and "1 of 3 modes failed" in status, status
    assert "all 3 modes" not in status and "The run failed" not in status


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
    assert TIMEOUT_S - 0.5 <= elapsed < TIMEOUT_S + 8  # well before the 60 s default; loose for a busy CI
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


def test_reply_cut_before_any_text_is_not_blamed_on_the_timeout(client, faults):
    _, result, _ = run(client, faults, "cut-early", "think")
    assert_healthy(result, "think")
    line = assert_one_clear_line(result[0], r"clos|dropp|connection|ended the reply")
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

    host = hosting.default_host()  # the run lives in a worker process, as on the Space
    assert host.active_runs() == 1, "Act should still be waiting for the hung server"
    # meanwhile the Act panel says it is waiting (not an empty panel that looks like it was never run)
    assert [title_of(m) for m in job.outputs()[-1][1]] == ["⋯ Waiting for the model…"]
    stopped = time.monotonic()
    job.cancel()
    while host.active_runs() and time.monotonic() - stopped < TIMEOUT_S:
        time.sleep(0.02)
    # the worker joined Act's thread (its read aborted): Stop, not LLM_TIMEOUT (~2.4 s away), ended it
    assert host.active_runs() == 0 and time.monotonic() - stopped < 2.0


def test_status_line_counts_failed_modes_honestly():
    from agents.events import FinalAnswer, LLMError
    from agents.trace import Trace
    from ui.core.frame import run_status

    def trace(mode: str, *events) -> Trace:
        t = Trace(mode, "q")
        for e in events:
            t.add(e)
        return t

    ok, bad = FinalAnswer("396"), LLMError("the provider is unavailable (HTTP 503) after 3 tries")
    assert run_status({m: trace(m, ok) for m in MODES}, 1.0, "stub").startswith("✔ Done in 1.0 s on stub.")
    one = run_status({"think": trace("think", bad), "act": trace("act", ok), "react": trace("react", ok)}, 1, "s")
    assert one.startswith("⚠ Done") and "1 of 3 modes failed: Think-only" in one and "HTTP 503" in one
    every = run_status({m: trace(m, bad) for m in MODES}, 1, "s")
    assert "all 3 modes failed" in every and "✔" not in every
    alone = run_status({"act": trace("act", bad)}, 1, "s")
    assert "the mode failed" in alone and "Act-only" in alone and "modes failed" not in alone


# --------------------------------------------------------------------------------------------------
# Nothing leaks: 100 faulty runs and 50 Stops, then the app process's threads and fds are back
# (the app process, its visitors and the accounting are in fault_kit.py: AppProcess, RestClient, settled …)
# --------------------------------------------------------------------------------------------------


def _check_run(outputs: list, fault: str, victim: str) -> None:
    """The victim's panel ended with an answer or exactly one clear line; the others answered."""
    assert_healthy(outputs, victim)
    panel = outputs[MODES.index(victim)]
    assert_no_internals(panel)
    assert len(final_answers(panel)) + len(error_lines(panel)) == 1, panel_text(panel)
    if fault != "reasoning-only":
        assert "empty answer" not in panel_text(panel), panel_text(panel)


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("in_workers", [
    pytest.param(False, id="in-process"),
    pytest.param(True, id="run-workers", marks=pytest.mark.skipif(
        os.geteuid() != 0, reason="needs root: the run workers are non-dumpable, so only root may count their "
                                  "threads and descriptors in /proc")),
])
def test_faulty_runs_and_stops_leak_no_threads_or_fds(faults, tmp_path, in_workers):
    """100 faulty runs and 50 Stops, five visitors at once; then the app's threads and fds are back to baseline.

    in-process: the fault registry (tools that hang and raise, declared in the app's ``__main__``, which no other
    process can import) keeps every run in the app's process (agents/hosting's LocalHost); Stops close the stream
    (Gradio's /cancel, as a closed tab does). run-workers: the production path — the app's own tools, so every
    run goes to a worker process and the faults are the stub's alone; half the Stops press the Stop button;
    each worker is back to its baseline too."""
    from concurrent.futures import ThreadPoolExecutor

    kinds = faults.SERVER_FAULTS if in_workers else faults.LEAK_FAULTS
    tools = {"tools": ("calculate",)} if in_workers else {}  # run-workers: the toy model's tool, the app's own
    with StubLLMServer(faults.FaultPolicy(chunk_chars=8), latency=0.05, token_delay=0.002, chunk_chars=8) as stub:
        # the stub serves many requests at once: its "cut" replies, made while others are open, would teach the
        # app it serves one at a time (agents/llm/gate.py), and then a hung call holds every call (and run) back
        serves_many = {"LLM_MAX_CONCURRENT": "0"}
        proc = faults.AppProcess(stub.url, tmp_path, default_registry=in_workers, settings=serves_many)
        slow_stops: dict[str, float] = {}  # question → when Stop was sent

        def visit(first: int, runs: int, stops: int) -> None:
            """Five visitors at once: ``runs`` faulty runs, then ``stops`` Stops; our client closed after."""
            def faulty(job: tuple[str, str, str]) -> None:
                fault, victim, protocol = job
                _check_run(rest.run(faults.question(fault, victim, nonce()), protocol), fault, victim)

            def stop(i: int) -> None:  # a hung request, or a reply streaming steadily
                faults.stop_run(rest, i, nonce(), slow_stops, via="button" if in_workers and i % 2 else "cancel")

            with contextlib.closing(faults.RestClient(proc.url, **tools)) as rest, ThreadPoolExecutor(5) as pool:
                list(pool.map(faulty, faults.faulty_jobs(runs, first, kinds, both_protocols=in_workers)))
                list(pool.map(stop, range(stops)))

        try:
            visit(0, len(kinds), 10)  # warm up the pools (same concurrency as below), then take the baseline
            time.sleep(faults.HANG_S + 0.5)  # the warm-up's hung tool call ends
            workers = proc.children() if in_workers else []
            base_names, baseline = proc.thread_names(), proc.counts()
            base_workers, cpu = {p: proc.counts(p) for p in workers}, {p: faults.cpu_ticks(p) for p in workers}
            visit(len(kinds), 100, 50)

            threads, fds, names, pools, now = faults.settled(proc, baseline, base_names, workers=base_workers)
            extra = sorted((Counter(faults.non_pool(names)) - Counter(faults.non_pool(base_names))).elements())
            assert extra == [], f"threads left behind in the app: {extra}"
            # no more threads outside the pools than at the baseline (one of its own may have ended since)
            assert threads - pools <= baseline[0] - sum(faults.kind(n) in faults.POOL_THREADS for n in base_names)
            assert all(sum(faults.kind(n) == k for n in names) <= cap for k, cap in faults.POOL_THREADS.items())
            assert fds <= baseline[1] + faults.FD_TOLERANCE, (baseline, fds)
            if in_workers:
                assert len(workers) == hosting.DEFAULT_WORKERS and proc.children() == workers, "a worker was replaced"
                assert all(faults.cpu_ticks(p) > cpu[p] + 20 for p in workers), "the runs did not go to the workers"
                assert all(now[p][0] == base_workers[p][0] and now[p][1] <= base_workers[p][1] + faults.FD_TOLERANCE
                           for p in workers), f"a worker's (threads, fds) did not come back: {base_workers} → {now}"
            # every Stop closed its streams at once: none of the 10 s "slowly" replies ran on, nor to LLM_TIMEOUT
            faults.assert_stops_closed_streams(stub, slow_stops, expected=3 * (8 + 40))
        finally:
            proc.close()
