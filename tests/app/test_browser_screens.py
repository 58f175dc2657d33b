"""The run on the screens a class has, in headless Chromium against a scripted model server, measured by bounding
boxes with no scrolling by the test: a projector (1366×768, plain and presentation mode) and a phone (390×844).

- After Run the page brings the run on screen; when it ends every panel's final answer and metrics line are in
  the viewport. While a step is under way a panel shows that step's start, and a visitor who scrolls a panel keeps
  their place.
- Presentation mode folds the header, banner and examples to a line each; the panels fill the screen; text ≥ 20 px.
- A shared link opened on a phone shows the status line and a message of the run on its first screen; the table is
  one card per mode with no word cut; panels grow to their content; every tab shows.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import pytest

from agents.llm.stub_replies import StubReply
from agents.llm.toy_model import toy_policy

pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
SETTLE_MS = 900  # the page's smooth scroll and the step boxes' opening
FILLER = ("the question is small but I write each partial result down, check it against the one before, and only "
          "then go on to the next line of the working, as a careful student does")


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.02, token_delay=0.002) as local_url:
        yield local_url


@contextlib.contextmanager
def opened(browser, url: str, viewport: dict[str, int], query: str = "") -> Iterator:
    """A page of the app at this viewport size (``query``: e.g. a shared link's ``?run=…``), closed after."""
    context = browser.new_context(viewport=viewport)
    try:
        page = context.new_page()
        page.goto(url + query)
        page.wait_for_selector("#run-btn")
        yield page
    finally:
        context.close()


def run_example(page, kit, *, presentation: bool = False) -> None:
    page.get_by_role("tab", name="Arithmetic traps").click()
    page.get_by_role("button", name="17 × 23 + 5").click()
    if presentation:  # the examples fold to the chosen category's line
        kit.present(page)
    page.click("#run-btn")
    kit.wait_text(page, "#run-status", "Done", timeout=60_000)
    page.wait_for_timeout(SETTLE_MS)


def on_screen(page) -> dict[str, Any]:
    """Each visible panel's last message (as its scrolling area shows it) and metrics line, and the viewport."""
    return page.evaluate("""() => {
        const box = el => { const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
        const panels = [...document.querySelectorAll('#panels > .panel-col')].filter(c => c.offsetParent !== null)
            .map(col => { const area = col.querySelector('.panel-wrap');
                          const rows = [...col.querySelectorAll('.message-row')];
                          const last = rows[rows.length - 1];
                          return {id: col.id, area: box(area), last: last ? box(last) : null,
                                  text: last ? last.innerText : '', metrics: box(col.querySelector('.metrics')),
                                  size: last ? parseFloat(getComputedStyle(last.querySelector('.message')).fontSize)
                                             : 0};
            });
        return {panels, height: window.innerHeight, width: window.innerWidth};
    }""")


def assert_answers_and_metrics_on_screen(seen: dict[str, Any]) -> None:
    assert seen["panels"], seen
    for panel in seen["panels"]:
        last, area, metrics = panel["last"], panel["area"], panel["metrics"]
        assert "Final answer" in panel["text"], panel
        assert max(0, area["top"]) - 1 <= last["top"] and last["bottom"] <= min(seen["height"], area["bottom"]) + 1, \
            panel  # the whole answer, inside its panel's visible area and the viewport
        assert 0 <= metrics["top"] and metrics["bottom"] <= seen["height"], panel


@pytest.mark.parametrize("presentation", [False, True], ids=["plain", "presentation"])
def test_on_a_projector_every_answer_and_metrics_line_is_on_the_first_screen(browser, url, kit, presentation):
    with opened(browser, url, PROJECTOR) as page:
        run_example(page, kit, presentation=presentation)
        seen = on_screen(page)
        assert_answers_and_metrics_on_screen(seen)
        if presentation:
            assert all(p["size"] >= 20 for p in seen["panels"]), seen
            smallest = page.evaluate("""() => [...document.querySelectorAll('#panels .message-row *')]
                .filter(e => e.offsetParent && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
                .map(e => ({size: parseFloat(getComputedStyle(e).fontSize), tag: e.tagName, cls: e.className,
                            text: e.textContent.trim().slice(0, 40)}))
                .sort((a, b) => a.size - b.size)[0]""")
            assert smallest["size"] >= 20, smallest  # every text of the panels: thoughts, code, answers
            for p in seen["panels"]:  # the panels fill the screen under the question, down to its bottom edge
                assert p["area"]["bottom"] - p["area"]["top"] >= 0.5 * seen["height"], p
                assert p["metrics"]["bottom"] >= seen["height"] - 48, p
            folded = page.evaluate("""() => ({
                tagline: document.querySelector('#title p')?.offsetParent !== null,
                strip: document.querySelector('#examples .tab-wrapper')?.offsetParent !== null,
                header: document.querySelector('#header').getBoundingClientRect().height,
                examples: document.querySelector('#examples').getBoundingClientRect().height})""")
            assert not folded["tagline"] and not folded["strip"], folded
            assert folded["header"] <= 64 and folded["examples"] <= 48, folded  # one line each
        kit.artifacts.mkdir(exist_ok=True)
        name = "presentation" if presentation else "plain"
        page.screenshot(path=str(kit.artifacts / f"screens-projector-{name}.png"))


def test_in_presentation_mode_three_long_named_modes_keep_20px_metrics_and_status_on_the_first_screen(browser, url,
                                                                                                      kit):
    """ReAct, CodeAct and Reflexion: their metrics lines wrap at 20 px, and the panels leave room for the tallest."""
    with opened(browser, url, PROJECTOR) as page:
        page.get_by_role("tab", name="Arithmetic traps").click()
        page.get_by_role("button", name="17 × 23 + 5").click()
        kit.pick_modes(page, ["ReAct", "CodeAct", "Reflexion"])
        kit.present(page)
        page.click("#run-btn")
        kit.wait_text(page, "#run-status", "Done", timeout=90_000)
        page.wait_for_timeout(SETTLE_MS)
        seen = on_screen(page)
        sizes = page.evaluate("""() => ({
            status: parseFloat(getComputedStyle(document.querySelector('#run-status p')).fontSize),
            metrics: [...document.querySelectorAll('#panels > .panel-col')].filter(c => c.offsetParent)
                .map(c => parseFloat(getComputedStyle(c.querySelector('.metrics p')).fontSize))})""")
        assert sizes["status"] >= 20 and len(sizes["metrics"]) == 3 and min(sizes["metrics"]) >= 20, sizes
        assert [p["id"] for p in seen["panels"]] == ["col-react", "col-codeact", "col-reflexion"]
        assert_answers_and_metrics_on_screen(seen)
        kit.artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(kit.artifacts / "screens-projector-presentation-long-names.png"))


def three_steps(body: dict[str, Any]) -> StubReply:
    """Asked "…, then …", ReAct thinks at length over two calculator steps, then waits a long time for its answer;
    the other modes, and any other question, are the toy model."""
    messages = body.get("messages") or [{}]
    system = str(messages[0].get("content") or "")
    question = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    if "Action Input" not in system or "no Thought" in system or ", then" not in question:
        return toy_policy(body)
    seen = sum("Observation" in str(m.get("content") or "") for m in messages[2:])
    if seen < 2:
        return StubReply(text=f"Thought: step {seen + 1}: {FILLER}.\nAction: calculate\nAction Input: {seen + 1} + 1")
    return StubReply(text="Thought: Done.\nFinal Answer: 3", first_token_delay=30.0)


def react_rows(page) -> list[dict[str, Any]]:
    return page.evaluate("""() => {
        const area = document.querySelector('#panel-react .panel-wrap');
        const a = area.getBoundingClientRect();
        return [...area.querySelectorAll('.message-row')].map(row => ({
            title: (row.querySelector('.thought-group .title')?.innerText || '').trim(),
            top: row.getBoundingClientRect().top - a.top, scrollTop: area.scrollTop}));
    }""")


@pytest.fixture(scope="module")
def held_url(kit):
    """The app on :func:`three_steps`: ReAct's run is held before its answer until Stop."""
    with kit.app_on_stub(three_steps, latency=0.02, token_delay=0.002) as local_url:
        yield local_url


def start_held_run(page) -> None:
    page.fill("#question textarea", "What is 1 + 1, then 2 + 1?")
    page.click("#run-btn")
    page.wait_for_function("() => (document.querySelector('#panel-react')?.innerText.match(/Observation 2/g)"
                           " || []).length >= 1", timeout=30_000)
    page.wait_for_timeout(SETTLE_MS)


def test_a_panel_shows_its_newest_steps_start_and_leaves_a_reader_where_they_are(browser, held_url, kit):
    with opened(browser, held_url, PROJECTOR) as page:
        start_held_run(page)
        rows = react_rows(page)
        thoughts = [r for r in rows if r["title"].startswith("✎")]
        assert len(thoughts) == 2 and rows[0]["scrollTop"] > 0, rows  # the panel overflows: it was placed
        assert -2 <= thoughts[1]["top"] <= 12, rows  # the second step's thought starts the panel's view
        page.hover("#panel-react .panel-wrap")
        page.mouse.wheel(0, -3000)  # a visitor reads the first step
        page.wait_for_timeout(300)
        assert react_rows(page)[0]["scrollTop"] == 0
        page.click("#stop-btn")
        kit.wait_text(page, "#run-status", "Stopped", timeout=30_000)
        page.wait_for_timeout(SETTLE_MS)
        assert react_rows(page)[0]["scrollTop"] == 0  # the stopped notice did not take them away


def test_a_new_run_takes_the_last_share_link_away_as_it_starts(browser, held_url, kit):
    """Not once it ends: Gradio's page starts a trigger's events in turn, and a run's stream ends with the run."""
    with opened(browser, held_url, PROJECTOR) as page:
        page.fill("#question textarea", "What is 2 + 2?")
        page.click("#run-btn")
        kit.wait_text(page, "#run-status", "Done", timeout=30_000)
        page.click("#share-btn")
        kit.wait_text(page, "#share-link", "?run=", timeout=15_000)
        start_held_run(page)  # ReAct waits for its answer: the run is still going
        assert "Done" not in page.inner_text("#run-status")
        assert page.inner_text("#share-link").strip() == ""
        page.click("#stop-btn")


def test_on_a_phone_a_run_ends_with_an_answer_on_screen_and_every_tab_shows(browser, url, kit):
    with opened(browser, url, PHONE) as page:
        tabs = page.evaluate("""() => [...document.querySelectorAll('button[role=tab]')].filter(t => t.offsetParent)
            .map(t => { const r = t.getBoundingClientRect();
                        return {name: t.innerText.trim(), inside: r.left >= 0 && r.right <= innerWidth}; })""")
        names = {t["name"] for t in tabs}
        assert {"Compare", "Prompts", "Benchmark", "About", "Arithmetic traps", "Code"} <= names, tabs
        assert all(t["inside"] for t in tabs) and not page.locator("button[aria-label='More tabs']").is_visible()
        run_example(page, kit)
        seen = on_screen(page)
        answers = [p for p in seen["panels"] if "Final answer" in p["text"]
                   and 0 <= p["last"]["top"] and p["last"]["bottom"] <= seen["height"]]
        assert answers, seen
        grown = page.evaluate("""() => [...document.querySelectorAll('#panels .panel-wrap')].filter(a => a.offsetParent)
            .every(a => a.scrollHeight <= a.clientHeight + 1)""")
        assert grown  # a panel is as tall as its messages: nothing scrolls inside it


def share(page, kit) -> str:
    """Share the run on screen: its link's query (``?run=…``)."""
    page.click("#share-btn")
    kit.wait_text(page, "#share-link", "?run=", timeout=15_000)
    return re.search(r"\?run=[A-Za-z0-9_-]+", page.inner_text("#share-link")).group(0)


def test_a_shared_link_opens_at_the_run_on_a_phone_with_the_table_as_cards(browser, url, kit):
    with opened(browser, url, PROJECTOR) as page:
        run_example(page, kit)
        link = share(page, kit)
    with opened(browser, url, PHONE, link) as page:
        kit.wait_text(page, "#run-status", "Shared run", timeout=15_000)
        page.wait_for_timeout(SETTLE_MS)
        first = page.evaluate("""() => {
            const box = s => { const e = document.querySelector(s); const r = e.getBoundingClientRect();
                               return {top: r.top, bottom: r.bottom}; };
            return {status: box('#run-status'), message: box('#panels .message-row'), height: innerHeight,
                    wide: document.documentElement.scrollWidth};
        }""")
        assert 0 <= first["status"]["top"] and first["status"]["bottom"] <= first["height"], first
        assert 0 <= first["message"]["top"] and first["message"]["top"] + 40 <= first["height"], first
        assert first["wide"] <= PHONE["width"] + 1, first  # nothing sticks out sideways
        assert kit.words_cut(page, "#comparison td") == []
        assert page.locator("#comparison td[data-label='Answer']").count() == 3  # one card per mode
        page.locator("#comparison").scroll_into_view_if_needed()
        kit.artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(kit.artifacts / "screens-phone-table.png"))


def test_on_a_phone_a_shared_fork_shows_the_teachers_edit_in_full(browser, url, kit):
    """The fork's "✎ … edited by the teacher" box is not cut by a panel's own scroll box: panels grow on a phone."""
    with opened(browser, url, PROJECTOR) as page:
        run_example(page, kit)
        page.click("#fork > button")
        page.wait_for_function("() => document.querySelector('#fork-text textarea')?.value === '396'", timeout=15_000)
        for _ in range(5):  # the Fork box may be filled again as the run's export lands (test_browser_fork.py)
            page.fill("#fork-text textarea", "400")
            page.wait_for_timeout(500)
            if page.input_value("#fork-text textarea") == "400":
                break
        page.click("#fork-btn")
        kit.wait_text(page, "#panel-beside", "Final answer", timeout=30_000)
        link = share(page, kit)
    with opened(browser, url, PHONE, link) as page:
        kit.wait_text(page, "#panel-beside", "edited by the teacher", timeout=15_000)
        page.wait_for_timeout(SETTLE_MS)
        edit = page.evaluate("""() => {
            const row = [...document.querySelectorAll('#panel-beside .message-row')]
                .find(r => r.innerText.includes('edited by the teacher'));
            const area = document.querySelector('#panel-beside .panel-wrap').getBoundingClientRect();
            const r = row.getBoundingClientRect();
            return {top: r.top, bottom: r.bottom, areaTop: area.top, areaBottom: area.bottom};
        }""")
        assert edit["areaTop"] - 1 <= edit["top"] and edit["bottom"] <= edit["areaBottom"] + 1, edit
