"""The modes the page shows, read from the mode registry (``agents/modes/registry.py``).

The base modes are the fixed Compare panels and the radio's choices; the hybrids can fill a fourth panel.
Imports no Gradio, so the recording reader's worker process can use it.
"""

from __future__ import annotations

from agents.modes.registry import list_modes, mode_ids, panel_ids

MODES = mode_ids("base")
MODE_CHOICES = {**{s.label: (s.id,) for s in list_modes("base")}, "All": MODES}  # the Compare radio
# Every other non-benchmark mode (the paper's hybrids) can be shown in a fourth panel beside them.
EXTRA_CHOICES = {"None": None, **{s.label: s.id for s in list_modes("extra")}}
PANEL_MODES = panel_ids()


def extra_mode(choice: str | None) -> str | None:
    """A fourth-panel choice (label or mode id) → mode id, None for none; ValueError if unknown."""
    if choice in (None, "", "None", "none"):
        return None
    if choice in EXTRA_CHOICES:
        return EXTRA_CHOICES[choice]
    if choice in EXTRA_CHOICES.values():
        return choice
    raise ValueError(f"Unknown fourth panel {choice!r}: choose one of {', '.join(EXTRA_CHOICES)}.")
