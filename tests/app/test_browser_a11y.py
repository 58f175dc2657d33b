"""The page as browsers' accessibility audits read it: axe-core (the engine of Chromium's and Firefox's audits),
injected by Playwright after a run at 1366×768 (a projector) and 390×844 (a phone), in plain and presentation mode.
No serious or critical violation is allowed but those in :data:`GRADIO_MARKUP`, each owned by an upstream Gradio
issue; in presentation mode the panels' text also reaches WCAG AAA contrast (7:1).

axe-core comes from the npm registry, pinned: ``.ci/run`` installs it and sets ``AXE_CORE_JS`` (and
``AXE_REQUIRED=1``, so CI never skips this); elsewhere ``npm install --prefix .cache/axe axe-core@4.14.1``.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

# (rule, a CSS selector the element matches, the upstream Gradio issue that owns it). Empty: page.js fixes the two
# faults Gradio 6.31's markup had (docs/app.md lists them, with the issues they would need upstream).
GRADIO_MARKUP: tuple[tuple[str, str, str], ...] = ()
SIZES = [pytest.param((1366, 768), id="1366x768"), pytest.param((390, 844), id="390x844")]


def test_each_allowed_violation_names_its_rule_selector_and_upstream_issue():
    for rule, selector, issue in GRADIO_MARKUP:
        assert rule and selector and issue.startswith("https://github.com/gradio-app/gradio/issues/"), rule


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.02, token_delay=0.001) as local_url:
        yield local_url


def violations(page, source: str, rules: list[str] | None = None, context: str = "document", *,
               every_impact: bool = False) -> list[dict]:
    """axe's serious and critical violations (every impact with ``every_impact``; or those of ``rules``, whatever
    their impact) inside ``context``, one row per element, with whether an upstream Gradio issue owns it."""
    page.add_script_tag(content=source)
    found = page.evaluate("""async ([rules, context, every]) => {
        const options = rules ? {runOnly: {type: 'rule', values: rules}} : {resultTypes: ['violations']};
        const result = await axe.run(context === 'document' ? document : context, options);
        return result.violations.filter(v => rules || every || v.impact === 'serious' || v.impact === 'critical')
            .flatMap(v => v.nodes.map(n => ({rule: v.id, impact: v.impact, target: n.target.join(' '),
                                             summary: (n.failureSummary || '').slice(0, 300)})));
    }""", [rules, context, every_impact])
    for row in found:
        row["gradio"] = any(row["rule"] == rule and page.evaluate(
            "([t, s]) => { const e = document.querySelector(t); return !!e && (e.matches(s) || !!e.closest(s)); }",
            [row["target"], selector]) for rule, selector, _ in GRADIO_MARKUP)
    return found


def run_a_question(page, kit) -> None:
    page.fill("#question textarea", "What is 17 * 23 + 5?")
    page.click("#run-btn")
    kit.wait_text(page, "#run-status", "Done", timeout=60_000)
    page.locator("#followup-btn").wait_for(state="visible", timeout=15_000)  # the run's last change of the page
    page.wait_for_timeout(500)  # the step boxes finish opening


def ours(found: list[dict]) -> list[str]:
    return [f"{v['impact']} {v['rule']}: {v['target'][-160:]} — {v['summary']}" for v in found if not v["gradio"]]


@pytest.mark.parametrize("presentation", [False, True], ids=["plain", "presentation"])
@pytest.mark.parametrize("size", SIZES)
def test_no_serious_or_critical_violation_of_our_own(browser, url, kit, axe_source, size, presentation):
    with kit.open_page(browser, url) as page:
        page.set_viewport_size({"width": size[0], "height": size[1]})
        if presentation:
            kit.present(page)
        run_a_question(page, kit)
        found = violations(page, axe_source)
    assert ours(found) == [], "\n".join(ours(found))


@pytest.mark.parametrize("size", SIZES)
def test_no_violation_of_any_impact_after_a_run(browser, url, kit, axe_source, size):
    """Moderate and minor too (a heading out of order inside a message, a region without a landmark)."""
    with kit.open_page(browser, url) as page:
        page.set_viewport_size({"width": size[0], "height": size[1]})
        run_a_question(page, kit)
        found = violations(page, axe_source, every_impact=True)
    assert ours(found) == [], "\n".join(ours(found))


def test_presentation_mode_panels_reach_aaa_contrast(browser, url, kit, axe_source):
    with kit.open_page(browser, url) as page:
        kit.present(page)
        run_a_question(page, kit)
        found = violations(page, axe_source, ["color-contrast-enhanced"], "#panels")
    assert ours(found) == [], "\n".join(ours(found))


def test_a_step_box_still_toggles_by_a_click_on_its_arrow_and_by_enter_on_its_title(browser, url, kit):
    """page.js takes the arrow out of the tab order: the box must still open and close as before."""
    with kit.open_page(browser, url) as page:
        run_a_question(page, kit)
        title = page.locator("#panel-react .thought-group .title").first
        expanded = lambda: "expanded" in (title.get_attribute("class") or "")  # noqa: E731
        before = expanded()
        title.scroll_into_view_if_needed()  # as a visitor does before clicking (a wheel marks the panel as read)
        page.locator("#panel-react .panel-wrap").dispatch_event("wheel")
        page.wait_for_timeout(300)
        page.locator("#panel-react .thought-group .title .icon-button").first.click(force=True)
        page.wait_for_function("([el, b]) => el.classList.contains('expanded') !== b", arg=[title.element_handle(),
                                                                                            before])
        title.focus()
        page.keyboard.press("Enter")
        page.wait_for_function("([el, b]) => el.classList.contains('expanded') === b", arg=[title.element_handle(),
                                                                                             before])
        assert page.locator("#panel-react .thought-group .title .icon-button[tabindex='-1'], "
                            "#panel-react .thought-group .title .icon-button[disabled]").count() >= 1
