"""Faults in the browser: one fault in one panel, seen as a visitor sees it (headless Chromium, Playwright).

Every fault of test_faults.py (which drives ``/compare`` through the API and checks the requests too), seen on
the page: a provider that is unavailable, 429 then success, a 400 for ``stop``, a reasoning model's empty
content, garbage instead of the format, a tool that hangs or raises, a reply cut mid-stream, and Stop on a
request that hangs.
"""

from __future__ import annotations

import re
import time

import pytest

import app
from agents import hosting
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer

pytestmark = pytest.mark.browser

PANELS = {"think": "#panel-think", "act": "#panel-act", "react": "#panel-react"}
TIMEOUT_S = 6.0  # LLM_TIMEOUT: Stop must end the hung request long before this


@pytest.fixture(scope="module")
def faults(kit):
    return kit.faults()


@pytest.fixture(scope="module")
def url(kit, faults):
    with StubLLMServer(faults.FaultPolicy(chunk_chars=8), latency=0.05, token_delay=0.005, chunk_chars=8) as stub:
        settings = LLMSettings.from_env({"LLM_BASE_URL": stub.url, "LLM_MODEL": "stub", "LLM_TIMEOUT": str(TIMEOUT_S)})
        demo = app.build_demo(settings=settings, registry=faults.fault_registry())
        with kit.launched(demo) as local_url:
            yield local_url


@pytest.fixture(scope="module")
def page(browser, url, kit):
    """One page for the module (loading Gradio's frontend costs seconds on 2 cores); each test runs anew."""
    with kit.open_page(browser, url) as pg:
        yield pg


def ask(pg, question: str) -> None:
    """Run ``question`` and wait until this run is under way (the status line says Running)."""
    pg.fill("#question textarea", question)
    pg.click("#run-btn")
    pg.wait_for_function("() => /Running/.test(document.querySelector('#run-status')?.innerText || '')",
                         timeout=10_000)


def wait_for_text(pg, selectors: list[str], text: str, timeout: float = 20_000) -> None:
    pg.wait_for_function("([sel, text]) => sel.every(s => (document.querySelector(s)?.innerText || '').includes(text))",
                         arg=[selectors, text], timeout=timeout)


def wait_until_done(pg, timeout: float = 20_000) -> str:
    pg.wait_for_function("() => /Done in/.test(document.querySelector('#run-status')?.innerText || '')",
                         timeout=timeout)
    return pg.inner_text("#run-status")


def others(victim: str) -> list[str]:
    return [s for m, s in PANELS.items() if m != victim]


def assert_clean(text: str) -> None:
    for bad in ("Traceback", "internal error", 'File "'):
        assert bad not in text, text


def fault_panel(pg, faults, fault: str, victim: str, *, everyone_answers: bool = False) -> tuple[str, str]:
    """Run with ``fault`` in ``victim``'s panel until Done and the others' answers are on screen (the victim's
    too with ``everyone_answers``): (the victim's panel text, checked clean of internals; the status line)."""
    ask(pg, faults.question(fault, victim, f"browser-{fault}-{victim}"))
    status = wait_until_done(pg)
    wait_for_text(pg, list(PANELS.values()) if everyone_answers else others(victim), "Final answer")
    text = pg.inner_text(PANELS[victim])
    assert_clean(text)
    return text, status


def test_unavailable_provider_in_one_panel(page, faults):
    think, status = fault_panel(page, faults, "503", "think")
    assert "unavailable" in think and "503" in think and "Final answer" not in think
    assert think.count("Model error") == 1
    assert all("396" in page.inner_text(s) for s in others("think"))
    assert "Think-only" in status and "1 of 3 modes failed" in status


def test_a_tool_that_raises_is_a_failed_step_and_the_loop_goes_on(page, faults):
    react, status = fault_panel(page, faults, "tool-raise", "react", everyone_answers=True)
    assert "broken_tool failed: RuntimeError" in react and "396" in react and "Model error" not in react
    assert status.startswith("✔"), status


@pytest.mark.parametrize(("fault", "victim", "shown"), [
    ("429", "react", None),  # retried after Retry-After: the answer, no error
    ("stop-400", "act", None),  # retried without `stop`
    ("garbage", "react", "forced"),  # re-prompted, then a forced answer
    ("tool-hang", "react", "slow_lookup timed out"),  # a failed step, and the loop went on
])
def test_a_fault_the_mode_recovers_from_ends_with_the_answer(page, faults, fault, victim, shown):
    panel, status = fault_panel(page, faults, fault, victim, everyone_answers=True)
    assert "Model error" not in panel and panel.count("Final answer") == 1, panel
    if shown == "forced":  # the toy model never keeps the format here, so the answer is the forced one
        assert "Format error" in panel and "forced" in panel.split("Final answer")[-1], panel
    else:
        assert "396" in panel.split("Final answer")[-1], panel
        assert shown is None or shown in panel, panel
    assert status.startswith("✔"), status


def test_a_reasoning_model_s_empty_content_is_one_line_naming_the_token_budget(page, faults):
    think, status = fault_panel(page, faults, "reasoning-only", "think")
    assert think.count("Model error") == 1 and re.search(r"token (budget|limit)", think) and "Final answer" not in think
    assert "Hidden reasoning" in think and "1 of 3 modes failed" in status, (think, status)


def test_stop_ends_a_hung_request_and_says_so(page, faults, kit):
    ask(page, faults.question("hang", "act", "browser-d"))
    wait_for_text(page, others("act"), "Final answer")
    host = hosting.default_host()  # the run lives in a worker process, as on the Space
    assert host.active_runs() == 1, "Act should be waiting for the hung server"
    stopped = time.monotonic()
    page.click("#stop-btn")
    page.wait_for_function("() => /Stopped/.test(document.querySelector('#run-status')?.innerText || '')",
                           timeout=10_000)
    while host.active_runs() and time.monotonic() - stopped < TIMEOUT_S:
        time.sleep(0.05)
    assert host.active_runs() == 0 and time.monotonic() - stopped < 3.0  # Stop ended it, not LLM_TIMEOUT (6 s)
    page.wait_for_timeout(500)
    kit.artifacts.mkdir(exist_ok=True)
    page.screenshot(path=str(kit.artifacts / "browser-fault-hung-stop.png"))
    act = page.inner_text(PANELS["act"])
    assert "Stopped" in act
    assert all("Final answer" in page.inner_text(s) for s in others("act"))  # the answers stay


def test_a_reply_cut_mid_stream_is_not_shown_as_the_answer(page, faults):
    """After the hung-request test: a cut reply teaches the app (and its worker) that the server serves one request
    at a time, which keeps later runs in this process."""
    think, _ = fault_panel(page, faults, "cut", "think")
    assert "Final answer" not in think and think.count("Model error") == 1
    assert re.search(r"(?i)partial|incomplete", think)  # the partial text is kept, marked, to read
    assert "Final Answer: 396" not in think
