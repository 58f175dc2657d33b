"""What an API client may send to ``/compare`` and ``/benchmark``, checked into one clear line.

The events use ``preprocess=False`` (cheaper), so values arrive as sent: ``1e400`` (JSON's
infinity), ``NaN``, a list where a name belongs, a tool that does not exist, a 10,000-character
model id, ``max_tokens=-5``. Each is refused here with a sentence that names the setting and the
range it accepts — never a bare error, a traceback, or a value silently changed to fit — before any
model is called.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agents.comparison import validate_question
from agents.followup import FollowupError
from agents.modes import RunConfig
from agents.modes.registry import run_options
from agents.request import RunRequest
from agents.settings import (
    DEFAULT_MAX_STEPS,
    DEFAULT_TEMPERATURE,
    PROTOCOLS,
    REQUEST_MAX_STEPS,
    TEMPERATURE_RANGE,
    kind_of,
    model_problem,
    shown,
)
from tools.page_tools import PageTool, PageToolError, page_tools_of, with_page_tools
from tools.registry import ToolRegistry, normalize_name
from ui.core.followup import read_previous
from ui.core.modes import BASE, SINGLE_CHOICES, ModeChoiceError, chosen_modes, named_mode, selection_text
from ui.core.verdicts import expected_problem

COMPARE_INPUTS = ("question", "mode", "model", "protocol", "max_steps", "temperature", "tools", "fourth",
                  "max_tokens", "expected")  # /compare's named inputs, in order; the run options follow, then PREVIOUS
PREVIOUS = "previous"  # /compare's input after the options: the earlier turn a follow-up continues (ui/core/followup)
PAGE_TOOLS = "page_tools"  # the last: the visitor's tools written on the page (a gr.State: the page's, never REST's)


class Refused(ValueError):
    """A bad input: ``str(exc)`` is the one line to show."""

MAX_TOKENS_LIMIT = 32768  # the largest per-reply budget a request may ask for (the Max tokens box's end)


def number_problem(value: Any, label: str, low: float, high: float) -> str | None:
    """None for a finite number (or numeric text); else what ``label`` accepts."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return f"{label} must be a number from {low:g} to {high:g} (got {kind_of(value)})."
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return f"{label} must be a number from {low:g} to {high:g} (got {shown(value)})."
    if not math.isfinite(number):
        return f"{label} must be a number from {low:g} to {high:g} (got {shown(number)})."
    return None


def range_problem(value: Any, label: str, low: float, high: float, *, whole: bool = False) -> str | None:
    """None for a number (or numeric text) from ``low`` to ``high``, a whole one when ``whole``; else one line
    naming the range. Out of range is refused, never clamped: a request runs as it was sent or not at all."""
    problem = number_problem(value, label, low, high)
    if problem is not None:
        return problem
    number = float(value)
    if low <= number <= high and (not whole or number.is_integer()):
        return None
    return f"{label} must be {'a whole number' if whole else 'a number'} from {low:g} to {high:g} (got {shown(value)})."


def tools_problem(tools: Any, registry: ToolRegistry) -> str | None:
    """None when ``tools`` is None (all) or a list of known tool names; else which names are unknown."""
    if tools is None:
        return None
    if not isinstance(tools, list | tuple) or not all(isinstance(t, str) for t in tools):
        available = ", ".join(registry.names)
        return f"Enabled tools must be a list of tool names (got {kind_of(tools)}); available: {available}."
    known = {normalize_name(n) for n in registry.names}
    unknown = [t for t in tools if normalize_name(t) not in known]
    if unknown:
        names = ", ".join(shown(t) for t in unknown[:5]) + (" …" if len(unknown) > 5 else "")
        return f"Unknown tool(s): {names}. Available tools: {', '.join(registry.names) or 'none'}."
    return None


def protocol_value(protocol: Any) -> str | None:
    """``text``/``tools`` from the value or its label; None when it is neither."""
    if not isinstance(protocol, str):
        return None
    key = protocol.strip().lower()
    if key in PROTOCOLS:
        return key
    return "tools" if key.startswith("native") else "text" if key.startswith("text") else None


def settings_problem(*, model: Any, protocol: Any, max_steps: Any, temperature: Any, tools: Any,
                     registry: ToolRegistry) -> str | None:
    """The Settings accordion's values, shared by Compare and Benchmark."""
    if model is not None and not isinstance(model, str):
        return f"The model must be a model id (text), not {kind_of(model)}."
    if model is not None and (problem := model_problem(model.strip())):
        return problem
    if protocol is not None and protocol_value(protocol) is None:
        return f"Unknown protocol {shown(protocol)}: choose text or tools."
    return (range_problem(max_steps, "Max steps", 1, REQUEST_MAX_STEPS, whole=True)
            or range_problem(temperature, "Temperature", *TEMPERATURE_RANGE)
            or tools_problem(tools, registry))


def expected_value(expected: Any) -> str | None:
    """The teacher's expected answer, or None when there is none."""
    if (problem := expected_problem(expected)) is not None:
        raise Refused(problem)
    return expected or None


def modes_value(mode: Any, fourth: Any = None) -> tuple[str, ...]:
    """The modes to run: the picker's list of mode ids (or an older single choice such as "All"), and the mode
    the older ``fourth`` input names, if any (``ui/core/modes.py``)."""
    try:
        modes, beside = chosen_modes(mode), named_mode(fourth)
    except ModeChoiceError as exc:
        raise Refused(str(exc)) from None
    return modes if beside is None or beside in modes else (*modes, beside)


def beside_value(inputs: Mapping[str, Any]) -> str | None:
    """The mode the older ``fourth`` input named, which ``/compare`` also returns at the outputs of the panel
    beside (an accepted request's; None for none)."""
    try:
        return named_mode(inputs.get("fourth"))
    except ModeChoiceError:
        return None


def options_value(inputs: Mapping[str, Any]) -> dict[str, int]:
    """The modes' own options (:func:`~agents.modes.registry.run_options`) the request sets; one left out or None
    is the mode's default."""
    values = {}
    for option in run_options():
        value = inputs.get(option.name)
        if value is not None:
            if (problem := option.problem(value)) is not None:
                raise Refused(problem)
            values[option.name] = option.whole(value)
    return values


def read_request(inputs: Mapping[str, Any], registry: ToolRegistry, *, stepping: bool = False) -> RunRequest | str:
    """``/compare``'s inputs (by name: :data:`COMPARE_INPUTS`, then the run options) as the one request every
    layer after this takes, or the one line saying what is wrong (nothing is run for a bad request)."""
    get = inputs.get
    try:
        if (problem := validate_question(get("question"))) is not None:
            raise Refused(problem)
        modes = modes_value(get("mode", list(BASE)), get("fourth"))
        max_tokens = get("max_tokens")
        if max_tokens is not None and (problem := range_problem(max_tokens, "Max tokens", 1, MAX_TOKENS_LIMIT,
                                                                whole=True)):
            raise Refused(problem)
        own = page_tools_of(get(PAGE_TOOLS), registry.names)
        if problem := settings_problem(model=get("model"), protocol=get("protocol", "text"),
                                       max_steps=get("max_steps", DEFAULT_MAX_STEPS),
                                       temperature=get("temperature", DEFAULT_TEMPERATURE), tools=get("tools"),
                                       registry=with_page_tools(registry, own)):
            raise Refused(problem)
        expected, options = expected_value(get("expected")), options_value(inputs)
        continued = read_previous(get(PREVIOUS), modes)
    except (Refused, FollowupError, PageToolError) as exc:
        return str(exc)
    followup, history = continued if continued is not None else (None, {})
    config = make_config(protocol_value(get("protocol", "text")) or "text", get("max_steps", DEFAULT_MAX_STEPS),
                         get("temperature", DEFAULT_TEMPERATURE), max_tokens)
    tools = get("tools")
    return RunRequest(get("question"), modes, config.protocol, config.max_steps, config.temperature or 0.0,
                      config.max_tokens, tools=tuple(tools) if tools is not None else None,
                      model=get("model") or None, expected=expected, options=options, stepping=stepping,
                      selection=selection_of(get("mode"), modes), history=history, followup=followup,
                      page_tools=enabled(own, tools))


def enabled(own: tuple[PageTool, ...], tools: Any) -> tuple[PageTool, ...]:
    """The visitor's tools written on the page that ``tools`` (the enabled names; None: all) names."""
    wanted = None if tools is None else {normalize_name(t) for t in tools}
    return tuple(p for p in own if wanted is None or normalize_name(p.name) in wanted)


def selection_of(mode: Any, modes: tuple[str, ...]) -> str:
    """The status line's name for what was picked: an older single choice as sent ("All"), else the modes."""
    return mode if isinstance(mode, str) and mode in SINGLE_CHOICES else selection_text(modes)


def make_config(protocol: str, max_steps: Any, temperature: Any, max_tokens: Any = None) -> RunConfig:
    """Settings as a run takes them (no ``max_tokens``: LLM_MAX_TOKENS). The doors refuse values out of range first
    (:func:`read_request`, :func:`settings_problem`); the clamp here only guards values they do not see, such
    as a recording's settings block that a fork reuses."""
    try:
        steps = min(REQUEST_MAX_STEPS, max(1, int(float(max_steps))))
    except (TypeError, ValueError, OverflowError):  # NaN, infinity, text: the default (callers refuse them first)
        steps = DEFAULT_MAX_STEPS
    try:
        temp = min(TEMPERATURE_RANGE[1], max(TEMPERATURE_RANGE[0], float(temperature)))
    except (TypeError, ValueError, OverflowError):
        temp = DEFAULT_TEMPERATURE
    if temp != temp:  # NaN
        temp = DEFAULT_TEMPERATURE
    try:
        tokens: int | None = min(MAX_TOKENS_LIMIT, max(1, int(max_tokens))) if max_tokens is not None else None
    except (TypeError, ValueError, OverflowError):
        tokens = None
    return RunConfig(protocol=protocol if protocol in PROTOCOLS else "text", max_steps=steps, temperature=temp,
                     max_tokens=tokens)
