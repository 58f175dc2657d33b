"""The evidence test over HTTP: ``/evidence_test`` tests one mode of a finished run (an export or a share id).

It plans the change (``agents/evidence.py``), reruns the mode through the Fork's hosted run (``make_fork``) in a
Compare slot under the caller's limits (``ui/core/admission.py``: one more run of one mode, counted like any
other), and answers with the change, its verdict line and the ``evidence`` block an export keeps. Bad input is
one line (a ``gr.Error``), never a traceback.
"""

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from agents import strict_json
from agents.evidence import Change, EvidenceError, evidence_block, judge, plan_change
from agents.hosting import make_fork
from agents.llm.base import ModelBuilder
from agents.llm.settings import LLMSettings
from agents.modes.base import RunConfig
from agents.trace import Trace
from tools.page_tools import PageToolError, page_tools_of, with_page_tools
from tools.registry import ToolRegistry
from ui.core.admission import Admission, Full
from ui.core.inputs import make_config, protocol_value
from ui.core.stream import Outcome, stream
from ui.core.visitors import visitor
from ui.recordings.checks import RecordingError
from ui.recordings.reader import Recording, read_recording

API_NAME = "evidence_test"
MAX_RUN_CHARS = 20_000_000  # an export's JSON text, as the replay reader takes at most
SHARE_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")  # a share link's run id (ui/share/store.ID_RE)
SharePath = Callable[[str], Path]  # a share id → its stored export; ValueError, one line, for an unknown one


def _fail(line: str) -> gr.Error:
    return gr.Error(line, print_exception=False)


def recording_of(run: Any, share_path: SharePath | None = None) -> Recording:
    """The finished run ``run`` names: a share id (found by ``share_path``, the app's share store), or an
    export's JSON (text or object); one line when neither."""
    if isinstance(run, dict):
        run = strict_json.dumps(run)
    if not isinstance(run, str) or not run.strip():
        raise _fail("run must be a share id or the JSON of a run exported from this app.")
    if len(run) > MAX_RUN_CHARS:
        raise _fail("That run is too large to test.")
    text = run.strip()
    try:
        if SHARE_ID.fullmatch(text):
            if share_path is None:
                raise _fail("This app keeps no shared runs: pass the run's exported JSON instead.")
            return read_recording(Path(share_path(text)))
        if not text.startswith(("{", "[")):
            raise _fail("run must be a share id or the JSON of a run exported from this app.")
        return read_recording(text)
    except (RecordingError, ValueError) as exc:  # the reader's line, or the share store's (as a ValueError)
        raise _fail(str(exc)) from None


def made_with(recording: Recording, settings: LLMSettings, registry: ToolRegistry) -> tuple[
        ToolRegistry, RunConfig, LLMSettings]:
    """The tools, loop settings and model the run was made with, as the Fork takes them from its settings block."""
    block = recording.settings
    try:
        own = page_tools_of(block.get("page_tools"), registry.names)
    except PageToolError as exc:
        raise _fail(f"This run's tool written on the page cannot run again: {exc}") from None
    known = with_page_tools(registry, own)
    tools = block.get("tools") if isinstance(block.get("tools"), list) else list(registry.names)
    missing = [t for t in tools if known.resolve(str(t)) is None]
    if missing:
        raise _fail(f"This run used tools this app does not have: {', '.join(map(str, missing))[:200]}.")
    config = make_config(protocol_value(block.get("protocol")) or "text", block.get("max_steps") or 5,
                         block.get("temperature", 0.0))
    model = block.get("model") if isinstance(block.get("model"), str) and block.get("model") else None
    llm = settings.with_overrides(model=model)
    if llm.problem() is not None:
        raise _fail(f"The evidence test needs a model that can answer: {llm.problem()}")
    return known.subset(tools), config, llm


class _Collect:
    """A stream view that only collects the rerun's trace."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    def add(self, item: tuple[str, Any]) -> bool:
        self.trace.add(item[1])
        return False

    def running(self) -> None:
        return None

    async def end(self, outcome: Outcome) -> Outcome:
        return outcome


async def rerun(trace: Trace, change: Change, llm: LLMSettings, registry: ToolRegistry, config: RunConfig,
                model_factory: ModelBuilder | None = None) -> Trace:
    """The Fork of ``trace`` at the change, run to its end, as its trace."""
    try:
        run = make_fork(trace, change.step, change.edited, llm, registry, config, model_factory)
    except ValueError as exc:
        raise _fail(f"This run cannot be tested there: {exc}") from None
    view = _Collect(Trace(trace.mode, trace.question))
    outcome = [o async for o in stream(run, view)][-1]
    if outcome.failure is not None:
        raise _fail(f"The rerun failed: {outcome.failure}")
    view.trace.finish()
    return view.trace


def answer(mode: str, change: Change, rerun_trace: Trace) -> dict[str, Any]:
    """The route's JSON: the stated change, the verdict, and the block an export keeps."""
    verdict = judge(change, rerun_trace)
    return {"mode": mode, "claim": change.claim, "change": change.text, "statement": change.line(),
            "verdict": verdict.line, "outcome": verdict.outcome, "answer": verdict.answer,
            "evidence": evidence_block(mode, change, verdict)}


@dataclass(frozen=True)
class Backend:
    """What an evidence test runs with: the app's model settings and tools, its line of runs (``admission``), a
    test's model, and ``share_path``, which finds a share id's export."""

    settings: LLMSettings
    registry: ToolRegistry
    admission: Admission
    model_factory: ModelBuilder | None = None
    share_path: SharePath | None = None


async def evidence_result(run: Any, mode: Any, claim: Any, backend: Backend,
                          request: gr.Request | None = None) -> dict[str, Any]:
    """The evidence test of ``mode`` in the finished run ``run`` (an export or a share id), optionally on
    ``claim``: plan, rerun in a Compare slot under the caller's limits, judge. Bad input is one ``gr.Error``."""
    recording = recording_of(run, backend.share_path)
    if not isinstance(mode, str) or mode not in recording.traces:
        raise _fail(f"mode must be one of the run's panels: {', '.join(recording.traces)[:200]}.")
    if claim is not None and not isinstance(claim, str):
        raise _fail("claim must be text, as the answer writes it.")
    trace = recording.traces[mode]
    try:
        change = plan_change(trace, claim or None)
    except EvidenceError as exc:
        raise _fail(str(exc)) from None
    tools, config, llm = made_with(recording, backend.settings, backend.registry)
    try:
        ticket = backend.admission.ticket(visitor(request))
    except Full as exc:
        raise _fail(str(exc)) from None
    try:
        async for _place in ticket.wait():
            pass
        done = await rerun(trace, change, llm, tools, config, backend.model_factory)
    finally:
        ticket.release()
    return answer(mode, change, done)


Tester = Callable[[Any, Any, Any, "gr.Request | None"], Awaitable[dict[str, Any]]]  # (run, mode, claim, request)


def tester(backend: Backend) -> Tester:
    """:func:`evidence_result` bound to the app's settings, tools and line of runs, for another feature (the MCP
    tool's ``evidence_of``) that app.py hands it to."""

    async def test(run: Any, mode: Any, claim: Any, request: gr.Request | None = None) -> dict[str, Any]:
        return await evidence_result(run, mode, claim, backend, request)

    return test


def register(backend: Backend) -> Tester:
    """Add ``/evidence_test`` to the Blocks being built; its :func:`tester`, for the MCP tool's ``evidence_of``."""

    async def evidence_test(run: str, mode: str, claim: str | None = None,
                            request: gr.Request | None = None) -> str:
        """Test whether one mode's answer follows its evidence: change the observation its backed claim rests on,
        rerun the mode from there, and say whether the answer followed."""
        done = await evidence_result(run, mode, claim, backend, request)
        return strict_json.dumps(done, ensure_ascii=False)

    gr.api(evidence_test, api_name=API_NAME, concurrency_limit=None, concurrency_id="compare")
    return tester(backend)
