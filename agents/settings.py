"""Run defaults declared once, and the one reader every environment variable goes through.

Why one reader: a typo in ``APP_CONCURRENCY`` or ``LLM_TIMEOUT`` must neither crash the app at import
with a traceback nor be replaced silently by a default. :func:`env_int`, :func:`env_float` and
:func:`env_text` and :func:`env_bool` check the type and the range and raise :class:`SettingError` whose message is
the one line to show, e.g. ``APP_CONCURRENCY must be an integer from 1 to 1000, got 'abc'``.
An unset or empty variable means the default. Nothing reads the environment at import time: the
app (``python app.py``) and the CLI read it at start-up and turn a :class:`SettingError` into that
line and a non-zero exit.

Homes: model settings (``LLM_*``, ``HF_TOKEN``) in :mod:`agents.llm.settings`; the app's
(``APP_*``, ``BENCH_*``) in :mod:`ui.core.settings`; the per-run defaults below, which the CLI, the
UI's sliders, the API's defaults and :class:`agents.modes.RunConfig` all use.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
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


class SettingError(ValueError):
    """An environment variable with a value the app cannot use; ``str(exc)`` is one line naming it."""


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    return value.strip() if value is not None and value.strip() else None


def _shown(value: str) -> str:
    """The bad value as the message quotes it: never a long one in full (it may be a pasted secret)."""
    return repr(value if len(value) <= 40 else value[:37] + "...")


def _number(value: float) -> str:
    return f"{value:g}"


def env_int(name: str, default: int, low: int, high: int, environ: Mapping[str, str] | None = None) -> int:
    """An integer from ``low`` to ``high`` (inclusive), or ``default`` when unset."""
    raw = _raw(name, environ)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise SettingError(f"{name} must be an integer from {low} to {high}, got {_shown(raw)}")
    return value


def env_float(name: str, default: float, low: float, high: float, environ: Mapping[str, str] | None = None,
              *, unit: str = "") -> float:
    """A finite number from ``low`` to ``high`` (inclusive), or ``default`` when unset."""
    raw = _raw(name, environ)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        what = f"a number of {unit}" if unit else "a number"
        raise SettingError(f"{name} must be {what} from {_number(low)} to {_number(high)}, got {_shown(raw)}")
    return value


_BOOLS = {"1": True, "0": False, "true": True, "false": False, "on": True, "off": False, "yes": True, "no": False}


def env_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    """A switch: 1/0, true/false, on/off or yes/no (any case), or ``default`` when unset.

    Anything else is refused rather than read as "off": ``APP_MCP=disabled`` must not leave a server on.
    """
    raw = _raw(name, environ)
    if raw is None:
        return default
    value = _BOOLS.get(raw.lower())
    if value is None:
        raise SettingError(f"{name} must be one of 1/0, true/false, on/off, yes/no, got {_shown(raw)}")
    return value


def env_text(name: str, default: str | None = None, environ: Mapping[str, str] | None = None, *,
             prefixes: tuple[str, ...] = (), secret: bool = False) -> str | None:
    """A stripped string, or ``default`` when unset; with ``prefixes`` it must start with one of them.

    A ``secret`` value is never quoted in the message.
    """
    raw = _raw(name, environ)
    if raw is None:
        return default
    if any(ch in raw for ch in "\r\n\x00"):
        got = "" if secret else f", got {_shown(raw)}"
        raise SettingError(f"{name} must be one line without control characters{got}")
    if prefixes and not raw.lower().startswith(prefixes):
        got = "" if secret else f", got {_shown(raw)}"
        raise SettingError(f"{name} must start with {' or '.join(prefixes)}{got}")
    return raw
