"""A shared run whose text holds images makes the page fetch nothing, in headless Chromium.

Every way a model, a web page it read, a recording or a teacher could write an image or a tag into the panels,
the expected answer and the table points at an outside listener — a second HTTP server on loopback that the
page is allowed to reach. Viewing the shared run (``/?run=<id>``) and replaying it must make it no request at
all; links stay links the viewer may follow.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

pytestmark = pytest.mark.browser

PIXEL = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                      "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082")


class Listener:
    """The outside server: counts every request it gets (and answers with a 1×1 picture)."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                listener.hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(PIXEL)))
                self.end_headers()
                self.wfile.write(PIXEL)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def beacons(base: str, where: str) -> str:
    """Every form of an image (or a tag that fetches) we know of, each with its own path."""
    return "\n\n".join([
        f"Inline ![{where} inline]({base}/{where}/inline.png) and a link [{where} page]({base}/{where}/page)",
        f"By reference ![{where} ref][r{where}]\n\n[r{where}]: {base}/{where}/ref.png",
        f"Raw <img src=\"{base}/{where}/raw.png\"> and <svg><image href=\"{base}/{where}/svg.png\"/></svg>",
        f"Styled <span style=\"background:url({base}/{where}/css.png)\">x</span>",
        f"[a](http://x/`)![i]({base}/{where}/span.png)`",
        f"$$ `<img src={base}/{where}/latex.png>` $$",
        f"```mermaid\ngraph TD; A[<img src={base}/{where}/mermaid.png>]\n```",
        f"- item\n   ```\n<img src=\"{base}/{where}/list.png\">\n   ```",
    ])


def recording(base: str) -> dict:
    answer = f"391 ![{'answer'}]({base}/answer/inline.png)"
    events = [
        {"t": 0.0, "kind": "token", "text": beacons(base, "draft"), "channel": "thought"},
        {"t": 0.1, "kind": "thought", "text": beacons(base, "thought")},
        {"t": 0.2, "kind": "action", "tool": f"calc ![t]({base}/tool/x.png)", "input": beacons(base, "input")},
        {"t": 0.3, "kind": "observation", "tool": "calculate", "output": beacons(base, "observation")},
        {"t": 0.4, "kind": "parse_error", "message": beacons(base, "reprompt"), "text": beacons(base, "wrote")},
        {"t": 0.5, "kind": "answer", "text": answer},
    ]
    think = [{"t": 0.0, "kind": "llm_error", "message": beacons(base, "error")}]
    return {"question": f"What is 17 * 23? ![q]({base}/question/q.png)", "selection": "All",
            "expected": f"391 ![e]({base}/expected/e.png)",
            "settings": {"backend": f"![b]({base}/backend/b.png)", "model": "m"},
            "traces": {"react": {"events": events}, "think": {"events": think}}}


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub() as local_url:
        yield local_url


def test_a_shared_run_with_image_markdown_makes_no_outside_request(browser, url, kit, tmp_path):
    outside = Listener()
    try:
        path = tmp_path / "beacons.json"
        path.write_text(json.dumps(recording(outside.base)), encoding="utf-8")
        with kit.open_page(browser, url) as page:
            page.set_input_files("#replay-file input[type=file]", str(path))
            page.click("#replay-btn")
            kit.wait_text(page, "#run-status", "Replay finished", timeout=30_000)
            page.click("#share-btn")
            page.wait_for_function("() => (document.querySelector('#share-link')?.innerText || '').includes('?run=')",
                                   timeout=15_000)
            link = page.inner_text("#share-link").split("Share this run:")[1].split()[0]
        with kit.open_page(browser, link) as shared:
            kit.wait_text(shared, "#run-status", "Shared run", timeout=30_000)
            shared.eval_on_selector_all(  # open every folded box (long observations start folded)
                ".panel-chat .thought-group > .title", "els => els.filter(e => (e.querySelector('.arrow')?.style"
                ".transform || '').includes('rotate(0deg)')).forEach(e => e.click())")
            shared.wait_for_timeout(2000)  # time for anything lazy to load
            react, table = shared.inner_text("#panel-react"), shared.inner_text("#comparison")
            assert "thought page" in react and "observation inline" in react  # shown, as text and links
            assert "391" in table
            links = shared.eval_on_selector_all("#panel-react a[href]", "els => els.map(e => e.href)")
            assert f"{outside.base}/thought/page" in links  # a link stays a link the viewer may follow
            images = shared.eval_on_selector_all("img", "els => els.map(e => e.src)")
            assert [src for src in images if src.startswith(outside.base)] == []
        assert outside.hits == []
        assert httpx.get(f"{outside.base}/check").status_code == 200  # the listener was reachable all along
    finally:
        outside.close()
