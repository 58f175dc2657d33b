"""Gradio's refusals of an event's inputs reach the client as one readable line, not ``{"error": null}``.

Before a handler runs, Gradio (6.31: ``Blocks.preprocess_data``) checks the inputs' number, that a file input
names an uploaded file, and each value against its component. Its failures go out as ``{"error": null}``
unless ``show_error=True``, which would also send any unexpected exception's text. :class:`ReadableRefusals`
turns such a failure into ``gr.Error`` with one line naming the input and what it accepts, never the value;
refusals Gradio already words pass unchanged. Without the patch nothing is widened.

Upstream write-up: docs/upstream.md#gradio_refusals.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from patches import Patch

PATCH = Patch("gradio_refusals", "gradio", "6.31.0")
_KINDS = {"array": "a list", "number": "a number", "integer": "a whole number", "string": "text",
          "boolean": "true or false", "object": "an object"}


def problem() -> str | None:
    import gradio
    import gradio.exceptions

    method = getattr(gradio.Blocks, "preprocess_data", None)
    if method is None or not inspect.iscoroutinefunction(method):
        return "Blocks.preprocess_data is not a coroutine any more"
    if list(inspect.signature(method).parameters)[1:] != ["block_fn", "inputs", "state", "explicit_call"]:
        return "Blocks.preprocess_data(block_fn, inputs, state, explicit_call) is not there any more"
    if not all(hasattr(gradio.exceptions, name) for name in ("Error", "InvalidPathError", "ComponentProcessingError")):
        return "gradio.exceptions lacks Error, InvalidPathError or ComponentProcessingError"
    return None


class ReadableRefusals:
    """Mixin for ``gr.Blocks``: an input Gradio refuses before the handler runs is one line for the client."""

    async def preprocess_data(self, block_fn: Any, inputs: list[Any], state: Any, explicit_call: bool = False) -> Any:
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)  # type: ignore[misc]
        except Exception as exc:
            from gradio.exceptions import Error

            if isinstance(exc, Error) or not PATCH.decided(problem):
                raise
            optional = getattr(self, "optional_tail", {}).get(str(getattr(block_fn, "api_name", "")), 0)
            raise Error(refusal_line(block_fn, inputs, exc, optional), print_exception=False) from exc


def refusal_line(block_fn: Any, inputs: list[Any], exc: Exception, optional: int = 0) -> str:
    """What was wrong with the call, in one line: which input, and what it accepts (``optional``: how many last
    inputs a call may leave out, ``patches/gradio_inputs.py``)."""
    from gradio.exceptions import InvalidPathError

    blocks = list(getattr(block_fn, "inputs", []))
    name = f"/{block_fn.api_name}" if getattr(block_fn, "api_name", None) else "This event"
    if len(inputs) < len(blocks):
        may = f", the last {optional} may be left out" if optional else ""
        return (f"{name} takes {len(blocks)} input values ({', '.join(_label(b) for b in blocks)}{may}); "
                f"this call sent {len(inputs)}.")
    if isinstance(exc, InvalidPathError):
        return ("A file input names a file that was not uploaded to this app: upload it first "
                "(POST /gradio_api/upload) and send the path it returns.")
    index = _index(exc, blocks, inputs) if isinstance(exc, ValueError | TypeError) else None
    if index is None:
        return f"{name} could not read its inputs ({type(exc).__name__}); GET /gradio_api/info lists what each accepts."
    block, value = blocks[index], inputs[index]
    return f"{_label(block)} (input {index + 1} of {name}) must be {_accepts(block)}; got {_kind(value)}."


def _index(exc: Exception, blocks: list[Any], inputs: list[Any]) -> int | None:
    """The failing input: named by Gradio's processing error (``ComponentProcessingError``), else the first file
    input whose value is not a file (its data model refused it)."""
    found = re.search(r"component at index (\d+)", str(exc))
    if found and int(found.group(1)) < len(blocks):
        return int(found.group(1))
    for i, (block, value) in enumerate(zip(blocks, inputs, strict=False)):
        if getattr(block, "data_model", None) is not None and value is not None and not _file_like(value):
            return i
    return None


def _file_like(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return all(isinstance(v, dict) and isinstance(v.get("path"), str) for v in items)


def _label(block: Any) -> str:
    label = getattr(block, "label", None)
    return str(label) if label else block.get_block_name()


def _accepts(block: Any) -> str:
    if getattr(block, "data_model", None) is not None:
        return "an uploaded file (the path /gradio_api/upload returns)"
    try:
        kind = block.api_info().get("type")
    except (AttributeError, TypeError, ValueError, NotImplementedError):  # no schema: say nothing wrong
        kind = None
    return _KINDS.get(str(kind), "a value GET /gradio_api/info describes")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    return {list: "a list", dict: "an object", str: "text"}.get(type(value), type(value).__name__)
