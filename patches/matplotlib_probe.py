"""Gradio's per-call ``import matplotlib`` fails at once when matplotlib is not installed.

Gradio (6.31, ``utils.MatplotlibBackendMananger``) tries ``import matplotlib`` around every handler call —
every streamed frame — to switch its backend. Without matplotlib each try searches ``sys.path`` again: a
dozen ``stat`` calls on the event loop per frame. A ``None`` in ``sys.modules`` makes that import fail
instantly (Python's documented way to block an import); nothing else changes.

Upstream write-up: docs/upstream.md#matplotlib_probe.
"""

from __future__ import annotations

import importlib.util
import sys

from patches import Patch

PATCH = Patch("matplotlib_probe", "gradio", "6.31.0")


def install() -> bool:
    """True when applied (only when matplotlib is absent)."""
    if "matplotlib" in sys.modules or importlib.util.find_spec("matplotlib") is not None:
        return False
    if not PATCH.usable(None):
        return False
    sys.modules["matplotlib"] = None  # type: ignore[assignment]
    return True
