"""JSON as every strict reader takes it: no ``NaN``, ``Infinity`` or ``-Infinity``, written or read.

Python's :mod:`json` writes and reads those three by default, though no JSON reader of another language accepts
them. Every export, record and answer the app writes goes through :func:`dumps` (a number that is not finite is
written ``null``: no value the app makes is one, so this only guards), and every file it reads back from a
visitor through :func:`loads`, which refuses them as bad JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)``, strict: a float that is not finite becomes ``null``."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(finite(value), allow_nan=False, **options)


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, strict: ``NaN``, ``Infinity`` and a number too large for a float (``1e400``) are a
    ``ValueError``, as any malformed JSON is."""
    return json.loads(text, parse_constant=_refuse, parse_float=_float)


def why(error: ValueError) -> str:
    """What :func:`loads` found wrong, in a few words (where, for malformed JSON)."""
    return f"{error.msg} at line {error.lineno}" if isinstance(error, json.JSONDecodeError) else str(error)


def finite(value: Any, depth: int = 0) -> Any:
    """``value`` with every float that is not finite replaced by None (containers copied)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth > 200:
        return value
    if isinstance(value, dict):
        return {k: finite(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v, depth + 1) for v in value]
    return value


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is too large a number")
    return number
