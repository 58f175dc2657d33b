"""🔬 Test the evidence, in headless Chromium at 1366×768: ReAct computes 17 × 23 + 5 with the calculator (the stub's
toy policy answers with the last observation it saw); one click changes the backed 396 to 515 and forks beside
the original; the new panel shows the changed observation, and the status line ends with the verdict. The fork's
export, replayed, shows the verdict again; a replay on an app with no model says the test needs one.
``UPDATE_SCREENSHOT=1`` takes docs/app.md's picture, ``docs/evidence-test.png``, again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from agents.evidence import NEEDS_A_MODEL
from tests.gradio_rest import call

pytestmark = pytest.mark.browser

PICTURE = Path(__file__).resolve().parents[2] / "docs" / "evidence-test.png"
FOLLOWED = "the answer followed the evidence (396 → 515)"


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.02, token_delay=0.002) as local_url:
        yield local_url


@pytest.fixture(scope="module")
def saved(browser, url, kit, tmp_path_factory) -> Path:
    """One click on a finished ReAct run: the fork beside, its verdict; the export it leaves."""
    with kit.open_page(browser, url) as page:
        page.fill("#question textarea", "What is 17 * 23 + 5?")
        page.click("#run-btn")
        kit.wait_text(page, "#run-status", "Done")
        page.click("#fork > button")  # open the Fork accordion
        page.wait_for_function("() => document.querySelector('#fork-text textarea')?.value === '396'",
                               timeout=15_000)
        page.click("#fork-evidence")
        kit.wait_text(page, "#run-status", FOLLOWED)
        status = page.inner_text("#run-status")
        assert "Evidence test: 396 → 515" in status and "fork: ReAct (fork @1)" in status
        beside, react = page.inner_text("#panel-beside"), page.inner_text("#panel-react")
        assert "515" in beside and "edited by the teacher" in beside and "515" in beside.split("Final answer")[-1]
        assert "396" in react.split("Final answer")[-1] and "edited by the teacher" not in react
        if os.environ.get("UPDATE_SCREENSHOT") == "1":
            page.evaluate("document.querySelector('#run-status').scrollIntoView({block: 'start'})")
            page.screenshot(path=str(PICTURE))
        href = page.locator("#exports a[href*='.json']").first.get_attribute("href")
        path = tmp_path_factory.mktemp("evidence") / "evidence-run.json"
        path.write_bytes(httpx.get(href if href.startswith("http") else url.rstrip("/") + href, timeout=30).content)
    return path


def replay(page, kit, path: Path) -> None:
    page.set_input_files("#replay-file input[type=file]", str(path))
    page.get_by_label("instant").check()
    page.click("#replay-btn")
    kit.wait_text(page, "#run-status", "Replay finished")


def test_one_click_forks_beside_and_says_the_verdict(saved, url):
    """The page's test is kept in its export, and the API gives the same verdict for the same run."""
    data = json.loads(saved.read_text(encoding="utf-8"))
    block = data["evidence"]["react@1"]
    assert block["source"] == "react" and block["verdict"]["line"] == FOLLOWED
    event, payload = call(url.rstrip("/"), "evidence_test", [json.dumps(data), "react", None], timeout=120)
    assert event == "complete", payload
    assert json.loads(payload[0])["verdict"] == FOLLOWED


def test_the_export_replayed_shows_the_verdict(browser, url, kit, saved):
    with kit.open_page(browser, url) as page:
        replay(page, kit, saved)
        kit.wait_text(page, "#run-status", FOLLOWED)
        assert "515" in page.inner_text("#panel-beside")


def test_a_replay_with_no_model_says_the_test_needs_one(browser, kit, saved):
    import app
    from agents.llm.settings import LLMSettings

    demo = app.build_demo(settings=LLMSettings(model="", base_url=""), registry=kit.registry())
    with kit.launched(demo) as base, kit.open_page(browser, base) as page:
        replay(page, kit, saved)
        page.click("#fork > button")
        page.wait_for_function("() => document.querySelector('#fork-text textarea')?.value !== ''", timeout=15_000)
        page.click("#fork-evidence")
        kit.wait_text(page, "#run-status", NEEDS_A_MODEL)
