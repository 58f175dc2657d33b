"""The join link as a QR code, drawn by ``segno`` (a maintained QR library on the index, no hand-written encoder).

It must scan from the back of a room: at 1366×768 the code is at least a quarter of the viewport's height (192 px)
with at least 4 px per module, and keeps the standard 4-module quiet zone, dark on white whatever the page's theme.
"""

from __future__ import annotations

import math

import segno

MIN_SIDE_PX = 240  # > 768 / 4, with room to spare
MIN_MODULE_PX = 4
BORDER = 4  # modules of quiet zone, as the standard asks


def qr_of(link: str) -> segno.QRCode:
    """The QR code of ``link`` (error correction M: a projector's glare or a smudge still scans)."""
    return segno.make(link, error="m", micro=False)


def scale_for(code: segno.QRCode, side_px: int = MIN_SIDE_PX) -> int:
    """Pixels per module so that the code with its quiet zone is at least ``side_px`` wide (and 4 px a module)."""
    modules = code.symbol_size(scale=1, border=BORDER)[0]
    return max(MIN_MODULE_PX, math.ceil(side_px / modules))


def qr_svg(link: str, side_px: int = MIN_SIDE_PX) -> str:
    """An inline ``<svg>`` of the link's QR code, sized in pixels (no XML declaration: it goes into the page)."""
    code = qr_of(link)
    return code.svg_inline(scale=scale_for(code, side_px), border=BORDER, dark="#000", light="#fff",
                           omitsize=False, title=None)


def qr_png(link: str, side_px: int = MIN_SIDE_PX) -> bytes:
    """The same code as PNG bytes (for a download, or a test's decoder)."""
    import io

    code = qr_of(link)
    out = io.BytesIO()
    code.save(out, kind="png", scale=scale_for(code, side_px), border=BORDER, dark="#000", light="#fff")
    return out.getvalue()
