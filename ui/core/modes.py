"""The modes the page shows, read from the mode registry (``agents/modes/registry.py``), and how a request names them.

Every panel mode has a column of its own on the Compare tab; the mode picker beside the question chooses which are
on screen (the base modes by default). :func:`chosen_modes` reads what a request asks for: a list of mode ids (or
labels), or one of the older single choices ("All", "Think", …). Imports no Gradio, so the recording reader's
worker process can use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents.modes.registry import list_modes, mode_ids, panel_ids
from agents.settings import kind_of, shown

BASE = mode_ids("base")  # on screen by default; their panels are /compare's first outputs
PANEL_MODES = panel_ids()  # every mode with a panel: the picker's choices, in the page's order
MORE = PANEL_MODES[len(BASE):]  # the picker's other choices: their panels are /compare's last outputs
PICKER_CHOICES = [(s.title, s.id) for s in list_modes("base", "more")]  # (shown: the panel's name, sent)
SINGLE_CHOICES = {**{s.label: (s.id,) for s in list_modes("base")}, "All": BASE}  # the `mode` values before the picker
BESIDE = "beside"  # the panel beside the modes: a fork continued in a new panel
_NAMES = {name.lower(): s.id for s in list_modes("base", "more") for name in (s.id, s.label, s.title)}
_BENCH_ONLY = {name.lower(): s.title for s in list_modes("benchmark") for name in (s.id, s.label, s.title)}


class ModeChoiceError(ValueError):
    """A request's modes cannot be read: the message is the one line to show."""


def chosen_modes(value: Any) -> tuple[str, ...]:
    """The panel modes a request asks for, in the page's order: a list (or tuple) of mode ids or labels, or one
    of :data:`SINGLE_CHOICES` ("All": the base modes) or a single id or label."""
    if isinstance(value, str):
        if value in SINGLE_CHOICES:
            return SINGLE_CHOICES[value]
        return _in_order([value])
    if isinstance(value, list | tuple):
        if not value:
            raise ModeChoiceError("Pick at least one mode to run.")
        if not all(isinstance(v, str) for v in value):
            raise ModeChoiceError(f"The modes must be mode ids (text), e.g. {list(BASE)} (got {kind_of(value)}).")
        return _in_order(value)
    raise ModeChoiceError(f"The modes must be a list of mode ids, e.g. {list(BASE)}, or one of "
                          f"{', '.join(SINGLE_CHOICES)} (got {kind_of(value)}).")


def _in_order(names: Iterable[str]) -> tuple[str, ...]:
    ids = set()
    for name in names:
        mode = _NAMES.get(name.strip().lower())
        if name.strip().lower() in _BENCH_ONLY:
            raise ModeChoiceError(f"{_BENCH_ONLY[name.strip().lower()]} has no panel: it runs on the Benchmark tab "
                                  "(a row of the paper's table).")
        if mode is None:
            raise ModeChoiceError(f"Unknown mode {shown(name)}: choose from {', '.join(PANEL_MODES)} "
                                  f"(or {', '.join(SINGLE_CHOICES)}).")
        ids.add(mode)
    return tuple(m for m in PANEL_MODES if m in ids)


def named_mode(value: Any) -> str | None:
    """The older ``fourth`` input of ``/compare`` (one more mode, by label or id; "None" or empty for none): that
    mode joins the run and is also returned at the outputs of the panel beside (docs/api.md)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    if not isinstance(value, str):
        raise ModeChoiceError(f"`fourth` must be a mode id (text), not {kind_of(value)}: choose from "
                              f"{', '.join(MORE)}.")
    if value.strip().lower() not in _NAMES:
        raise ModeChoiceError(f"Unknown mode {shown(value)} for `fourth`: choose from {', '.join(MORE)} (or leave it "
                              "empty).")
    return _NAMES[value.strip().lower()]


def selection_text(modes: tuple[str, ...]) -> str:
    """How the status line and the export name a set of modes: "All" for the base modes, else their labels."""
    if modes == BASE:
        return "All"
    labels = {s.id: s.label for s in list_modes()}
    return ", ".join(labels.get(m, m) for m in modes)
