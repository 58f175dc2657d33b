"""Cleaning what models wrap around tool names and inputs: code fences, quotes, markdown, sloppy JSON.

Split from :mod:`agents.parsing`, which finds the step in a reply; these helpers only tidy the pieces
it found. Linear in the input like the parser: JSON repair only ever sees a capped slice.
"""

from __future__ import annotations

import json
import logging
import re

try:
    import json_repair
except ImportError:  # pragma: no cover - it is a pinned requirement; strict JSON still works without it
    json_repair = None

log = logging.getLogger(__name__)

_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’"}
_REPAIR_CAP = 4000  # json_repair is pure Python (~2 µs/char): never feed it more than this
_DECODER = json.JSONDecoder()


def clean_input(text: str) -> str | dict:
    """Drop a code fence and matching quotes; a JSON object (even sloppy JSON) becomes a dict."""
    text = unquote(unfence(text.strip()))
    if text.startswith("{"):
        data = load_dict(text, 0)
        if data is not None:
            return data
    return text


def load_dict(text: str, start: int) -> dict | None:
    """Strict JSON first; else ``json_repair`` on a capped slice, kept only when it yields a dict."""
    try:
        data = _DECODER.raw_decode(text, start)[0]
    except (ValueError, RecursionError):
        chunk = text[start : start + _REPAIR_CAP].split("```")[0]
        if json_repair is None or ":" not in chunk:
            return None
        try:
            data = json_repair.repair_json(chunk, return_objects=True)
        except Exception as exc:  # noqa: BLE001 - the repairer raises on deep nesting and other pathologies
            # Expected on hostile input, so no traceback (formatting a RecursionError's costs a second).
            log.warning("json_repair could not read a %d-character action input: %s: %s", len(chunk),
                        type(exc).__name__, exc)
            return None
    return data if isinstance(data, dict) else None


def lowered(data: dict | None) -> dict | None:
    """Keys lower-cased, so ``{"Action": ..., "Action_Input": ...}`` reads like the documented spelling."""
    return {str(k).lower(): v for k, v in data.items()} if data else data


def unfence(text: str) -> str:
    """The inside of a ``` fence (any language tag, closed or not); other text unchanged but a stray closer."""
    if not text.startswith("```"):
        return drop_stray_fence(text)
    inner = text[3:].split("```")[0]
    first, newline, rest = inner.partition("\n")
    if newline and re.fullmatch(r"[\w+#.-]{0,20}", first.strip()):
        inner = rest
    return inner.strip()


def drop_stray_fence(text: str) -> str:
    """Drop an unpaired closing ``` left when the reply as a whole was fenced."""
    return text.removesuffix("```").rstrip() if text.count("```") % 2 and text.endswith("```") else text


def unquote(text: str) -> str:
    """Remove one pair of surrounding quotes, unless the same quote also occurs inside."""
    text = text.strip()
    if len(text) >= 2 and _QUOTES.get(text[0]) == text[-1] and text[-1] not in text[1:-1]:
        return text[1:-1].strip()
    return text


def strip_md(text: str) -> str:
    """Remove bold/italics around text, and a dangling ``**`` left by ``**Final Answer: 42**``."""
    text = text.strip()
    for mark in ("**", "__", "*"):
        inner = text[len(mark) : -len(mark)]
        if len(text) > 2 * len(mark) and text.startswith(mark) and text.endswith(mark):
            if not (mark == "__" and inner.isidentifier()):  # keep __init__
                text = inner.strip()
    for mark in ("**", "__"):
        if text.count(mark) % 2:
            text = text[len(mark) :] if text.startswith(mark) else text.removesuffix(mark)
    return text.strip()


def clean_name(name: str) -> str:
    """A tool name without markdown, backticks, quotes, angle brackets or trailing punctuation."""
    return strip_md(name).strip("`'\"“”‘’<> \t").rstrip(".,;:").strip()
