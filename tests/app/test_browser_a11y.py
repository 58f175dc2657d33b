"""The page as browsers' accessibility audits read it: axe-core (the engine of Chromium's and Firefox's audits),
injected by Playwright after a run at 1366×768, in plain and presentation mode. No serious or critical
violation is allowed but those in :data:`GRADIO_MARKUP`, which lie in Gradio's own component markup.

axe-core comes from the npm registry, pinned: ``.ci/run`` installs it and sets ``AXE_CORE_JS`` (and
``AXE_REQUIRED=1``, so CI never skips this); elsewhere ``npm install --prefix .cache/axe axe-core@4.14.1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

AXE_VERSION = "4.14.1"
LOCAL_AXE = Path(__file__).resolve().parents[2] / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
# (rule, a CSS selector the element matches, why it is not ours): Gradio 6.31's Chatbot draws a collapsible
# message's title as a div with role="button" holding an unnamed icon button (the arrow); its File box's label
# is not its accessible name. Neither can be changed through a component's parameters, CSS or the theme.
GRADIO_MARKUP = (
    ("button-name", ".thought-group .title .icon-button", "Chatbot: the arrow of a collapsible message's title"),
    ("nested-interactive", ".thought-group .title", "Chatbot: a collapsible message's title holds the arrow button"),
    ("label-content-name-mismatch", ".upload-container", "File: the upload box's label is not its name"),
)


@pytest.fixture(scope="module")
def axe_source() -> str:
    path = Path(os.environ.get("AXE_CORE_JS") or LOCAL_AXE)
    if not path.is_file():
        if os.environ.get("AXE_REQUIRED"):
            pytest.fail(f"axe-core is not at {path}: .ci/run installs it (npm install axe-core@{AXE_VERSION})")
        pytest.skip(f"axe-core is not installed: npm install --prefix .cache/axe axe-core@{AXE_VERSION}")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.02, token_delay=0.001) as local_url:
        yield local_url


def violations(page, source: str) -> list[dict]:
    """axe's serious and critical violations, one row per element, with whether Gradio's markup owns it."""
    page.add_script_tag(content=source)
    found = page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ['violations']});
        return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .flatMap(v => v.nodes.map(n => ({rule: v.id, impact: v.impact, target: n.target.join(' '),
                                             summary: (n.failureSummary || '').slice(0, 300)})));
    }""")
    for row in found:
        row["gradio"] = any(row["rule"] == rule and page.evaluate(
            "([t, s]) => { const e = document.querySelector(t); return !!e && (e.matches(s) || !!e.closest(s)); }",
            [row["target"], selector]) for rule, selector, _ in GRADIO_MARKUP)
    return found


def run_a_question(page, kit) -> None:
    page.fill("#question textarea", "What is 17 * 23 + 5?")
    page.click("#run-btn")
    kit.wait_text(page, "#run-status", "Done", timeout=60_000)


@pytest.mark.parametrize("presentation", [False, True])
def test_no_serious_or_critical_violation_of_our_own_at_1366x768(browser, url, kit, axe_source, presentation):
    with kit.open_page(browser, url) as page:
        run_a_question(page, kit)
        if presentation:
            page.locator("#presentation input").check()
            page.wait_for_function("() => document.body.classList.contains('presentation')")
        found = violations(page, axe_source)
    ours = [f"{v['impact']} {v['rule']}: {v['target'][-160:]} — {v['summary']}" for v in found if not v["gradio"]]
    assert ours == [], "\n".join(ours)
