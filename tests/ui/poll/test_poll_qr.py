"""The join link's QR code: it decodes to the link (zxing-cpp, a decoder from the index), and it is big enough to
scan from the back of a room (at 1366×768: a quarter of the height or more, at least 4 px per module)."""

from __future__ import annotations

import io
import re

import pytest
import segno

from ui.poll import qr
from ui.poll.tally import join_html, join_url

LINKS = ["http://127.0.0.1:7860/?room=ABCDEF",
         "https://someone-think-act-react.hf.space/?room=Z9Y8X7W6",
         join_url("https://example.org/proxy/abc/?run=whatever#top", "HJKMNP")]


def test_the_join_url_keeps_the_page_and_drops_its_query():
    assert LINKS[2] == "https://example.org/proxy/abc/?room=HJKMNP"


@pytest.mark.parametrize("link", LINKS)
def test_the_qr_code_decodes_to_the_join_link(link: str):
    zxingcpp = pytest.importorskip("zxingcpp")
    image = pytest.importorskip("PIL.Image")
    found = zxingcpp.read_barcodes(image.open(io.BytesIO(qr.qr_png(link))))
    assert [r.text for r in found] == [link]
    assert found[0].format == zxingcpp.BarcodeFormat.QRCode


@pytest.mark.parametrize("link", LINKS)
def test_the_matrix_is_segnos_own_encoding_of_the_link(link: str):
    """Without a decoder: the drawn matrix is the one segno makes for exactly this text (no hand-made encoder)."""
    code = qr.qr_of(link)
    assert code.matrix == segno.make(link, error="m", micro=False).matrix
    assert code.error == "M" and not code.is_micro


@pytest.mark.parametrize("link", LINKS)
def test_the_svg_on_the_teachers_screen_is_large_enough(link: str):
    svg = re.search(r"<svg[^>]*>", join_html("ABCDEF", link)).group(0)
    side = int(re.search(r'width="(\d+)"', svg).group(1))
    modules = qr.qr_of(link).symbol_size(scale=1, border=qr.BORDER)[0]
    assert side >= 768 / 4 and side / modules >= 4 and side % modules == 0
