"""Run defaults declared once: the per-run defaults the CLI, the UI's sliders, the API's defaults and
:class:`agents.modes.RunConfig` all use, and the checks of a model id and of a value's kind.

The environment variables are declared, read and checked in the root module :mod:`settings`.
"""

from __future__ import annotations

from typing import Any

PROTOCOLS = {"text": "Text ReAct (Thought / Action / Observation)", "tools": "Native tool calls"}  # id → label
DEFAULT_MAX_STEPS = 5  # actions per run before a forced answer
MAX_STEPS_RANGE = (1, 50)  # what the engine (and the CLI) accepts
REQUEST_MAX_STEPS = 10  # the most a page or API request may ask for: the Max steps slider's end
DEFAULT_TEMPERATURE = 0.2
TEMPERATURE_RANGE = (0.0, 2.0)  # what OpenAI-compatible servers accept; the UI's slider spans it
MODEL_ID_MAX = 200  # characters: a Hub id is two names of at most 96, a provider suffix (":groq") adds a few


def model_problem(model: str, label: str = "The model id") -> str | None:
    """One line when ``model`` cannot be a model id (longer than :data:`MODEL_ID_MAX`, or with control
    characters), else None. Checked where a run takes a model, since a server would be sent it as is."""
    if len(model) > MODEL_ID_MAX:
        return f"{label} must be at most {MODEL_ID_MAX} characters (got {len(model):,})."
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in model):
        return f"{label} must be one line without control characters."
    return None


def kind_of(value: Any) -> str:
    """"a list", "a number", ... for one-line refusals of a value of the wrong type
    (the app's inputs, a mode's run options)."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    names = {list: "a list", dict: "an object", str: "text", type(None): "nothing"}
    return names.get(type(value), type(value).__name__)


def shown(value: Any) -> str:
    """A short, safe rendering of a bad value for a message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
