"""Where the page is: the address a visitor's page was opened at, and the one others open it at (share and join
links are made from them)."""

from __future__ import annotations

from ui.core.settings import app_settings


def page_url_of(headers: object) -> str:
    """The visitor's page address: the ``Referer`` the browser sent with the event (the app's own page,
    same origin), else the host it reached (``x-forwarded-*`` behind a proxy such as a Space's). Share links and
    the class poll's join link are made from it."""
    get = getattr(headers, "get", None)
    if get is None:
        return "http://localhost:7860/"
    referer = get("referer") or ""
    if referer.startswith(("http://", "https://")):
        return referer
    host = get("x-forwarded-host") or get("host") or "localhost:7860"
    proto = (get("x-forwarded-proto") or "http").split(",")[0].strip()
    return f"{proto}://{host.split(',')[0].strip()}/"


def public_page_url(headers: object) -> str:
    """The page's address as others open it (a join link's, a share link's): ``APP_PUBLIC_URL`` when it is set,
    else :func:`page_url_of`."""
    return app_settings().public_url or page_url_of(headers)
