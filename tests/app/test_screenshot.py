"""The README's pictures: ``docs/screenshot.png``, the real page at 1366×768 with three panels mid-run (as the page
puts the run on screen after Run), and ``docs/screenshot-phone.png``, a shared run opened on a phone (390×844); and
docs/app.md's ``docs/step-map.png``, the step-aligned map of a scripted run at 1366×768, a backed claim hovered.

The committed files are checked on every run (present, PNGs, large enough, small enough). To take them again,
against the stub model, from headless Chromium: ``UPDATE_SCREENSHOT=1 python -m pytest tests/app/test_screenshot.py``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from agents.llm.stub_server import StubReply, talkative

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"
PHONE_SCREENSHOT = SCREENSHOT.with_name("screenshot-phone.png")
MAP_SCREENSHOT = SCREENSHOT.with_name("step-map.png")
EVIDENCE_SCREENSHOT = SCREENSHOT.with_name("evidence-test.png")  # taken by tests/app/test_browser_evidence.py
PANELS = ("#panel-think", "#panel-act", "#panel-react")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (raises ValueError if it is not a PNG)."""
    if not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return struct.unpack(">II", data[16:24])


def staged(body: dict[str, Any]) -> StubReply:
    """The toy model, paced so the picture catches every panel busy: Think-only reasons at length, ReAct
    takes a step and streams its next thought, Act-only waits for the model after its observation."""
    messages = body.get("messages") or [{}]
    system = str(messages[0].get("content") or "")
    acting = "Action Input" in system
    after_observation = any("Observation" in str(m.get("content") or "") for m in messages[2:])
    reply = talkative(25 if acting and not after_observation else 150)(body)
    if after_observation:
        reply = dataclasses.replace(reply, first_token_delay=12.0 if "no Thought" in system else 1.0)
    return reply


@pytest.mark.parametrize(("path", "least"), [(SCREENSHOT, (1000, 600)), (PHONE_SCREENSHOT, (390, 700)),
                                             (MAP_SCREENSHOT, (1000, 300)), (EVIDENCE_SCREENSHOT, (1000, 600))],
                         ids=["projector", "phone", "map", "evidence"])
def test_the_committed_screenshot_is_a_png_of_the_page(path, least):
    data = path.read_bytes()
    width, height = png_size(data)
    assert width >= least[0] and height >= least[1]
    assert len(data) < 400_000  # the Space card loads it on every visit


@pytest.mark.browser
@pytest.mark.skipif(os.environ.get("UPDATE_SCREENSHOT") != "1", reason="set UPDATE_SCREENSHOT=1 to take it again")
def test_take_the_screenshot_mid_run(browser, kit):
    with kit.app_on_stub(staged, latency=0.3, token_delay=0.06) as url, kit.open_page(browser, url) as page:
        page.get_by_role("tab", name="Arithmetic traps").click()
        page.get_by_role("button", name="17 × 23 + 5").click()
        page.click("#run-btn")
        page.wait_for_function(
            """panels => {
                const text = panels.map(s => document.querySelector(s)?.innerText || '');
                return text[0].length > 400 && text.slice(1).every(t => t.includes('calculate'))
                    && document.querySelector(panels[2])?.innerText.includes('Observation')
                    && (document.querySelector(panels[2])?.innerText.match(/Thought/g) || []).length >= 2;
            }""", arg=list(PANELS), timeout=30_000)
        texts = [page.inner_text(s) for s in PANELS]
        assert not any("Final answer" in t for t in texts), "a panel finished before the picture: slow the stub"
        page.wait_for_timeout(400)  # let the step boxes finish opening
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT))
        page.click("#stop-btn")
    test_the_committed_screenshot_is_a_png_of_the_page(SCREENSHOT, (1000, 600))


@pytest.mark.browser
@pytest.mark.skipif(os.environ.get("UPDATE_SCREENSHOT") != "1", reason="set UPDATE_SCREENSHOT=1 to take it again")
def test_take_the_phone_screenshot_of_a_shared_run(browser, kit):
    with kit.app_on_stub(latency=0.05, token_delay=0.01) as url, kit.open_page(browser, url) as page:
        page.get_by_role("tab", name="Arithmetic traps").click()
        page.get_by_role("button", name="17 × 23 + 5").click()
        page.click("#run-btn")
        kit.wait_text(page, "#run-status", "Done", timeout=60_000)
        page.click("#share-btn")
        kit.wait_text(page, "#share-link", "?run=", timeout=15_000)
        link = re.search(r"\?run=[A-Za-z0-9_-]+", page.inner_text("#share-link")).group(0)
        phone = page.context.browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
        try:
            student = phone.new_page()
            student.goto(url + link)
            kit.wait_text(student, "#run-status", "Shared run", timeout=15_000)
            student.wait_for_timeout(900)  # the page's scroll to the run, the step boxes opening
            student.screenshot(path=str(PHONE_SCREENSHOT))
        finally:
            phone.close()
    test_the_committed_screenshot_is_a_png_of_the_page(PHONE_SCREENSHOT, (390, 700))


@pytest.mark.browser
@pytest.mark.skipif(os.environ.get("UPDATE_SCREENSHOT") != "1", reason="set UPDATE_SCREENSHOT=1 to take it again")
def test_take_the_step_map_picture(browser, kit):
    import app
    from agents.llm.stub_server import StubLLMServer
    from tests.app.map_kit import QUESTION, map_registry, script

    with StubLLMServer(script, latency=0.05, token_delay=0.005) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=map_registry())
        with kit.launched(demo) as url, kit.open_page(browser, url) as page:
            page.fill("#question textarea", QUESTION)
            page.click("#run-btn")
            kit.wait_text(page, "#run-status", "Done", timeout=60_000)
            page.evaluate("document.querySelector('#step-map').scrollIntoView({block: 'start'})")
            page.locator("xpath=//span[contains(@class, 'claim')][starts-with(text(), '1082.6772')]").hover()
            page.wait_for_timeout(400)
            box = page.locator("#step-map .step-map").bounding_box()
            page.screenshot(path=str(MAP_SCREENSHOT), clip={"x": 0, "y": max(0, box["y"] - 8), "width": 1366,
                                                            "height": min(768, box["height"] + 16)})
    test_the_committed_screenshot_is_a_png_of_the_page(MAP_SCREENSHOT, (1000, 300))
