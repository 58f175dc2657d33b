"""The mode picker in headless Chromium: one panel per chosen mode, a table row and an export trace each, and a
benchmark item opened in Compare with every panel mode it ran (CoT-SC a table row only)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.browser

FIVE = ["Think-only", "ReAct", "ReAct → CoT-SC", "CodeAct", "Reflexion"]
FIVE_IDS = ["think", "react", "react_cot_sc", "codeact", "reflexion"]
OTHERS = ["act", "cot_sc_react"]


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.02, token_delay=0.001) as local_url:
        yield local_url


def shown_columns(page) -> list[str]:
    return [c for c in (*FIVE_IDS, *OTHERS, "beside") if page.locator(f"#col-{c}").is_visible()]


def table_modes(page) -> list[str]:
    """The comparison table's first column, row by row."""
    return [t.strip() for t in page.locator("#comparison tbody tr td:first-child").all_inner_texts()]


def test_five_modes_give_five_panels_five_rows_and_a_five_trace_export(browser, url, kit):
    with kit.open_page(browser, url) as page:
        page.locator("#col-think").wait_for(state="visible", timeout=10_000)
        assert sorted(shown_columns(page)) == ["act", "react", "think"]  # the default: the paper's three
        kit.pick_modes(page, FIVE)
        page.locator("#col-reflexion").wait_for(state="visible", timeout=10_000)
        assert shown_columns(page) == FIVE_IDS
        page.fill("#question textarea", "What is 17 * 23 + 5?")
        page.click("#run-btn")
        kit.wait_text(page, "#run-status", "Done", timeout=90_000)
        for mode in FIVE_IDS:
            assert "Final answer" in page.inner_text(f"#panel-{mode}"), mode
        assert len(table_modes(page)) == 5
        assert [r.split(" ")[0] for r in table_modes(page)] == ["Think-only", "ReAct", "ReAct", "CodeAct", "Reflexion"]
        href = page.locator("#exports a[href*='.json']").first.get_attribute("href")
        data = httpx.get(href if href.startswith("http") else url.rstrip("/") + href, timeout=30).json()
        assert list(data["traces"]) == FIVE_IDS
        page.set_viewport_size({"width": 1366, "height": 1800})
        kit.artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(kit.artifacts / "browser-five-modes-1366.png"))


def test_a_benchmark_of_five_panel_modes_and_cot_sc_opens_with_five_panels_and_six_rows(browser, url, kit):
    with kit.open_page(browser, url) as page:
        kit.benchmark_all_items(page, 1, ("CodeAct", "ReAct + Reflexion", "CoT-SC"))  # beside the default three
        page.click("#bench-open")
        kit.wait_text(page, "#run-status", "Benchmark item", timeout=30_000)
        page.locator("#col-codeact").wait_for(state="visible", timeout=10_000)
        assert sorted(shown_columns(page)) == sorted(["think", "act", "react", "codeact", "reflexion"])
        rows = table_modes(page)
        assert len(rows) == 6 and rows[-1] == "CoT-SC", rows  # CoT-SC: a row, no panel
