"""The page in headless Chromium (Playwright with the system Chromium) against the stub model.

Screenshots land in ``artifacts/`` (gitignored): 1366×768 after a run, and a phone-width one.
"""

from __future__ import annotations

import json
import time

import pytest

import app
from agents.events import FinalAnswer, Thought, TokenDelta, Usage
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from agents.trace import Trace

pytestmark = pytest.mark.browser

PAYLOAD = ('<img src=x onerror="window.__pwned=1"> <script>window.__pwned=1</script> <b>bold?</b> '
           '[click me](javascript:window.__pwned=1)')
PANELS = ("#panel-think", "#panel-act", "#panel-react")


def responder(body: dict) -> StubReply:
    """The toy model, plus an HTML payload answer and a very slow reply, chosen by the question."""
    question = next((str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user"), "")
    if "HTML test" in question:
        return StubReply(text=f"Thought: here it comes\nFinal Answer: {PAYLOAD}")
    if "slowly" in question:
        return StubReply(text="Thought: " + "pondering " * 300, token_delay=0.05)
    return toy_policy(body)


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(responder, latency=0.05, token_delay=0.005) as server:
        yield server


@pytest.fixture(scope="module")
def url(stub, kit):
    demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
    with kit.launched(demo) as local_url:
        yield local_url


@pytest.fixture
def page(browser, url, kit):
    with kit.open_page(browser, url) as pg:
        yield pg


def panel_text(pg, selector: str) -> str:
    return pg.inner_text(selector)


def wait_for_answers(pg, timeout: float = 30_000) -> None:
    pg.wait_for_function(
        "sel => sel.every(s => (document.querySelector(s)?.innerText || '').includes('Final answer'))",
        arg=list(PANELS), timeout=timeout)


def test_example_run_fills_three_panels_side_by_side(page, kit):
    kit.artifacts.mkdir(exist_ok=True)
    page.get_by_role("tab", name="Arithmetic traps").click()
    page.get_by_role("button", name="17 × 23 + 5").click()
    assert page.input_value("#question textarea") == "What is 17 * 23 + 5?"
    page.click("#run-btn")
    wait_for_answers(page)
    page.wait_for_selector("#comparison table")
    assert "396" in panel_text(page, "#panel-act") and "396" in panel_text(page, "#panel-react")
    assert "LLM call" in panel_text(page, "#metrics-react")
    boxes = [page.locator(s).bounding_box() for s in PANELS]
    assert abs(boxes[0]["y"] - boxes[2]["y"]) < 5 and boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"]
    assert all(b["width"] > 380 for b in boxes)  # three readable columns at 1366 px
    font = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#panel-react .message')).fontSize)")
    assert font >= 14
    page.wait_for_timeout(700)  # let the step boxes finish opening
    page.screenshot(path=str(kit.artifacts / "browser-1366x768.png"))
    # presentation mode enlarges the text, in the browser only
    kit.present(page)
    bigger = page.evaluate(
        "() => parseFloat(getComputedStyle(document.querySelector('#panel-react .message')).fontSize)")
    assert bigger >= font * 1.25
    page.wait_for_timeout(300)
    page.screenshot(path=str(kit.artifacts / "browser-1366x768-presentation.png"))
    assert page.external == []  # type: ignore[attr-defined]


def test_phone_width_stacks_the_panels(page, kit):
    page.set_viewport_size({"width": 400, "height": 860})
    page.fill("#question textarea", "What is 17 * 23 + 5?")
    page.click("#run-btn")
    wait_for_answers(page)
    boxes = [page.locator(s).bounding_box() for s in PANELS]
    assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"]
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 400 + 1  # nothing overflows sideways
    kit.artifacts.mkdir(exist_ok=True)
    page.screenshot(path=str(kit.artifacts / "browser-400-phone.png"), full_page=True)


def test_html_in_an_answer_is_shown_not_executed(page):
    page.fill("#question textarea", "HTML test: what does this render?")
    page.click("#run-btn")
    wait_for_answers(page)
    time.sleep(0.3)
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("#panels img[src='x'], #panels script, #panels b:text('bold?')").count() == 0
    assert page.locator("#panels a[href^='javascript']").count() == 0
    assert "<img src=x" in panel_text(page, "#panel-react")  # the markup is visible as text


def test_stop_stops_all_panels(page, stub):
    page.fill("#question textarea", "Think slowly about this")
    stub.requests.clear()
    page.click("#run-btn")
    page.wait_for_function(
        "sel => sel.every(s => (document.querySelector(s)?.innerText || '').includes('pondering'))",
        arg=list(PANELS), timeout=20_000)
    page.click("#stop-btn")
    page.wait_for_function(
        "sel => sel.every(s => (document.querySelector(s)?.innerText || '').includes('Stopped'))",
        arg=list(PANELS), timeout=10_000)
    deadline = time.monotonic() + 5
    while any(r.finished is None for r in stub.requests) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stub.requests and all(r.finished is not None for r in stub.requests)  # every stream closed
    page.wait_for_timeout(700)  # the kept partial reply, retitled "stopped", finishes re-opening its box
    before = [panel_text(page, s) for s in PANELS]
    time.sleep(1.0)
    assert [panel_text(page, s) for s in PANELS] == before  # nothing moves any more
    assert len(stub.requests) == 3


def test_replay_works_offline(page, tmp_path):
    trace = Trace("react", "Replayed question?")
    for t, event in enumerate([TokenDelta("Thought: from the file", "thought"), Usage(1, 1, 0.1),
                               Thought("from the file"), FinalAnswer("replayed 42")]):
        trace.add(event, t * 0.05)
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"question": "Replayed question?", "selection": "ReAct",
                                "traces": {"react": trace.to_dict()}}), encoding="utf-8")
    page.set_input_files("#replay-file input[type=file]", str(path))
    page.wait_for_timeout(500)
    page.click("#replay-btn")
    page.wait_for_function("() => (document.querySelector('#panel-react')?.innerText || '').includes('replayed 42')",
                           timeout=15_000)
    page.locator("#col-think").wait_for(state="hidden", timeout=10_000)  # the picker shows the recording's modes
    assert [t.strip() for t in page.locator("#modes .token").all_inner_texts()] == ["ReAct"]
    assert page.input_value("#question textarea") == "Replayed question?"
    assert page.external == []  # type: ignore[attr-defined]


def write_recording(path, question: str, events: list, **extra) -> str:
    trace = Trace("react", question)
    for t, event in events:
        trace.add(event, t)
    path.write_text(json.dumps({"question": question, "selection": "ReAct", "traces": {"react": trace.to_dict()},
                                **extra}), encoding="utf-8")
    return str(path)


def test_replayed_html_is_shown_not_executed(page, tmp_path):
    path = write_recording(tmp_path / "xss.json", PAYLOAD, [(0.0, TokenDelta(PAYLOAD)), (0.01, Thought(PAYLOAD)),
                                                          (0.02, FinalAnswer(PAYLOAD))],
                           settings={"backend": PAYLOAD})
    page.set_input_files("#replay-file input[type=file]", path)
    page.wait_for_timeout(500)
    page.click("#replay-btn")
    page.wait_for_function("() => (document.querySelector('#run-status')?.innerText || '').includes('Replay finished')",
                           timeout=15_000)
    time.sleep(0.3)
    assert page.evaluate("() => window.__pwned") is None
    unsafe = "#panels img[src='x'], #panels script, #run-status img, #panels a[href^='javascript']"
    assert page.locator(unsafe).count() == 0
    assert "<img src=x" in panel_text(page, "#panel-react")  # the markup is visible as text


def test_closing_the_page_ends_its_replay(browser, url, tmp_path):
    from ui.core.stream import live_count

    events = [(0.0, TokenDelta("Thought: a long day"))] + [(h * 3600.0, Thought(f"hour {h}")) for h in range(1, 24)]
    path = write_recording(tmp_path / "day.json", "A long day?", events + [(86_400.0, FinalAnswer("tomorrow"))])
    context = browser.new_context()
    pg = context.new_page()
    pg.goto(url)
    pg.wait_for_selector("#replay-btn")
    pg.set_input_files("#replay-file input[type=file]", path)
    pg.wait_for_timeout(500)
    pg.click("#replay-btn")
    pg.wait_for_function("() => (document.querySelector('#panel-react')?.innerText || '').includes('a long day')",
                         timeout=15_000)
    assert live_count() >= 1
    context.close()  # the visitor closes the tab
    deadline = time.monotonic() + 15
    while live_count() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_count() == 0  # the replay ended and its slot is free


def test_stop_ends_a_replay(page, tmp_path):
    events = [(0.0, TokenDelta("Thought: a long day")), (0.01, Thought("morning"))] + [
        (h * 3600.0, Thought(f"hour {h}")) for h in range(1, 24)]
    path = write_recording(tmp_path / "day.json", "A long day?", events + [(86_400.0, FinalAnswer("tomorrow"))])
    page.set_input_files("#replay-file input[type=file]", path)
    page.wait_for_timeout(500)
    page.click("#replay-btn")
    page.wait_for_function("() => (document.querySelector('#panel-react')?.innerText || '').includes('morning')",
                           timeout=15_000)
    page.click("#stop-btn")
    page.wait_for_function("() => (document.querySelector('#run-status')?.innerText || '').includes('Replay stopped')",
                           timeout=5_000)
    assert "Stopped" in panel_text(page, "#panel-react")


def test_stop_ends_a_benchmark_and_keeps_what_finished(page):
    page.get_by_role("tab", name="Benchmark").click()
    page.locator("#bench-run").click()
    page.wait_for_function("() => (document.querySelector('#bench-progress')?.innerText || '').includes('pairs')",
                           timeout=20_000)
    page.locator("#bench-stop").click()
    page.wait_for_function("() => (document.querySelector('#bench-progress')?.innerText || '').includes('Stopped at')",
                           timeout=10_000)
    text = page.inner_text("#bench-progress")
    assert "left" not in text  # no estimate for a run that is over
    time.sleep(1.0)
    assert page.inner_text("#bench-progress") == text  # nothing moves any more


def test_an_example_says_what_to_watch_and_a_codeact_one_sets_the_picker(page):
    page.get_by_role("tab", name="Arithmetic traps").click()
    page.get_by_role("button", name="17 × 23 + 5").click()
    page.wait_for_function("() => document.querySelector('#run-status').innerText.includes('What to watch')")
    assert "Think often gets it right" in page.inner_text("#run-status")
    assert not page.locator("#col-codeact").is_visible() and page.locator("#col-think").is_visible()
    page.get_by_role("tab", name="Several lookups, one program").click()
    page.get_by_role("button", name="Warmest of three cities").click()
    assert "Lisbon, Madrid or Rome" in page.input_value("#question textarea")
    page.wait_for_function("() => document.querySelector('#run-status').innerText.includes('loops over the three')")
    page.locator("#col-codeact").wait_for(state="visible", timeout=10_000)  # the picker's change opened it
    assert [t.strip() for t in page.locator("#modes .token").all_inner_texts()] == ["ReAct", "CodeAct"]
    assert not page.locator("#col-think").is_visible() and page.locator("#col-react").is_visible()
