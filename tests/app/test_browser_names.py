"""Names and cells as the page shows them, in headless Chromium at 1366×768: the tagline and the mode picker use
the panels' names, and no cell of the table nor any text of a panel breaks inside a word or hides its end (one
mode with a long answer; five narrow panels)."""

from __future__ import annotations

import pytest

from agents.llm.stub_replies import StubReply
from agents.llm.toy_model import toy_policy

pytestmark = pytest.mark.browser

LONG = ("The answer is three hundred and ninety six, which I computed with the calculator after multiplying "
        "seventeen by twenty three and adding five, then checked twice, digit by digit.")
FIVE = ["Think-only", "ReAct", "ReAct → CoT-SC", "CodeAct", "Reflexion"]


def long_answers(body: dict) -> StubReply:
    """The toy model, whose tool modes answer in a long sentence (a real model's answer may be one)."""
    reply = toy_policy(body)
    if "Action Input" in str((body.get("messages") or [{}])[0].get("content")) and "Final Answer:" in reply.text:
        reply.text = reply.text.split("Final Answer:")[0] + f"Final Answer: {LONG}"
    return reply


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(long_answers, latency=0.02, token_delay=0.001) as local_url:
        yield local_url


def run(page, kit, modes: list[str]) -> None:
    page.fill("#question textarea", "What is 17 * 23 + 5?")
    kit.pick_modes(page, modes)
    page.click("#run-btn")
    kit.wait_text(page, "#run-status", "Done", timeout=90_000)
    page.wait_for_timeout(900)


def test_the_tagline_and_the_picker_use_the_panels_names(browser, url, kit):
    with kit.open_page(browser, url) as page:
        tagline = page.inner_text("#title p")
        assert "seven reasoning modes" in tagline and "three" not in tagline
        for name in ("Think-only", "Act-only", "ReAct", "CodeAct", "Reflexion", "CoT-SC → ReAct"):
            assert name in tagline, tagline
        assert [t.strip() for t in page.locator("#modes .token").all_inner_texts()] == ["Think-only", "Act-only",
                                                                                        "ReAct"]
        page.click("#modes input")
        options = [o.replace("✓", "").strip() for o in page.get_by_role("option").all_inner_texts()]
        assert "Think" not in options and "Act" not in options and {"Think-only", "Act-only"} <= set(options)
        titles = [t.strip() for t in page.locator("#panels > .panel-col:visible .panel-chat label").all_inner_texts()]
        assert titles[:3] == ["Think-only", "Act-only", "ReAct"], titles  # the same names as the panels'


def test_one_mode_with_a_long_answer_breaks_no_word_of_the_table(browser, url, kit):
    with kit.open_page(browser, url) as page:
        run(page, kit, ["ReAct"])
        assert LONG[:40] in page.inner_text("#comparison")
        assert kit.words_cut(page, "#comparison td, #comparison th") == []


def test_five_narrow_panels_break_no_word_and_hide_no_end(browser, url, kit):
    with kit.open_page(browser, url) as page:
        run(page, kit, FIVE)
        assert "(final_answer was called.)" in page.inner_text("#panel-codeact")
        assert kit.words_cut(page, "#panels pre, #panels .message-row p, #comparison td") == []
