"""What a request may bring (ui/core/bodies.BodyLimits, in front of Gradio's routes): an upload over the replay's
cap is refused before any handler sees it (Gradio's ``max_file_size``), each browser's and each address's uploads
are bounded per hour, and any other body is at most ``APP_BODY_MB`` (2 MB), with or without a Content-Length. Each
refusal is one line, and the app goes on serving."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

import app
import ui.core.settings
from ui.core.settings import AppSettings
from ui.recordings.reader import MAX_REPLAY_BYTES

MB = 1 << 20


@pytest.fixture(scope="module")
def url(kit):
    saved = ui.core.settings._current
    ui.core.settings._current = AppSettings(upload_mb_per_visitor=30, upload_mb_per_address=50)
    try:
        from agents.llm.settings import LLMSettings

        settings = LLMSettings(model="stub", base_url="http://127.0.0.1:9/v1")
        with kit.launched(app.build_demo(settings=settings, registry=kit.registry())) as local_url:
            yield local_url.rstrip("/")
    finally:
        ui.core.settings._current = saved


def browser(url: str) -> dict[str, str]:
    """A browser's headers: the identity cookie the app's first answer sets."""
    return {"cookie": httpx.get(f"{url}/gradio_api/info", timeout=10).headers["set-cookie"].split(";")[0]}


def upload(url: str, path: Path, headers: dict[str, str] | None = None,
           address: str = "127.0.0.1") -> httpx.Response:
    transport = httpx.HTTPTransport(local_address=address)
    with path.open("rb") as f, httpx.Client(transport=transport, timeout=120) as client:
        return client.post(f"{url}/gradio_api/upload", files={"files": (path.name, f)}, headers=headers or {})


def sized(tmp_path: Path, name: str, size: int) -> Path:
    path = tmp_path / name
    with path.open("wb") as f:
        f.truncate(size)
    return path


def one_line(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, (response.status_code, response.text[:200])
    line = response.text.strip()
    assert line and "\n" not in line
    return line


def test_an_upload_over_the_replay_cap_is_refused_before_any_handler(url, tmp_path):
    uploads = Path(os.environ.get("GRADIO_TEMP_DIR") or "/tmp/gradio")
    before = set(uploads.rglob("too-big.json")) if uploads.exists() else set()
    big = upload(url, sized(tmp_path, "too-big.json", MAX_REPLAY_BYTES + MB), browser(url))
    assert one_line(big, 413)
    assert (set(uploads.rglob("too-big.json")) if uploads.exists() else set()) == before  # never stored
    assert upload(url, sized(tmp_path, "fine.json", MB), browser(url)).status_code == 200  # and none charged for it


def test_the_hour_s_quota_refuses_the_next_upload_per_browser_and_per_address(url, tmp_path):
    mine, theirs = browser(url), browser(url)
    nine, fourteen = sized(tmp_path, "nine.json", 9 * MB), sized(tmp_path, "fourteen.json", 14 * MB)
    assert [upload(url, nine, mine).status_code for _ in range(3)] == [200, 200, 200]  # 27 of this browser's 30 MB
    line = one_line(upload(url, nine, mine), 429)
    assert line == "Upload refused: this browser has uploaded its 30 MB for this hour. Try again later."
    assert upload(url, nine, theirs).status_code == 200  # another browser behind the same address: 37 of its 50 MB
    assert "your network has uploaded its 50 MB" in one_line(upload(url, fourteen, theirs), 429)
    assert "your network" in one_line(upload(url, fourteen), 429)  # a client without the cookie: the address's
    assert upload(url, fourteen, address="127.0.0.2").status_code == 200  # another network is not held up


def test_a_large_body_is_refused_with_or_without_its_length(url):
    fifty = b'{"data": ["' + b"x" * (50 * MB) + b'"]}'
    line = one_line(httpx.post(f"{url}/gradio_api/call/compare", content=fifty,
                               headers={"content-type": "application/json"}, timeout=120), 413)
    assert line == "Request refused: its body is larger than 2 MB."

    def chunks():  # no Content-Length: chunked, counted as it comes
        for _ in range(50):
            yield b"x" * MB

    streamed = httpx.post(f"{url}/gradio_api/call/compare", content=chunks(),
                          headers={"content-type": "application/json"}, timeout=120)
    assert one_line(streamed, 413) == line
    small = httpx.post(f"{url}/gradio_api/call/compare", json={"data": ["What is 2+2?", "Think"]}, timeout=30)
    assert small.status_code == 200 and "event_id" in small.json()  # the app goes on serving
