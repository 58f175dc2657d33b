"""Step through in headless Chromium: Step on an example, Next step twice (three steps), Continue;
the panels and the status line show each pause, and every mode finishes."""

from __future__ import annotations

import pytest

from tests.stepping import calculator_steps

pytestmark = pytest.mark.browser
PANELS = ("#panel-think", "#panel-act", "#panel-react")


responder = calculator_steps(4, "396", lambda step: f"17 * 23 + {step}", guess="400")


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(responder, latency=0.02, token_delay=0.002) as local_url:
        yield local_url


def test_step_through_three_steps_then_continue(browser, url, kit):
    with kit.open_page(browser, url) as page:
        page.get_by_role("tab", name="Arithmetic traps").click()
        page.get_by_role("button", name="17 × 23 + 5").click()
        assert not page.locator("#next-btn").is_visible() and not page.locator("#continue-btn").is_visible()
        page.click("#step-btn")
        for step in (1, 2, 3):
            kit.wait_text(page, "#run-status", f"Paused after step {step} — Next step, Continue or Stop")
            for panel in ("#panel-act", "#panel-react"):
                assert f"Paused after step {step}" in page.inner_text(panel)
            assert "Final answer" in page.inner_text("#panel-think")  # Think-only: done in its one step
            assert "Final answer" not in page.inner_text("#panel-react")
            if step < 3:
                page.click("#next-btn")
        kit.artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(kit.artifacts / "browser-stepping-paused-1366x768.png"))
        page.click("#continue-btn")
        kit.wait_text(page, "#run-status", "Done")
        for panel in PANELS:
            assert "Final answer" in page.inner_text(panel)
        react = page.inner_text("#panel-react")
        assert "Paused after step 3" in react and "Paused after step 4" not in react and "396" in react
        page.wait_for_function("() => !document.querySelector('#next-btn')?.checkVisibility?.()", timeout=10_000)


def test_next_step_is_disabled_while_a_step_runs_and_enabled_when_the_run_waits(browser, kit):
    """A second click during a step is not offered: the button is disabled until the run waits again."""
    with (kit.app_on_stub(responder, latency=1.0, token_delay=0.002) as slow_url,
          kit.open_page(browser, slow_url) as page):
        page.fill("#question textarea", "What is 17 * 23 + 5?")
        page.click("#step-btn")
        next_btn = page.locator("#next-btn")
        next_btn.wait_for(state="visible", timeout=10_000)
        assert next_btn.is_disabled()  # the first step is still running
        kit.wait_text(page, "#run-status", "Paused after step 1")
        page.wait_for_function("() => !document.querySelector('#next-btn').disabled", timeout=10_000)
        next_btn.click()
        page.wait_for_function("() => document.querySelector('#next-btn').disabled", timeout=5_000)
        assert "Paused after step 2" not in page.inner_text("#run-status")  # the step takes the server's second
        next_btn.click(force=True)  # a click on the disabled button: nothing happens
        kit.wait_text(page, "#run-status", "Paused after step 2")
        page.wait_for_function("() => !document.querySelector('#next-btn').disabled", timeout=10_000)
        react = page.inner_text("#panel-react")
        assert "Paused after step 2" in react and "Paused after step 3" not in react  # one step per click
        page.click("#continue-btn")
        kit.wait_text(page, "#run-status", "Done")
