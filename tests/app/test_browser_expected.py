"""The expected answer in headless Chromium: an example fills it, the table marks each mode ✓ / ✗."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.05, token_delay=0.005) as local_url:
        yield local_url


def test_example_fills_expected_and_the_table_marks_each_mode(browser, url, kit):
    with kit.open_page(browser, url) as page:
        page.get_by_role("tab", name="Arithmetic traps").click()
        page.get_by_role("button", name="17 × 23 + 5").click()
        assert page.input_value("#question textarea") == "What is 17 * 23 + 5?"
        assert page.input_value("#expected textarea, #expected input") == "396"
        page.click("#run-btn")
        page.wait_for_function("() => (document.querySelector('#comparison')?.innerText || '').includes('right.')",
                               timeout=30_000)
        rows = page.locator("#comparison table tbody tr")
        marks = {rows.nth(i).locator("td").nth(0).inner_text().strip(): rows.nth(i).locator("td").nth(2).inner_text()
                 for i in range(rows.count())}
        assert marks == {"Think-only": "✗", "Act-only": "✓", "ReAct": "✓"}
        assert "✓ F1 1.00" in page.inner_text("#metrics-react")
        # an example without a stable answer empties the box
        page.get_by_role("tab", name="Fresh facts").click()
        page.get_by_role("button", name="Weather in Paris now").click()
        assert page.input_value("#expected textarea, #expected input") == ""
        kit.artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(kit.artifacts / "browser-expected-1366x768.png"))


def test_the_panels_still_fit_under_the_question_at_1366x768(browser, url, kit):
    with kit.open_page(browser, url) as page:
        box = page.locator("#panel-react").bounding_box()
        assert box["y"] + box["height"] <= 768 + 80  # the expected box costs one slim line, not a screen
