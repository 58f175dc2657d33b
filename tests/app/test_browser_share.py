"""Share a moment, in headless Chromium: the Share link of a finished run reopens its panels and table."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.05, token_delay=0.002) as local_url:
        yield local_url


def text(page, selector: str) -> str:
    return page.inner_text(selector)


def test_a_share_link_reopens_the_run(browser, url, kit):
    with kit.open_page(browser, url) as page:
        page.fill("#question textarea", "What is 17 * 23 + 5?")
        page.fill("#expected textarea, #expected input", "396")
        page.click("#run-btn")
        page.wait_for_function("() => (document.querySelector('#run-status')?.innerText || '').includes('Done')",
                               timeout=30_000)
        table, react = text(page, "#comparison"), text(page, "#panel-react")
        page.click("#share-btn")
        page.wait_for_function("() => (document.querySelector('#share-link')?.innerText || '').includes('?run=')",
                               timeout=15_000)
        link = re.search(r"http://\S+\?run=[A-Za-z0-9_-]+", text(page, "#share-link")).group(0)
        assert link.startswith(url.rstrip("/"))
    with kit.open_page(browser, link) as shared:
        shared.wait_for_function("() => (document.querySelector('#run-status')?.innerText || '')"
                                 ".includes('Shared run')",
                                 timeout=15_000)
        assert shared.input_value("#question textarea") == "What is 17 * 23 + 5?"
        assert shared.input_value("#expected textarea, #expected input") == "396"
        assert "396" in text(shared, "#panel-react") and "Final answer" in react
        assert text(shared, "#comparison").splitlines()[:4] == table.splitlines()[:4]
        kit.artifacts.mkdir(exist_ok=True)
        shared.screenshot(path=str(kit.artifacts / "browser-share-1366x768.png"))


def test_a_share_link_reopens_every_mode_the_run_held_and_only_those(browser, url, kit):
    """A run of ReAct and CodeAct, shared: the link opens with the picker on those two, their panels, and no other."""
    with kit.open_page(browser, url) as page:
        kit.pick_modes(page, ["ReAct", "CodeAct"])
        page.fill("#question textarea", "What is 17 * 23 + 5?")
        page.click("#run-btn")
        kit.wait_text(page, "#run-status", "Done", timeout=60_000)
        page.click("#share-btn")
        kit.wait_text(page, "#share-link", "?run=", timeout=15_000)
        link = re.search(r"http://\S+\?run=[A-Za-z0-9_-]+", text(page, "#share-link")).group(0)
    with kit.open_page(browser, link) as shared:
        kit.wait_text(shared, "#run-status", "Shared run", timeout=15_000)
        shared.locator("#col-think").wait_for(state="hidden", timeout=10_000)
        assert [t.strip() for t in shared.locator("#modes .token").all_inner_texts()] == ["ReAct", "CodeAct"]
        assert "396" in text(shared, "#panel-codeact") and "396" in text(shared, "#panel-react")
        assert not shared.locator("#col-act").is_visible() and not shared.locator("#col-beside").is_visible()


def test_an_unknown_share_link_is_one_clear_line(browser, url, kit):
    with kit.open_page(browser, url.rstrip("/") + "/?run=" + "Z" * 22) as page:
        page.wait_for_function("() => (document.querySelector('#run-status')?.innerText || '').includes('unknown')",
                               timeout=15_000)
        assert page.input_value("#question textarea") == ""
