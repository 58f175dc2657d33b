"""Fork from here: the accordion's layout, wiring and handlers.

Pick a panel (``fork-mode``) and one of its observations (``fork-step``; Think-only: its reasoning), edit it
(``fork-text``), and **Fork from here** (``fork-btn``) continues that mode live, in a new panel beside the
modes or in place (``fork-where``). **🔬 Test the evidence** (``fork-evidence``) does the edit itself on the
chosen panel: it changes the observation the answer's backed claim rests on (``agents/evidence.plan_change``),
states the change, forks beside the original, and the view judges the answer at the end. The run is made by
``agents.hosting.make_fork``, waits for a Compare slot and streams through ``ui/core/stream.py`` into
:class:`~ui.fork.view.ForkView`. Every event here is private.
"""


import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from agents.evidence import NEEDS_A_MODEL, EvidenceError, plan_change
from agents.fork import forkable_modes
from agents.hosting import make_fork
from agents.modes.registry import fork_id, mode_title
from tools.page_tools import PageToolError, page_tools_of, with_page_tools
from ui.core import followup, render
from ui.core.admission import Full
from ui.core.frame import Outputs
from ui.core.handlers import TabHandlers
from ui.core.inputs import make_config, protocol_value
from ui.core.lesson import Lesson, Shown
from ui.core.modes import BASE, BESIDE
from ui.core.stream import session_of, stream
from ui.core.visitors import Visitor, visitor
from ui.fork.screen import (
    IN_PLACE,
    NEW_PANEL,
    NOTHING,
    WHERE,
    Screen,
    choice_value,
    edit_problem,
    edits_reasoning,
    load_screen,
    original_text,
    parse_choice,
    path_of,
    screen_of,
    step_choices,
)
from ui.fork.view import ForkMade, ForkView, skip_all
from ui.recordings.reader import RecordingError

log = logging.getLogger(__name__)

TAB = "compare"  # a fork is a Compare stream: the tab's Stop ends it, and a run in progress blocks a fork
BUSY = "A run is still going: wait for it to finish (or press Stop, or Step to pause it), then fork."
STALE = "That observation belongs to a run no longer on screen: pick the panel and the observation again."
WAIT_FOR_STOP_S = 5.0
OBSERVATION, REASONING = "Observation", "Reasoning"  # the step box's label: what the chosen panel's steps are


@dataclass(frozen=True)
class Chosen:
    """What the Settings accordion says (used only where the run on screen does not say its own)."""

    model: Any = None
    protocol: Any = "text"
    max_steps: Any = 5
    temperature: Any = 0.2
    tools: Any = None
    max_tokens: Any = None


CHOSEN = tuple(Chosen.__dataclass_fields__)  # the fork's and the evidence test's named inputs (``wire``)


@dataclass(frozen=True)
class Edit:
    """A fork asked for: the panel, its step, the edited text, and where the fork continues."""

    panel: Any
    step: Any
    text: Any
    where: Any


class ForkTab(TabHandlers):
    """The Fork controls' handlers, bound to one app's backend, Compare outputs, line, Stop table and lessons."""

    async def screen(self, request: gr.Request | None = None) -> Screen | str:
        """The run on screen (the lesson's: a finished run's export, or a paused run's traces so far), or one line
        saying why there is none to fork."""
        lesson = self.lessons.of(request)
        if (paused := lesson.paused_run()) is not None and paused.paused is not None:
            return screen_of(paused.paused())
        shown = lesson.on_screen("fork")
        if isinstance(shown, str):
            return BUSY if lesson.live is not None else NOTHING
        path = path_of(shown.export)
        if path is None:
            return NOTHING
        try:
            return await asyncio.to_thread(load_screen, path)
        except RecordingError as exc:
            return str(exc)

    async def refresh(self, panel: Any, step: Any, request: gr.Request | None = None) -> tuple:
        """After a run ends or pauses, or a replay is loaded: the panels, the observations and the text.

        The status line can change more than once as a run ends, and each change refreshes: when the
        panel and the observation picked are still on screen (a choice carries a digest of its text), the
        teacher's edit in the box is kept, not reset to the original."""
        screen = await self.screen(request)
        if isinstance(screen, str):
            empty = gr.Dropdown(choices=[], value=None, info=screen)
            return empty, gr.Dropdown(choices=[], value=None), ""
        panels = screen.forkable()
        keys = [k for _, k in panels]
        # kept if still on screen; else the last of the paper's panels (ReAct, the one a class interrogates)
        chosen = panel if panel in keys else next((k for k in reversed(keys) if k in BASE), None)
        steps, text, value = self._steps(screen, chosen, step if chosen == panel else None)
        kept = chosen == panel and step is not None and value == step
        info = f"{len(panels)} panel{'s' if len(panels) != 1 else ''} to fork from"
        return gr.Dropdown(choices=panels, value=chosen, info=info), steps, gr.skip() if kept else text

    async def pick_panel(self, panel: Any, request: gr.Request | None = None) -> tuple:
        """A panel was picked: its observations, the first one's text in the box."""
        screen = await self.screen(request)
        if isinstance(screen, str):
            return gr.Dropdown(choices=[], value=None, info=screen), ""
        return self._steps(screen, panel if isinstance(panel, str) else None, None)[:2]

    async def pick_step(self, panel: Any, step: Any, request: gr.Request | None = None) -> Any:
        """An observation was picked: its text in the box, to edit."""
        screen = await self.screen(request)
        chosen = parse_choice(step)
        if isinstance(screen, str) or chosen is None or panel not in screen.traces:
            return gr.skip()
        return original_text(screen.traces[panel], chosen[0]) or ""

    @staticmethod
    def _steps(screen: Screen, panel: str | None, step: Any) -> tuple[Any, str, str | None]:
        """The panel's observations as a dropdown (``step`` kept if still a choice), the picked one's text, and
        which it is: a ``gr.Dropdown`` made in an event is only an update, with no ``.value`` to read back."""
        if panel is None or panel not in screen.traces:
            return gr.Dropdown(choices=[], value=None, label=OBSERVATION), "", None
        trace = screen.traces[panel]
        choices = step_choices(trace)
        values = [v for _, v in choices]
        value = step if step in values else (values[0] if values else None)
        info = None if choices else "This panel has no observation to edit."
        text = original_text(trace, values.index(value)) if value else ""
        label = REASONING if edits_reasoning(trace) else OBSERVATION  # what the chosen panel's steps are
        return gr.Dropdown(choices=choices, value=value, info=info, label=label), text or "", value

    async def fork(self, panel: Any, step: Any, text: Any, where: Any, oauth_token: gr.OAuthToken | None = None,
                   request: gr.Request | None = None, **chosen: Any) -> AsyncIterator[list]:
        """Fork from here: the chosen mode continues live from the edited text; one line if it cannot.
        ``chosen``: :class:`Chosen`'s fields, by name."""
        screen = await self.screen(request)
        async for values in self._run(screen, Edit(panel, step, text, where), Chosen(**chosen), oauth_token,
                                      request):
            yield values

    async def test_evidence(self, panel: Any, oauth_token: gr.OAuthToken | None = None,
                            request: gr.Request | None = None, **chosen: Any) -> AsyncIterator[list]:
        """🔬 Test the evidence: the chosen panel's backed claim, its observation changed as stated, forked in a
        new panel beside the original and judged at the end; one line if it cannot."""
        screen = await self.screen(request)
        if isinstance(screen, str):
            yield skip_all(self.outputs, f"⚠ {render.safe_markdown(screen)}")
            return
        if not isinstance(panel, str) or panel not in screen.traces:
            yield skip_all(self.outputs, "⚠ Pick the panel whose evidence to test first.")
            return
        try:
            change = plan_change(screen.trace_to_fork(panel))
        except EvidenceError as exc:
            yield skip_all(self.outputs, f"⚠ {render.safe_markdown(str(exc))}")
            return
        if self.settings.problem() is not None and oauth_token is None:
            yield skip_all(self.outputs, f"⚠ {render.safe_markdown(NEEDS_A_MODEL)}")
            return
        edit = Edit(panel, choice_value(change.step, change.original), change.edited, NEW_PANEL)
        async for values in self._run(screen, edit, Chosen(**chosen), oauth_token, request,
                                      evidence=(panel, change)):
            yield values

    async def _run(self, screen: Screen | str, edit: Edit, chosen: Chosen, oauth_token: gr.OAuthToken | None,
                   request: gr.Request | None,
                   evidence: tuple | None = None) -> AsyncIterator[list]:
        """A checked fork of ``screen``, made and streamed in a Compare slot; ``evidence`` (the tested panel and
        the change) makes it an evidence test."""
        lesson = self.lessons.of(request)
        checked = screen if isinstance(screen, str) else self._check(screen, edit)
        if isinstance(checked, str):
            yield skip_all(self.outputs, f"⚠ {render.safe_markdown(checked)}")
            return
        assert isinstance(screen, Screen)
        index, slot = checked
        panel = edit.panel
        built = self._make(screen, panel, index, edit.text, chosen, oauth_token)
        if isinstance(built, str):
            yield skip_all(self.outputs, f"⚠ {render.safe_markdown(built)}")
            return
        run, made, llm_settings = built
        await self._stop_paused(lesson)
        base = lesson.shown or Shown("step", None, lesson.live.turns if lesson.live else ())
        key = fork_id(screen.trace_to_fork(panel).mode, index)
        with self.stops.signal(session_of(request), TAB) as stop:
            live = lesson.begin("fork", stop, base.turns)
            view = ForkView(screen, key, slot, self.outputs, made, render.plain(llm_settings.describe()),
                            done=lambda path: lesson.end(live, base.forked(path, key, slot == BESIDE)),
                            evidence=evidence)
            try:
                async for values in self._in_slot(run, view, stop, visitor(request)):
                    yield values
            finally:
                lesson.left(live, base)  # no slot, nothing forked: the run stays on screen as it was

    def _check(self, screen: Screen, edit: Edit) -> tuple[int, str] | str:
        """(observation index, slot) for a valid request, else one line."""
        panel, step, text, where = edit.panel, edit.step, edit.text, edit.where
        if not isinstance(panel, str) or panel not in screen.traces:
            return "Pick a panel to fork from (the run on screen has changed)." if panel else "Pick a panel first."
        if panel not in dict((k, t) for t, k in screen.forkable()):
            names = ", ".join(s.title for s in forkable_modes())
            return (f"{mode_title(panel)} cannot be forked: it combines several runs. "
                    f"Fork one of {names} (or a fork of one).")
        chosen = parse_choice(step)
        if chosen is None:
            return "Pick the observation to change first."
        original = original_text(screen.traces[panel], chosen[0])
        if original is None or step not in [v for _, v in step_choices(screen.traces[panel])]:
            return STALE
        if where not in (NEW_PANEL, IN_PLACE):
            return f"Choose where the fork continues: {' or '.join(label for label, _ in WHERE)}."
        return edit_problem(text) or (chosen[0], BESIDE if where == NEW_PANEL else screen.trace_to_fork(panel).mode)

    def _make(self, screen: Screen, panel: str, index: int, text: str, chosen: Chosen,
              oauth_token: gr.OAuthToken | None) -> tuple | str:
        """The fork's run, what it was made with (its export settings, registry and config) and model settings —
        the original run's where it says them."""
        model, protocol, max_steps, temperature, tools, max_tokens = (chosen.model, chosen.protocol, chosen.max_steps,
                                                                      chosen.temperature, chosen.tools,
                                                                      chosen.max_tokens)
        block = screen.settings
        tools = block.get("tools") if isinstance(block.get("tools"), list) else tools
        try:  # the run's tools written on the page, made again from their source
            own = page_tools_of(block.get("page_tools"), self.registry.names)
        except PageToolError as exc:
            return f"This run's tool written on the page cannot run again: {exc}"
        known = with_page_tools(self.registry, own)
        missing = [t for t in tools or [] if known.resolve(str(t)) is None]
        if missing:
            return f"This run used tools this app does not have: {', '.join(map(str, missing))[:200]}."
        protocol = protocol_value(block.get("protocol")) or protocol_value(protocol) or "text"
        config = make_config(protocol, block.get("max_steps") or max_steps,
                             block.get("temperature", temperature), max_tokens)
        registry = known.subset(tools)
        model = block.get("model") if isinstance(block.get("model"), str) and block.get("model") else model
        llm_settings = self.settings.with_overrides(model=model if isinstance(model, str) else None,
                                                    token=oauth_token.token if oauth_token else None)
        if llm_settings.problem() is not None:
            return str(llm_settings.problem())
        try:
            trace = screen.trace_to_fork(panel)
            run = make_fork(trace, index, text, llm_settings, registry, config, self.model_factory,
                            history=followup.history_of(screen.previous, panel))
        except ValueError as exc:
            return f"This run cannot be forked there: {exc}"
        settings_block = {**block, "protocol": config.protocol, "max_steps": config.max_steps,
                          "temperature": config.temperature, "tools": registry.names}
        return run, ForkMade(settings_block, registry, config), llm_settings

    @staticmethod
    async def _stop_paused(lesson: Lesson) -> None:
        """A paused run on screen ends (its stopped frame and export first) before the fork writes the panels."""
        if (live := lesson.live) is None:
            return
        live.stop.stop()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_FOR_STOP_S
        while lesson.live is live and loop.time() < deadline:
            await asyncio.sleep(0.05)

    async def _in_slot(self, run: Any, view: ForkView, stop: Any, who: Visitor) -> AsyncIterator[list]:
        """Wait for a Compare slot like a run does (the place in line in the status only, counted against the
        visitor's live runs), then stream."""
        try:
            ticket = self.admission.ticket(who) if self.admission is not None else None
        except Full as exc:
            yield skip_all(self.outputs, f"⚠ {render.safe_markdown(str(exc))}")
            return
        try:
            if ticket is not None:
                stop.on_stop(ticket.cancel)
                async for place in ticket.wait():
                    yield skip_all(self.outputs, f"⏳ The app is busy: your fork is **number {place}** in the queue.")
                if stop.stopped:
                    yield skip_all(self.outputs, "■ Stopped while waiting for a free slot: nothing was forked.")
                    return
            async for values in stream(run, view, stop=stop):
                yield values
        finally:
            if ticket is not None:
                ticket.release()


@dataclass(frozen=True)
class ForkControls:
    """The Fork accordion's components."""

    panel: gr.Dropdown
    step: gr.Dropdown
    text: gr.Textbox
    where: gr.Radio
    button: gr.Button
    evidence: gr.Button


def layout() -> ForkControls:
    """Under the Compare panels: pick a panel and an observation, edit it, fork."""
    with gr.Accordion("✎ Fork: change an observation and let the mode continue from there", open=False,
                      elem_id="fork"):
        with gr.Row(equal_height=True):
            panel = gr.Dropdown([], label="Panel", info=NOTHING, scale=1, elem_id="fork-mode")
            step = gr.Dropdown([], label=OBSERVATION, scale=3, elem_id="fork-step")
            where = gr.Radio(WHERE, value=NEW_PANEL, label="Continue", scale=1, elem_id="fork-where")
        text = gr.Textbox(label="Edited text (what the tool says now, or the new reasoning)", lines=3, max_lines=12,
                          elem_id="fork-text")
        with gr.Row():
            button = gr.Button("✎ Fork from here", variant="primary", elem_id="fork-btn")
            evidence = gr.Button("🔬 Test the evidence", variant="secondary", elem_id="fork-evidence")
    return ForkControls(panel, step, text, where, button, evidence)


def wire(handlers: ForkTab, controls: ForkControls, outputs: Outputs, beside_col: gr.Column,
         knobs: list[gr.Component]) -> None:
    """Choices refresh when the status line changes (a run ends or pauses, a replay or shared run is shown), from
    the run on screen the page's lesson names; the button streams the fork. All private. ``knobs``: model,
    protocol, max steps, temperature, tools, max tokens (used only where the run on screen does not say its own)."""
    private: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden", "preprocess": False}
    outputs.status.change(handlers.refresh, [controls.panel, controls.step],
                          [controls.panel, controls.step, controls.text], queue=False, **private)
    controls.panel.input(handlers.pick_panel, [controls.panel], [controls.step, controls.text], queue=False,
                         **private)
    controls.step.input(handlers.pick_step, [controls.panel, controls.step], controls.text, queue=False, **private)
    named = dict(zip(CHOSEN, knobs, strict=True))
    run: dict[str, Any] = {"inputs_kwargs": named, "outputs": [*outputs.all(), beside_col],
                           "concurrency_limit": None, "concurrency_id": "compare", "trigger_mode": "once",
                           "postprocess": False, **private}
    controls.button.click(handlers.fork, [controls.panel, controls.step, controls.text, controls.where], **run)
    controls.evidence.click(handlers.test_evidence, [controls.panel], **run)
