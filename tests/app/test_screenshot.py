"""The README's picture, ``docs/screenshot.png``: the real page at 1366×768, three panels mid-run.

The committed file is checked on every run (present, a PNG, wide enough). To take it again, against the
stub model, from headless Chromium: ``UPDATE_SCREENSHOT=1 python -m pytest tests/app/test_screenshot.py``.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from agents.llm.stub_server import StubReply, talkative

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"
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


def test_the_committed_screenshot_is_a_png_of_the_page():
    data = SCREENSHOT.read_bytes()
    width, height = png_size(data)
    assert width >= 1000 and height >= 600
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
    test_the_committed_screenshot_is_a_png_of_the_page()
