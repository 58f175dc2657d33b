"""The app as an MCP server with exactly one tool, ``compare_reasoning_modes``.

:class:`OneToolMCP` serves this one tool, or no MCP at all (``patches/gradio_mcp.py``), so no MCP caller
reaches the tool registry's tools. The tool runs the engine with the app's settings, the same input checks as
Compare and the same waiting line (``ui/core/admission.py``). With ``evidence_of`` (a finished run's export or
share id) the same tool runs the evidence test of one mode instead: the tester app.py hands over
(``ui/fork/evidence.tester``, what ``/evidence_test`` runs). ``APP_MCP=0`` turns the MCP server off.
"""


import asyncio
import contextlib
import importlib.util
import io
import logging
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import gradio as gr

from agents import strict_json
from agents.comparison import validate_question
from agents.correctness import clean_expected, judge
from agents.followup import FollowupError
from agents.hosting import make_run
from agents.llm.base import ModelBuilder
from agents.llm.settings import LLMSettings
from agents.modes.registry import list_modes, mode_title, panel_ids
from agents.request import RunRequest
from agents.trace import Trace
from patches.gradio_mcp import OneTool
from tools.registry import ToolRegistry
from ui.core.admission import Admission, Full
from ui.core.followup import export_fields, read_previous
from ui.core.modes import BASE
from ui.core.settings import app_settings
from ui.core.stream import Outcome, stream
from ui.core.verdicts import expected_problem
from ui.core.visitors import visitor

log = logging.getLogger(__name__)

TOOL_NAME = "compare_reasoning_modes"
# (run, mode, claim, request) → the evidence test's result, as /evidence_test gives it (ui/fork/evidence.tester)
EvidenceTester = Callable[[Any, str, "str | None", "gr.Request | None"], Awaitable[dict[str, Any]]]
# What a caller may name a base mode by: its id, title, label or paper row ("cot", "Think-only", …).
COMPARED = panel_ids()  # every mode with a panel: the base three and the picker's other choices
_ALIASES = {name.lower(): spec.id for spec in list_modes("base", "more")
            for name in (spec.id, spec.title, spec.label, spec.paper_row) if name}


def mcp_enabled() -> bool:
    """``APP_MCP`` (default on; ``0``/``false``/``off``/``no`` turns it off), and only if the ``mcp`` package is
    there."""
    if not app_settings().mcp:
        return False
    if importlib.util.find_spec("mcp") is None:
        log.warning("APP_MCP is on but the mcp package is missing (pip install 'gradio[mcp]'): no MCP server")
        return False
    return True


class OneToolMCP(OneTool):
    """Mixin for ``gr.Blocks``: MCP on unless ``APP_MCP=0``, serving :data:`TOOL_NAME` only
    (``patches/gradio_mcp.py``)."""

    one_tool = TOOL_NAME

    def launch(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("mcp_server", mcp_enabled())
        with warnings.catch_warnings():
            # Gradio warns of the gr.State inputs (/compare's page_tools) of tools it makes before the server is
            # narrowed to this one tool, which has none
            warnings.filterwarnings("ignore", "This MCP server includes a tool that has a gr.State input")
            if kwargs["mcp_server"] and kwargs.get("quiet") and kwargs.get("prevent_thread_lock"):
                # Gradio prints the MCP URL even when quiet, and a launcher that reads the app's first
                # line of output (tests/app/fault_kit.py) would read that instead of its own.
                with contextlib.redirect_stdout(io.StringIO()):
                    return super().launch(*args, **kwargs)  # type: ignore[misc]
            return super().launch(*args, **kwargs)  # type: ignore[misc]


def parse_modes(modes: Any) -> tuple[str, ...] | str:
    """Mode names from the tool's argument (a list, or text such as "All" or "think, react") → mode ids,
    or a one-line reason to refuse them. Nothing (or "all") is the three base modes; any mode a panel can show
    (:data:`COMPARED`) may be named, by id, title, label or paper row."""
    if modes is None or modes == "" or modes == []:
        return BASE
    if isinstance(modes, str):
        modes = [m for m in modes.replace(",", " ").split()]
    if not isinstance(modes, list | tuple) or not all(isinstance(m, str) for m in modes):
        return f"modes must be a list of mode names: {', '.join(COMPARED)} (or \"all\")."
    if [m.lower() for m in modes] == ["all"]:
        return BASE
    unknown = [m for m in modes if m.strip().lower() not in _ALIASES]
    if unknown:
        return (f"Unknown mode(s) {', '.join(repr(m) for m in unknown[:5])}: "
                f"choose from {', '.join(COMPARED)} (or \"all\").")
    chosen = {_ALIASES[m.strip().lower()] for m in modes}
    return tuple(m for m in COMPARED if m in chosen)


def description() -> str:
    """The tool's description (its docstring, which Gradio sends to MCP clients), built from the mode registry."""
    base = ", ".join(mode_title(m) for m in BASE)
    quoted = ", ".join(f'"{m}"' for m in BASE)
    others = "; ".join(f'"{s.id}" ({s.title})' for s in list_modes("more"))
    return (f"Run one question through reasoning modes of a language model side by side ({base} by default, as "
            "in Yao et al., ReAct) and compare them: each mode's answer, whether it is right, its steps, tokens, "
            "seconds and full trace. Returns JSON text.\n\n"
            "Args:\n"
            "    question: The question to answer (at most 2,000 characters).\n"
            f"    modes: Which modes to run: any of {quoted}"
            f"{'; or the others: ' + others if others else ''}; empty or \"all\" for the three base modes.\n"
            "    expected: Optional expected answer; each mode is then marked ✓ or ✗ by the ReAct paper's scoring "
            "(normalised exact match, numbers by value) with its F1.\n"
            "    previous: Optional, for a follow-up question: the JSON text this tool returned for the earlier turn. "
            "Each mode then continues its own conversation (its earlier questions, observations and answers).\n"
            "    evidence_of: Optional: a finished run (the JSON text this tool or the app exported, or a share id). "
            "The tool then tests the evidence of the one mode `modes` names instead of comparing: it changes the "
            "observation the answer's backed claim rests on, reruns that mode from there, and returns the change "
            "and a one-line verdict. `question` may then be empty.\n"
            "    claim: Optional, with evidence_of: which claim of the answer to test, as the answer writes it.\n")


def result(question: str, expected: str | None, traces: dict[str, Trace]) -> dict[str, Any]:
    """What the tool returns: per mode the answer, ✓/✗ and F1 (with an expected answer), steps, tokens,
    seconds and the trace as Markdown text."""
    modes = {}
    for mode, trace in traces.items():
        verdict = judge(trace.answer, expected, question) if expected else None
        modes[mode] = {
            "title": mode_title(mode),
            "answer": trace.answer,
            "correct": None if verdict is None else verdict.correct,
            "mark": None if verdict is None else verdict.mark,
            "f1": None if verdict is None else round(verdict.f1, 4),
            "error": trace.error,
            "forced": trace.forced,
            "steps": trace.step_count,
            "llm_calls": trace.llm_calls,
            "tool_calls": trace.tool_calls,
            "tokens": {"prompt": trace.prompt_tokens, "completion": trace.completion_tokens,
                       "estimated": trace.tokens_estimated},
            "seconds": round(trace.elapsed_s, 2),
            "trace": trace.to_markdown(),
        }
    return {"question": question, "expected": expected, "modes": modes}


class _Collect:
    """A stream view that shows nothing: it only collects one :class:`Trace` per mode for the tool's answer."""

    def __init__(self, question: str, modes: tuple[str, ...]) -> None:
        self.traces = {m: Trace(m, question) for m in modes}

    def add(self, item: tuple[str, Any]) -> bool:
        self.traces[item[0]].add(item[1])
        return False

    def running(self) -> None:
        return None

    async def end(self, outcome: Outcome) -> Outcome:
        return outcome


async def run_traces(request: RunRequest, settings: LLMSettings, registry: ToolRegistry,
                     model_factory: ModelBuilder | None = None) -> dict[str, Trace]:
    """Run the modes to the end, hosted like a Compare run (``agents/hosting``), through the one stream adapter
    (``ui/core/stream.py``: started off the event loop, polled, closed however it ends — a cancelled call stops
    every mode)."""
    run = make_run(request, settings, registry, model_factory)
    view = _Collect(request.question, request.modes)
    outcome = [o async for o in stream(run, view)][-1]  # the view shows nothing while running: only its end
    if outcome.failure is not None:
        raise gr.Error(f"The run failed: {outcome.failure}", print_exception=False)
    return view.traces


def followup_request(question: str, modes: tuple[str, ...], expected: str | None, previous: Any) -> RunRequest:
    """The tool's run: a new question, or a follow-up of the turn whose answer ``previous`` is (JSON text; a
    tampered, foreign or malformed one is refused in one line)."""
    if previous is not None and not isinstance(previous, str | dict):
        raise gr.Error("previous must be the JSON text this tool returned for the earlier turn.", print_exception=False)
    try:
        continued = read_previous(previous, modes)
    except FollowupError as exc:
        raise gr.Error(str(exc), print_exception=False) from None
    followup, history = continued if continued is not None else (None, {})
    return RunRequest(question, modes, expected=expected, history=history, followup=followup)


def evidence_mode(modes: Any) -> str:
    """The one mode an evidence test names (``modes``: one name, by id, title, label or paper row), or a
    ``gr.Error``."""
    chosen = parse_modes(modes) if modes not in (None, "", []) else "name the one mode to test in modes."
    if isinstance(chosen, str) or len(chosen) != 1:
        problem = chosen if isinstance(chosen, str) else "name exactly one mode to test in modes."
        raise gr.Error(f"With evidence_of, {problem[0].lower()}{problem[1:]}", print_exception=False)
    return chosen[0]


def register(settings: LLMSettings, registry: ToolRegistry, admission: Admission, *,
             model_factory: ModelBuilder | None = None, evidence: EvidenceTester | None = None) -> None:
    """Add the ``/compare_reasoning_modes`` endpoint (the MCP tool) to the Blocks being built; ``evidence``
    runs an evidence test for ``evidence_of`` (none: the tool refuses it in one line)."""

    async def compare_reasoning_modes(question: str, modes: list[str] | None = None,
                                      expected: str | None = None, previous: str | None = None,
                                      evidence_of: str | None = None, claim: str | None = None,
                                      request: gr.Request | None = None) -> str:
        if evidence_of is not None and evidence_of != "":
            if evidence is None:
                raise gr.Error("This app runs no evidence tests.", print_exception=False)
            done = await evidence(evidence_of, evidence_mode(modes), claim or None, request)
            return strict_json.dumps(done, ensure_ascii=False)
        chosen = parse_modes(modes)
        problem = validate_question(question) or (chosen if isinstance(chosen, str) else None) \
            or expected_problem(expected) or (str(settings.problem()) if settings.problem() else None)
        if problem is not None:
            raise gr.Error(problem, print_exception=False)
        assert isinstance(chosen, tuple)
        asked = followup_request(question, chosen, clean_expected(expected), previous)
        try:
            ticket = admission.ticket(visitor(request))  # the MCP caller's (ui/core/visitors.RELAY)
        except Full as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        try:
            async for _place in ticket.wait():
                pass
            # the Compare tab's defaults (max_tokens: LLM_MAX_TOKENS): the tool takes no model or settings
            traces = await run_traces(asked, settings, registry, model_factory)
        finally:
            ticket.release()
        answer = result(question, clean_expected(expected), traces)
        answer.update(await asyncio.to_thread(export_fields, asked, traces, registry))  # turn, its block
        return strict_json.dumps(answer, ensure_ascii=False)

    compare_reasoning_modes.__doc__ = description()  # the modes as the registry has them today
    gr.api(compare_reasoning_modes, api_name=TOOL_NAME, concurrency_limit=None, concurrency_id="compare")
