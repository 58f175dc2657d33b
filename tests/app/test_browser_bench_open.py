"""Benchmark → Compare in headless Chromium: after a benchmark, an item opens side by side in the Compare panels."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.02, token_delay=0.001) as local_url:
        yield local_url


def test_a_benchmark_item_opens_in_the_compare_panels(browser, url, kit):
    with kit.open_page(browser, url) as page:
        kit.benchmark_all_items(page, 2, timeout=60_000)
        page.click("#bench-item input")  # the list opens; the second item is picked
        option = page.get_by_role("option").nth(1)
        label = option.inner_text()
        option.click()
        assert page.input_value("#bench-item input") == label
        page.click("#bench-open")
        page.wait_for_function("() => (document.querySelector('#run-status')?.innerText || '')"
                               ".includes('Benchmark item')",
                               timeout=15_000)
        assert page.locator("#panel-react").is_visible()  # the Compare tab is in front
        question = page.input_value("#question textarea")
        assert question and question[:30] in label
        assert "Final answer" in page.inner_text("#panel-react") or "error" in page.inner_text("#panel-react").lower()
        assert "ReAct" in page.inner_text("#comparison")
        kit.artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(kit.artifacts / "browser-bench-open-1366x768.png"))


def test_the_runs_line_follows_n_k_and_the_modes_before_any_run(browser, url, kit):
    """The calls a request makes (N × k × modes) are on the page before Run, and follow the form as it changes."""
    with kit.open_page(browser, url) as page:
        page.get_by_role("tab", name="Benchmark").click()
        assert page.inner_text("#bench-runs").startswith("30 runs if it starts: 10 items × 1 try × 3 modes")
        for label, value in (("N (items)", "2"), ("k (tries per item)", "3")):
            box = page.get_by_label(label).first
            box.fill(value)
            box.press("Enter")
        page.get_by_label("ReAct (placebo example)", exact=True).check()
        kit.wait_text(page, "#bench-runs", "24 runs if it starts: 2 items × 3 tries × 4 modes", timeout=15_000)
        assert page.inner_text("#bench-progress") == ""  # nothing ran
