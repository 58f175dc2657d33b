"""Garbage collection for a long-lived server process: the start-up heap set aside, young objects collected less often.

Why: with CPython's default thresholds a busy server runs many young collections, and every full one walks all
the objects Gradio and the app create at start-up, pausing the event loop, the page and every stream.
:func:`settle` freezes what exists once the process is ready (``gc.freeze``: those objects live as long as the
process anyway, and are never walked again) and raises the young-generation threshold, so a burst of short-lived
frames is collected in a few larger sweeps. Reference cycles are still collected; nothing else changes.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000  # allocations (net) between young collections; CPython's default is 700


def settle() -> None:
    """Call once the process has built everything it keeps for its lifetime (after launch, after imports)."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, max(middle, 20), old)
