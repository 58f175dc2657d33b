"""Each browser is known by the cookie the app signs (ui/core/visitors.BrowserCookie): the page's first response
sets it, and every queued event the page sends carries it back; a client without a cookie jar stays an address."""

from __future__ import annotations

import httpx
import pytest

from ui.core import visitors

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.01, token_delay=0.001) as local_url:
        yield local_url


def test_the_page_gets_its_browser_cookie_and_sends_it_with_its_events(browser, url, kit):
    with kit.open_page(browser, url) as page:
        cookies = {c["name"]: c for c in page.context.cookies()}
        mine = cookies[visitors.COOKIE]
        assert mine["httpOnly"] and mine["sameSite"] == "Lax"
        assert visitors.browser_of(f"{visitors.COOKIE}={mine['value']}") is not None
        joins: list[str] = []
        page.on("request", lambda r: joins.append(r.all_headers().get("cookie", ""))
                if "/queue/join" in r.url else None)
        page.get_by_role("tab", name="Arithmetic traps").click()
        page.get_by_role("button", name="17 × 23 + 5").click()
        page.click("#run-btn")
        page.wait_for_function("() => (document.querySelector('#comparison')?.innerText || '').includes('right.')",
                               timeout=30_000)
        assert joins and all(f"{visitors.COOKIE}={mine['value']}" in c for c in joins)


def test_a_client_without_cookies_is_offered_one_each_time_and_stays_its_address(url):
    first = httpx.get(f"{url}gradio_api/info").headers.get("set-cookie", "")
    second = httpx.get(f"{url}gradio_api/info").headers.get("set-cookie", "")
    assert first.startswith(f"{visitors.COOKIE}=") and second.startswith(f"{visitors.COOKIE}=") and first != second
