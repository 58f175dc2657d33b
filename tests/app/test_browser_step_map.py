"""The step-aligned map in headless Chromium: a scripted run of three modes shows it with its divergence line and
grounding marks (a backed claim's hover names and outlines its observation's cell); Step fills it step by step; a
replayed export from before the map shows it too; it reads on a projector (the first eight rows of three modes on
one 1366×768 screen in presentation mode) and on a phone (a list by row); axe-core finds no violation in it at
1366×768 and 390×844, plain and in presentation mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.llm.stub_server import StubLLMServer
from tests.app.map_kit import LONG, QUESTION, map_registry, script

pytestmark = pytest.mark.browser

OLD = Path(__file__).resolve().parents[1] / "data" / "before_map" / "run-three-modes.json"
DIVERGENCE = "Here Act-only looked it up (Gustave Eiffel), ReAct computed (330 * 3.28084)."
MAP = "#step-map .step-map"
SIZES = [pytest.param((1366, 768), id="1366x768"), pytest.param((390, 844), id="390x844")]


@pytest.fixture(scope="module")
def url(kit):
    import app

    with StubLLMServer(script, latency=0.02, token_delay=0.002) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=map_registry())
        with kit.launched(demo) as local_url:
            yield local_url


def run(page, kit, question: str = QUESTION) -> None:
    page.fill("#question textarea", question)
    page.click("#run-btn")
    kit.wait_text(page, "#run-status", "Done", timeout=60_000)
    kit.wait_text(page, "#step-map", "Answer", timeout=15_000)


def marks(page) -> dict[str, str]:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#step-map .sm-said .claim')]
        .map(c => [c.firstChild.textContent, c.className.replace('claim ', '')]))""")


def test_a_scripted_run_shows_the_map_with_its_divergence_and_marks(browser, url, kit):
    with kit.open_page(browser, url) as page:
        run(page, kit)
        box = page.locator(MAP)
        assert box.is_visible()  # shown by default, under the panels: no accordion to open
        assert f"Row 2: {DIVERGENCE}" in page.inner_text("#step-map .sm-divergence")
        assert page.locator("#step-map tr.sm-row").count() == 3
        assert marks(page) == {"990": "unbacked", "Alexandre Eiffel": "unbacked", "1900": "unbacked",
                               "World's Fair": "unbacked", "1,083": "backed", "Gustave Eiffel": "backed",
                               "Paris": "backed", "1082.6772": "backed", "1889": "backed"}
        assert "claims: 4 backed" in page.inner_text("#metrics-react")
        # every mark has a symbol besides its colour, and a word for screen readers
        assert page.locator("#step-map .sm-said .claim .sm-sym").count() == 11  # 1,083 and Gustave Eiffel twice
        # hovering a backed claim shows the observation it came from, and outlines that cell
        claim = page.locator("xpath=//span[contains(@class, 'claim')][starts-with(text(), '1082.6772')]")
        claim.hover()
        tip = claim.locator(".sm-why")
        assert tip.is_visible() and "Backed by row 2, ReAct: calculate(330 * 3.28084)" in tip.inner_text()
        outline = page.evaluate("() => getComputedStyle(document.querySelector('#sm-2-react')).outlineStyle")
        assert outline == "solid"
        claim.blur()
        page.mouse.move(0, 0)
        page.locator("xpath=//span[contains(@class, 'claim')][starts-with(text(), 'Paris')]").focus()  # as a tap does
        assert "Backed by row 1, Act-only: encyclopedia(Eiffel Tower)" in page.inner_text("#step-map .claim:focus")


def test_step_fills_the_map_as_steps_are_taken(browser, url, kit):
    with kit.open_page(browser, url) as page:
        page.fill("#question textarea", QUESTION)
        page.click("#step-btn")
        kit.wait_text(page, "#run-status", "Paused after step 1")
        page.wait_for_function("() => document.querySelectorAll('#step-map tr.sm-row').length === 3")
        assert "encyclopedia(Eiffel Tower)" in page.inner_text("#sm-1-react")  # the first step, and Think's three
        assert page.locator("#step-map .sm-divergence").count() == 0
        page.click("#next-btn")
        kit.wait_text(page, "#run-status", "Paused after step 2")
        kit.wait_text(page, "#step-map", DIVERGENCE)
        page.click("#continue-btn")
        kit.wait_text(page, "#run-status", "Done")


def test_a_replayed_export_from_before_the_map_shows_it(browser, url, kit):
    with kit.open_page(browser, url) as page:
        page.set_input_files("#replay-file input[type=file]", str(OLD))
        page.wait_for_timeout(500)
        page.get_by_label("instant", exact=True).check()
        page.click("#replay-btn")
        kit.wait_text(page, "#run-status", "Replay finished", timeout=30_000)
        kit.wait_text(page, "#step-map", DIVERGENCE)
        assert marks(page)["1082.6772"] == "backed" and marks(page)["Alexandre Eiffel"] == "unbacked"


def test_on_a_projector_eight_rows_of_three_modes_fit_one_screen_in_presentation_mode(browser, url, kit):
    with kit.open_page(browser, url) as page:
        kit.present(page)
        run(page, kit, f"{QUESTION} {LONG}")
        assert page.locator("#step-map tr.sm-row").count() >= 8
        page.evaluate("document.querySelector('#step-map .sm-table').scrollIntoView({block: 'start'})")
        top = page.evaluate("document.querySelector('#step-map thead').getBoundingClientRect().top")
        bottom = page.evaluate("document.querySelectorAll('#step-map tr.sm-row')[7].getBoundingClientRect().bottom")
        assert 0 <= top and bottom <= 768, (top, bottom)
        sizes = page.evaluate("""() => [...document.querySelectorAll('#step-map .sm-line, #step-map th')]
            .map(e => parseFloat(getComputedStyle(e).fontSize))""")
        assert min(sizes) >= 20, sizes  # read from the back row
        widths = page.evaluate("() => [...document.querySelectorAll('#step-map thead th')].map(t => t.offsetWidth)")
        assert len(widths) == 4 and max(widths) <= 1366


def test_on_a_phone_the_map_is_a_list_by_row(browser, url, kit):
    with kit.open_page(browser, url) as page:
        page.set_viewport_size({"width": 390, "height": 844})
        run(page, kit)
        cards = page.evaluate("""() => [...document.querySelectorAll('#step-map tr.sm-row')].map(r => {
            const box = r.getBoundingClientRect();
            return {display: getComputedStyle(r).display, left: box.left, right: box.right,
                    labels: [...r.querySelectorAll('td')].filter(td => td.offsetHeight > 0)
                        .map(td => getComputedStyle(td, '::before').content)};
        })""")
        assert len(cards) == 3 and all(c["display"] == "block" and 0 <= c["left"] and c["right"] <= 390
                                       for c in cards)
        assert cards[1]["labels"] == ['"Think-only"', '"ReAct"']  # each cell under its mode's name; empty ones go
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390


def _axe(page, source: str) -> list[str]:
    page.add_script_tag(content=source)
    found = page.evaluate("""async () => {
        const result = await axe.run('#step-map', {resultTypes: ['violations']});
        return result.violations.flatMap(v => v.nodes.map(n => `${v.impact} ${v.id}: ${n.target.join(' ')}`));
    }""")
    return found


@pytest.mark.parametrize("presentation", [False, True], ids=["plain", "presentation"])
@pytest.mark.parametrize("size", SIZES)
def test_the_map_passes_axe_core_with_no_violation(browser, url, kit, axe_source, size, presentation):
    with kit.open_page(browser, url) as page:
        page.set_viewport_size({"width": size[0], "height": size[1]})
        if presentation:
            kit.present(page)
        run(page, kit)
        page.locator("#step-map .sm-said .claim.backed").first.focus()  # a source shown too
        assert _axe(page, axe_source) == []
