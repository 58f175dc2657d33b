"""Shared fixtures for the app tests: a stub model server, an injected registry, a launched demo."""

from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.pop("SPACE_ID", None)  # never build the Space variant (login button) by accident

import contextlib
import importlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from tools.calculator import calculate
from tools.registry import ToolRegistry


def calc_registry() -> ToolRegistry:
    """Only the calculator: deterministic, offline, and what the stub's toy policy calls."""
    return ToolRegistry([calculate])


def stub_settings(server: StubLLMServer, **kw) -> LLMSettings:
    return LLMSettings(model="stub", base_url=server.url, **kw)


@contextlib.contextmanager
def launched(demo) -> Iterator[str]:
    """Launch ``demo`` on loopback (with the app's css/theme) and yield its URL."""
    import app

    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **app.launch_kwargs())
    try:
        yield demo.local_url
    finally:
        demo.close()


@contextlib.contextmanager
def app_on_stub(*args, **kw) -> Iterator[str]:
    """The whole app (calculator tools) against a local stub model server (``StubLLMServer(*args, **kw)``),
    launched on loopback: yields its URL."""
    import app

    with StubLLMServer(*args, **kw) as stub:
        demo = app.build_demo(settings=stub_settings(stub), registry=calc_registry())
        with launched(demo) as url:
            yield url


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"  # screenshots (gitignored)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
                 "--no-first-run", "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def open_page(browser, url: str) -> Iterator:
    """A 1366×768 page of the app that may reach nothing but the app itself; ``page.external`` lists
    the other URLs it tried (the page must work with no network at all)."""
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    pg = context.new_page()
    external: list[str] = []
    local = ("http://127.0.0.1", "data:", "blob:")
    pg.route("**/*", lambda route: route.continue_() if route.request.url.startswith(local)
             else (external.append(route.request.url), route.abort()))
    pg.goto(url)
    pg.wait_for_selector("#run-btn")
    pg.external = external  # type: ignore[attr-defined]
    try:
        yield pg
    finally:
        context.close()


def open_phone(browser, link: str):
    """A phone (390×844, touch) on a class poll's join link, once its choices show: (its context, its page)."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("http://127.0.0.1")
               else route.abort())
    page.goto(link)
    page.wait_for_selector("#choices .choice")
    return context, page


def present(page) -> None:
    """Tick the page's presentation-mode switch and wait for the page to wear it."""
    page.locator("#presentation input").check()
    page.wait_for_function("() => document.body.classList.contains('presentation')")


def wait_text(page, selector: str, text: str, timeout: float = 30_000) -> None:
    """Wait until the element's visible text contains ``text`` (a streamed panel or status line)."""
    page.wait_for_function("([s, t]) => (document.querySelector(s)?.innerText || '').includes(t)",
                           arg=[selector, text], timeout=timeout)


def benchmark_all_items(page, n: int, modes: tuple[str, ...] = (), timeout: float = 180_000) -> None:
    """On the Benchmark tab: run ``n`` items (the default modes, and ``modes`` ticked too, by their checkbox
    labels), wait for the end, then list every item for Open in Compare (not only the disagreeing ones)."""
    page.get_by_role("tab", name="Benchmark").click()
    box = page.get_by_label("N (items)").first
    box.fill(str(n))
    box.press("Enter")
    for label in modes:
        page.get_by_label(label, exact=True).check()
    page.click("#bench-run")
    page.wait_for_function("() => (document.querySelector('#bench-progress')?.innerText || '').includes('Done')",
                           timeout=timeout)
    page.click("#bench-disagree input")
    listed = f"{n} item{'s' if n != 1 else ''}"
    page.wait_for_function("(t) => (document.querySelector('#bench-item')?.innerText || '').includes(t)",
                           arg=listed, timeout=15_000)


def pick_modes(page, labels: list[str]) -> None:
    """Choose exactly these modes in the mode picker (``#modes``), as a visitor does: clear it, then pick each."""
    page.click("#modes [title='Clear']")
    for label in labels:
        page.click("#modes input")
        page.get_by_role("option", name=label, exact=True).click()
    page.keyboard.press("Escape")
    shown = [label for label in labels]
    page.wait_for_function("(n) => document.querySelectorAll('#modes .token').length === n", arg=len(shown))


def words_cut(page, selector: str) -> list[str]:
    """Words of the elements' text that the layout breaks over two lines, or that stick out of their element."""
    return page.evaluate("""sel => {
        const cut = [];
        for (const cell of [...document.querySelectorAll(sel)].filter(e => e.offsetParent)) {
            const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
            const edge = cell.getBoundingClientRect();
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                for (const m of node.textContent.matchAll(/\\S+/g)) {
                    const range = document.createRange();
                    range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
                    const rects = [...range.getClientRects()].filter(r => r.width > 0);
                    const lines = new Set(rects.map(r => Math.round(r.top)));
                    const out = rects.some(r => r.left < edge.left - 1 || r.right > edge.right + 1);
                    if (lines.size > 1 || out) cut.push(m[0]);
                }
            }
        }
        return cut;
    }""", selector)


def panel_text(panel: list) -> str:
    """A panel's messages as API clients receive them (content as text parts), with their titles, as one text."""
    parts = []
    for message in panel or []:
        content = message.get("content")
        text = "".join(p.get("text", "") for p in content if isinstance(p, dict)) if isinstance(content, list) \
            else str(content or "")
        parts.append(text + " " + str((message.get("metadata") or {}).get("title", "")))
    return "\n".join(parts)


def _load_fault_kit():
    """tests/app/fault_kit.py, imported by its package name (``tests`` is a namespace package from the project's
    root), so a run worker process imports its tools too and the fault tests take the production path."""
    return importlib.import_module("tests.app.fault_kit")


class AppKit:
    """What app tests need, as one fixture (test modules here are not a package, so no imports)."""

    registry = staticmethod(calc_registry)
    settings = staticmethod(stub_settings)
    launched = staticmethod(launched)
    app_on_stub = staticmethod(app_on_stub)
    faults = staticmethod(_load_fault_kit)  # kit.faults(): the fault responder, broken tools, app launcher
    open_page = staticmethod(open_page)
    open_phone = staticmethod(open_phone)
    present = staticmethod(present)
    wait_text = staticmethod(wait_text)
    pick_modes = staticmethod(pick_modes)
    benchmark_all_items = staticmethod(benchmark_all_items)
    panel_text = staticmethod(panel_text)
    words_cut = staticmethod(words_cut)
    artifacts = ARTIFACTS


@pytest.fixture(scope="session")
def kit() -> type[AppKit]:
    return AppKit


AXE_VERSION = "4.14.1"  # .ci/run installs the same version
LOCAL_AXE = Path(__file__).resolve().parents[2] / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's script: CI's (AXE_CORE_JS, required there by AXE_REQUIRED), else a local install, else a skip."""
    path = Path(os.environ.get("AXE_CORE_JS") or LOCAL_AXE)
    if not path.is_file():
        if os.environ.get("AXE_REQUIRED"):
            pytest.fail(f"axe-core is not at {path}: .ci/run installs it (npm install axe-core@{AXE_VERSION})")
        pytest.skip(f"axe-core is not installed: npm install --prefix .cache/axe axe-core@{AXE_VERSION}")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def browser():
    """Headless system Chromium through Playwright (skips the test where either is missing)."""
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def registry() -> ToolRegistry:
    return calc_registry()
