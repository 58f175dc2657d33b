"""A REST call may leave out an endpoint's last, optional inputs (``/compare``'s ``expected``).

Gradio refuses a call with fewer inputs than the endpoint has, so appending an optional input would break every
existing REST client. :class:`OptionalTrailingInputs` pads the missing ones with None in
``Blocks.validate_inputs``. :func:`lenient` lets a value no slider could send (``"lots"``, ``NaN``) past
``Slider.preprocess`` to the handler, whose own check names the setting and its range (``ui/core/inputs.py``); a
finite number is still checked by Gradio. Off, Gradio refuses both itself: nothing is widened.

Upstream write-up: docs/upstream.md#gradio_inputs.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from patches import Patch

PATCH = Patch("gradio_inputs", "gradio", "6.31.0")


def problem() -> str | None:
    import gradio

    method = getattr(gradio.Blocks, "validate_inputs", None)
    if method is None or list(inspect.signature(method).parameters)[1:] != ["block_fn", "inputs"]:
        return "Blocks.validate_inputs(block_fn, inputs) is not there any more"
    return None


class OptionalTrailingInputs:
    """Mixin for ``gr.Blocks``: ``optional_tail`` maps an api_name to how many trailing inputs may be left out."""

    optional_tail: dict[str, int] = {}

    def validate_inputs(self, block_fn: Any, inputs: list[Any]) -> None:
        missing = len(block_fn.inputs) - len(inputs)
        if 0 < missing <= self.optional_tail.get(str(block_fn.api_name), 0) and PATCH.decided(problem):
            inputs.extend([None] * missing)
        super().validate_inputs(block_fn, inputs)  # type: ignore[misc]


def slider_problem() -> str | None:
    import gradio

    method = getattr(gradio.Slider, "preprocess", None)
    if method is None or list(inspect.signature(method).parameters) != ["self", "payload"]:
        return "Slider.preprocess(self, payload) is not there any more"
    return None


def lenient(slider: Any) -> Any:
    """``slider`` whose preprocess hands a non-number (or a non-finite one) to the handler unchanged."""
    if not PATCH.decided(slider_problem):
        return slider
    strict = slider.preprocess

    def preprocess(payload: Any) -> Any:
        if isinstance(payload, bool) or not isinstance(payload, int | float) or not math.isfinite(payload):
            return payload
        return strict(payload)

    slider.preprocess = preprocess
    return slider
