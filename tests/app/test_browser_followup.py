"""Follow-up questions in headless Chromium: after a run, "Ask a follow-up" continues every mode's conversation, the
panels show the thread and the table a row per earlier turn; a share link keeps the turns and can be followed up."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

FIRST, SECOND, THIRD = "What is 17 * 23 + 5?", "And what is 2 + 3?", "And 10 * 10?"


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.05, token_delay=0.002) as local_url:
        yield local_url


def ask(page, kit, question: str, button: str, turn: int = 1) -> None:
    """Ask ``question`` with ``button``; back when turn ``turn`` has its answer in the ReAct panel."""
    page.fill("#question textarea", question)
    page.click(button)
    if turn > 1:
        kit.wait_text(page, "#panel-react", f"Turn {turn}", timeout=60_000)
    kit.wait_text(page, "#run-status", "Done", timeout=60_000)
    page.wait_for_function("(n) => (document.querySelector('#comparison')?.innerText || '').includes(n)",
                           arg="Earlier turns" if turn > 1 else "ReAct", timeout=30_000)


def test_ask_a_follow_up_then_share_and_follow_up_again(browser, url, kit):
    with kit.open_page(browser, url) as page:
        assert not page.locator("#followup-btn").is_visible()  # nothing to follow up yet
        kit.pick_modes(page, ["Think-only", "ReAct"])
        ask(page, kit, FIRST, "#run-btn")
        page.locator("#followup-btn").wait_for(state="visible", timeout=15_000)
        assert page.locator("#followup-step-btn").is_visible()
        ask(page, kit, SECOND, "#followup-btn", turn=2)
        react, think = page.inner_text("#panel-react"), page.inner_text("#panel-think")
        assert "Turn 1" in react and "Turn 2" in react and "396" in react and "5" in react.split("Turn 2")[-1]
        assert "Turn 1" in think and "Turn 2" in think
        table = page.inner_text("#comparison")
        assert "Earlier turns" in table and FIRST in table
        kit.artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(kit.artifacts / "browser-followup-1366x768.png"))
        page.click("#share-btn")
        kit.wait_text(page, "#share-link", "?run=", timeout=15_000)
        link = re.search(r"http://\S+\?run=[A-Za-z0-9_-]+", page.inner_text("#share-link")).group(0)
    with kit.open_page(browser, link) as shared:
        kit.wait_text(shared, "#run-status", "Shared run", timeout=15_000)
        react = shared.inner_text("#panel-react")
        assert "Turn 1" in react and "Turn 2" in react and "396" in react
        shared.locator("#followup-btn").wait_for(state="visible", timeout=15_000)
        ask(shared, kit, THIRD, "#followup-btn", turn=3)
        react = shared.inner_text("#panel-react")
        assert "Turn 3" in react and "100" in react.split("Turn 3")[-1]


def test_step_through_a_follow_up(browser, url, kit):
    with kit.open_page(browser, url) as page:
        kit.pick_modes(page, ["ReAct"])
        ask(page, kit, FIRST, "#run-btn")
        page.fill("#question textarea", SECOND)
        page.click("#followup-step-btn")
        kit.wait_text(page, "#run-status", "Paused after step 1", timeout=30_000)
        assert "Turn 2" in page.inner_text("#panel-react")
        page.click("#continue-btn")
        kit.wait_text(page, "#run-status", "Done", timeout=30_000)
        react = page.inner_text("#panel-react")
        assert "Turn 1" in react and "5" in react.split("Turn 2")[-1]
