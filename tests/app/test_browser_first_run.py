"""A newcomer's first page, in headless Chromium: ``python app.py`` with nothing configured (so the built-in toy
model runs) opens on the examples the toy answers, and every run of them answers correctly; every other example,
in every tab, is marked as needing a language model and its "what to watch" line says so and what to set.
(Every example's toy answer is checked at engine level in tests/ui/page/test_toy_examples.py.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ui.page.examples import CATEGORIES, EXAMPLES, toy_category
from ui.page.parts import LESSON, NEEDS_MODEL_MARK

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def url():
    """``python app.py`` as a newcomer runs it: no LLM_, HF_, APP_ or SPACE_ setting at all."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "HF_", "APP_", "SPACE_"))}
    env.update(GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read()
            try:
                if httpx.get(base, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the app did not come up"
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        proc.wait(20)


def example_tab(page, label: str):
    return page.locator("#examples").get_by_role("tab", name=label, exact=True)


@pytest.mark.timeout(300)
def test_the_first_tab_is_the_toys_and_its_examples_answer(browser, url, kit):
    first = toy_category()
    with kit.open_page(browser, url) as page:
        assert "toy model" in page.inner_text("#backend-status")
        assert example_tab(page, first.label).get_attribute("aria-selected") == "true"
        assert "Arithmetic traps" in page.inner_text("#examples-note")
        for ex in (e for e in EXAMPLES if e.category == first.id):
            page.get_by_role("button", name=ex.label, exact=True).click()  # no mark: the toy answers it
            kit.wait_text(page, "#run-status", "What to watch (toy model)")
            assert page.input_value("#question textarea") == ex.question
            assert page.input_value("#expected input, #expected textarea") == ex.answer
            page.click("#run-btn")
            kit.wait_text(page, "#run-status", "Done", timeout=60_000)
            for panel in ("#panel-act", "#panel-react"):
                kit.wait_text(page, panel, ex.answer)
            assert "about " in page.inner_text("#panel-think")  # the toy's Think-only estimates, as the line says
            assert page.inner_text("#comparison").count("✓") >= 2, page.inner_text("#comparison")
        assert page.external == []


@pytest.mark.timeout(180)
def test_every_other_example_is_marked_as_needing_a_model(browser, url, kit):
    with kit.open_page(browser, url) as page:
        for category in CATEGORIES:
            example_tab(page, category.label).click()
            for ex in (e for e in EXAMPLES if e.category == category.id):
                marked = page.get_by_role("button", name=f"{ex.label} {NEEDS_MODEL_MARK}", exact=True)
                plain = page.get_by_role("button", name=ex.label, exact=True)
                assert (plain if ex.toy else marked).is_visible(), ex.label
                assert (marked if ex.toy else plain).count() == 0, ex.label
        example_tab(page, CATEGORIES[0].label).click()  # the tab a real model opens on: all of it needs one
        page.get_by_role("button", name=f"Pride and Prejudice {NEEDS_MODEL_MARK}", exact=True).click()
        kit.wait_text(page, "#run-status", "Needs a language model")
        status = page.inner_text("#run-status").split(LESSON)[0]  # what the toy does, before a real model's lesson
        assert "HF_TOKEN" in status and "LLM_BASE_URL" in status and "All three answer" not in status
        page.click("#run-btn")  # the toy says "I don't know" in every panel: that is no answer, not agreement
        kit.wait_text(page, "#run-status", "Done", timeout=60_000)
        table = page.inner_text("#comparison")
        assert "No mode answered" in table and "All answers agree" not in table, table
