"""The page as a class sees it, measured in headless Chromium at 1366×768 (a projector) and 390×844 (a phone).

Bounding boxes, not impressions: no panel title covers a message of its panel, the expected answer keeps a
visible label once filled, the Fork controls name what the chosen panel's steps are, with Presentation mode on
the three panels' first lines are on screen after Run with no scrolling but the page's own, and the Benchmark
score chart groups each mode's bar with the paper's with no axis label running into another (nor touching one, in
either chart), and the results table has its real headers before any run. Screenshots land in ``artifacts/``.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

PANELS = ("think", "act", "react")
SIZES = [pytest.param((1366, 768), id="1366x768"), pytest.param((390, 844), id="390x844")]


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.05, token_delay=0.01) as local_url:
        yield local_url


@pytest.fixture
def page_at(browser, url, kit):
    """``page_at(width, height)``: a page of the app at that viewport size."""
    contexts = []

    def open_at(width: int, height: int):
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        pg = context.new_page()
        pg.goto(url)
        pg.wait_for_selector("#run-btn")
        return pg

    yield open_at
    for context in contexts:
        context.close()


def overlap(a: dict | None, b: dict | None) -> float:
    """The area two bounding boxes share (0 when they only touch or one is missing)."""
    if not a or not b:
        return 0.0
    w = min(a["x"] + a["width"], b["x"] + b["width"]) - max(a["x"], b["x"])
    h = min(a["y"] + a["height"], b["y"] + b["height"]) - max(a["y"], b["y"])
    return max(0.0, w) * max(0.0, h)


def open_tab(pg, name: str) -> None:
    """Click a tab, as a person does: every tab shows, on a phone too (the tab rows wrap, no "⋯" menu)."""
    pg.get_by_role("tab", name=name).first.click()


def pick_example(pg) -> None:
    """The arithmetic example: it fills the question and the expected answer."""
    open_tab(pg, "Arithmetic traps")
    pg.get_by_role("button", name="17 × 23 + 5").click()


def run_example(pg, kit) -> None:
    """The arithmetic example, run in every panel to the end."""
    pick_example(pg)
    pg.click("#run-btn")
    kit.wait_text(pg, "#run-status", "Done")
    pg.wait_for_timeout(500)  # the step boxes finish opening


def panel_boxes(pg, key: str) -> dict:
    """A panel's title chip, its scrolling message area and its messages (each as laid out, and as visible)."""
    return pg.evaluate("""key => {
        const box = el => { if (!el) return null; const r = el.getBoundingClientRect();
                            return {x: r.x, y: r.y, width: r.width, height: r.height}; };
        const panel = document.querySelector('#panel-' + key);
        const area = panel.querySelector('.panel-wrap');
        const a = area.getBoundingClientRect();
        const rows = [...panel.querySelectorAll('.message-row')];
        const visible = rows.map(row => { const r = row.getBoundingClientRect();
            const top = Math.max(r.top, a.top), bottom = Math.min(r.bottom, a.bottom);
            return bottom > top ? {x: r.x, y: top, width: r.width, height: bottom - top} : null; });
        return {chip: box(panel.querySelector('.wrapper > label')), area: box(area),
                first: box(rows[0]), rows: rows.map(box), visible};
    }""", key)


@pytest.mark.parametrize("size", SIZES)
def test_no_panel_title_covers_a_message(page_at, kit, size):
    pg = page_at(*size)
    run_example(pg, kit)
    for key in PANELS:
        for where in ("top", "bottom"):  # the panel as it first showed, and as it follows the latest text
            # scrolled as a visitor does (a wheel event first): page.js places a panel nobody touched at its newest
            # step whenever its messages change size, which a bare scrollTop would race with
            pg.evaluate("([k, w]) => { const a = document.querySelector('#panel-' + k + ' .panel-wrap');"
                        " a.dispatchEvent(new WheelEvent('wheel', {bubbles: true}));"
                        " a.scrollTop = w === 'top' ? 0 : a.scrollHeight; }", [key, where])
            boxes = panel_boxes(pg, key)
            assert boxes["chip"] and boxes["first"], (key, boxes)
            assert boxes["chip"]["y"] + boxes["chip"]["height"] <= boxes["area"]["y"] + 1, (key, boxes)
            if where == "top":
                assert overlap(boxes["chip"], boxes["first"]) == 0, (key, boxes["chip"], boxes["first"])
            assert all(overlap(boxes["chip"], v) == 0 for v in boxes["visible"]), (key, where, boxes)
    kit.artifacts.mkdir(exist_ok=True)
    pg.screenshot(path=str(kit.artifacts / f"layout-panels-{size[0]}x{size[1]}.png"))


@pytest.mark.parametrize("size", SIZES)
def test_the_expected_answer_keeps_a_visible_label_once_filled(page_at, kit, size):
    pg = page_at(*size)
    pick_example(pg)
    assert pg.input_value("#expected input") == "396"
    label = pg.locator("#expected span[data-testid='block-info']")
    assert label.is_visible() and label.inner_text().strip() == "Expected answer"
    label_box, box = label.bounding_box(), pg.locator("#expected input").bounding_box()
    assert label_box["width"] > 40 and label_box["height"] > 8 and overlap(label_box, box) == 0
    assert 0 <= label_box["x"] and label_box["x"] + label_box["width"] <= size[0]
    assert pg.evaluate("() => document.documentElement.scrollWidth") <= size[0] + 1  # nothing overflows sideways


def pick(pg, selector: str, option: str) -> None:
    """Choose ``option`` in a Gradio dropdown, as a person does: open the list, click the choice."""
    pg.click(f"{selector} input")
    pg.get_by_role("option", name=option).click()


def step_label(pg) -> str:
    return pg.inner_text("#fork-step span[data-testid='block-info']").strip()


def test_the_fork_controls_name_the_chosen_panels_steps(page_at, kit):
    pg = page_at(1366, 768)
    run_example(pg, kit)
    pg.click("#fork > button")  # open the Fork accordion
    pg.wait_for_function("() => document.querySelector('#fork-text textarea')?.value === '396'", timeout=15_000)
    assert step_label(pg) == "Observation"  # ReAct, chosen first
    for panel, label, text in (("Think-only", "Reasoning", "estimate"), ("Act-only", "Observation", "396"),
                               ("ReAct", "Observation", "396")):
        pick(pg, "#fork-mode", panel)
        pg.wait_for_function("t => (document.querySelector('#fork-text textarea')?.value || '').includes(t)",
                             arg=text, timeout=15_000)
        assert step_label(pg) == label, panel


def test_presentation_mode_shows_the_three_panels_first_lines_without_scrolling(page_at, kit):
    pg = page_at(1366, 768)
    pick_example(pg)  # presentation mode folds the examples to the chosen category's line
    kit.present(pg)
    pg.click("#run-btn")
    # as each panel's first message arrives, and after the run: on screen, with no scrolling but the page's own
    pg.wait_for_function("() => ['think', 'act', 'react'].every(k => "
                         "document.querySelector('#panel-' + k + ' .message-row'))", timeout=30_000)
    pg.wait_for_timeout(900)  # the page's smooth scroll to the run
    seen = [[v for v in panel_boxes(pg, key)["visible"] if v] for key in PANELS]  # the messages each panel shows
    kit.wait_text(pg, "#run-status", "Done")
    pg.wait_for_timeout(500)
    height = pg.evaluate("() => window.innerHeight")
    for key, shown in zip(PANELS, seen, strict=True):
        boxes = panel_boxes(pg, key)
        line = 28  # a line of presentation text
        assert shown and shown[0]["y"] >= 0 and shown[0]["y"] + line <= height, (key, shown)
        assert boxes["area"]["y"] + 2 * line <= height, (key, boxes["area"])  # its text area starts on screen
        assert boxes["chip"]["y"] >= 0 and boxes["chip"]["y"] + boxes["chip"]["height"] <= height
    thought = pg.evaluate("() => parseFloat(getComputedStyle(document.querySelector("
                          "'#panel-think .thought-group p')).fontSize)")
    assert thought >= 20  # a thought's text is enlarged too, not only the answers
    kit.artifacts.mkdir(exist_ok=True)
    pg.screenshot(path=str(kit.artifacts / "layout-presentation-1366x768.png"))


def chart_geometry(pg, selector: str) -> dict:
    """The chart's axis labels, legend labels and bars (Vega's SVG: each bar's aria-label names its row)."""
    return pg.evaluate("""sel => {
        const root = document.querySelector(sel);
        const box = el => { const r = el.getBoundingClientRect();
                            return {x: r.x, y: r.y, width: r.width, height: r.height}; };
        const labels = [...root.querySelectorAll('.role-axis-label text')].map(t => ({text: t.textContent, ...box(t)}));
        const legend = [...root.querySelectorAll('.role-legend-label text')].map(t => t.textContent);
        const bars = [...root.querySelectorAll('.mark-rect path')].map(p => ({label: p.getAttribute('aria-label') || '',
                                                                               ...box(p)}));
        return {labels, legend, bars, root: box(root)};
    }""", selector)


@pytest.mark.parametrize("size", SIZES)
def test_the_benchmark_chart_groups_each_mode_with_the_paper_and_an_empty_list_says_why(page_at, kit, size):
    pg = page_at(*size)
    open_tab(pg, "Benchmark")
    pg.wait_for_selector("#bench-table th", timeout=15_000)
    headers = [h.strip() for h in pg.locator("#bench-table th").all_inner_texts() if h.strip()]
    assert headers[:2] == ["Mode", "n"] and "1" not in headers, headers  # its real headers before any run
    n = pg.get_by_label("N (items)").first
    n.fill("2")
    n.press("Enter")
    pg.click("#bench-run")
    kit.wait_text(pg, "#bench-progress", "Done", timeout=60_000)
    pg.wait_for_selector("#bench-score .role-axis-label text", timeout=15_000)
    chart = chart_geometry(pg, "#bench-score")
    modes = ["Think-only (CoT)", "Act-only", "ReAct"]
    assert [t for t in (label["text"] for label in chart["labels"]) if t in modes] == modes
    labels = chart["labels"]
    assert all(overlap(a, b) == 0 for i, a in enumerate(labels) for b in labels[i + 1:]), labels
    assert all(label["x"] >= chart["root"]["x"] - 1 and label["x"] + label["width"] <= size[0] for label in labels)
    assert "this run" in chart["legend"] and any(s.startswith("paper") for s in chart["legend"])
    for mode in modes:  # one group per mode: its bar and the paper's, next to each other
        ours = [b for b in chart["bars"] if f"mode: {mode};" in b["label"] and "series: this run" in b["label"]]
        paper = [b for b in chart["bars"] if f"mode: {mode};" in b["label"] and "series: paper" in b["label"]]
        assert len(ours) == len(paper) == 1, (mode, chart["bars"])
        gap = abs((ours[0]["y"] + ours[0]["height"] / 2) - (paper[0]["y"] + paper[0]["height"] / 2))
        others = [b for b in chart["bars"] if f"mode: {mode};" not in b["label"]]
        between = [b for b in others if min(ours[0]["y"], paper[0]["y"]) < b["y"] < max(ours[0]["y"], paper[0]["y"])]
        assert gap <= 1.5 * max(ours[0]["height"], paper[0]["height"]) and not between, (mode, ours, paper, between)
    for selector in ("#bench-score", "#bench-tokens"):  # the value axis' numbers stand apart ("850 900", not "850900")
        pg.wait_for_selector(f"{selector} .role-axis-label text", timeout=15_000)
        numbers = sorted((label for label in chart_geometry(pg, selector)["labels"] if label["text"] not in modes),
                         key=lambda label: label["x"])
        gaps = [b["x"] - (a["x"] + a["width"]) for a, b in zip(numbers, numbers[1:], strict=False)]
        assert len(numbers) >= 2 and min(gaps) >= 6, (selector, numbers)
    # the toy model says "I don't know" to every HotpotQA question in every mode: nothing to disagree on
    kit.wait_text(pg, "#bench-picker", "No items where the modes disagree — untick to list all")
    assert "Run a benchmark first" not in pg.inner_text("#bench-picker")
    pg.locator("#bench-score").scroll_into_view_if_needed()
    kit.artifacts.mkdir(exist_ok=True)
    pg.screenshot(path=str(kit.artifacts / f"layout-benchmark-{size[0]}x{size[1]}.png"), full_page=True)
