"""The Compare tab's handlers: run (``/compare``), step through (``/compare_step``, ``/step_next``,
``/step_continue``), replay (``/replay``), Stop, and the columns the mode picker shows.

They live here, not in closures inside ``build_demo``, so tests call them without a browser: a
:class:`CompareTab` needs only the backend, the tool registry and the tab's :class:`~ui.core.frame.Outputs`.
Every request is read once, into a :class:`~agents.request.RunRequest` (``ui/core/inputs.read_request``),
before anything runs.
"""


import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import gradio as gr

from agents.followup import FollowupError
from agents.modes.registry import mode_title, run_options
from ui.compare.live_run import live_run
from ui.compare.stepping import PauseBook, PauseRefused, continue_runs, next_step
from ui.core.frame import refusal
from ui.core.handlers import TabHandlers
from ui.core.inputs import PREVIOUS, beside_value, read_request
from ui.core.modes import PANEL_MODES
from ui.core.stream import session_of
from ui.core.visitors import visitor_of
from ui.recordings.export import own_export
from ui.recordings.playback import DEFAULT_SPEED, beside_in_file, modes_on_screen, play, window_of
from ui.recordings.reader import RecordingError, open_recording

TAB = "compare"  # the Stop button's key in :class:`~ui.core.stream.Stops` (runs and replays alike)


OPTIONS = run_options()  # the modes' own settings: /compare inputs after the others, /replay outputs after the question


def recorded_options(settings: dict[str, Any]) -> list[Any]:
    """A recording's run options, for the page's sliders (``/replay``'s last outputs); one it lacks, or holds
    out of range, leaves its slider as it is."""
    saved = settings.get("options")
    saved = saved if isinstance(saved, dict) else {}
    return [o.whole(saved[o.name]) if o.name in saved and o.problem(saved[o.name]) is None else gr.skip()
            for o in OPTIONS]


class CompareTab(TabHandlers):
    """The Compare tab's event handlers, bound to one app's backend and output components; ``pauses`` bounds the
    stepping runs (per visitor, in all, and how long one stays paused: ``ui/compare/stepping.PauseBook``)."""

    def __init__(self, *args: Any, pauses: PauseBook | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pauses = pauses

    async def compare(self, oauth_token: gr.OAuthToken | None = None, request: gr.Request | None = None,
                      **inputs: Any) -> AsyncIterator[list]:
        """Run the question through the chosen modes in parallel (``/compare``; its inputs by name:
        ``ui.core.inputs.COMPARE_INPUTS``, then the modes' run options such as Reflexion's ``trials``); streams
        the panels and metrics lines of the modes (``ui/core/frame.Outputs`` has their order), the status line, the
        comparison table and the export files. ``expected`` (optional) marks each mode's answer ✓ / ✗."""
        async for outputs in self._run(inputs, oauth_token, request, stepping=False):
            yield outputs

    async def step_compare(self, oauth_token: gr.OAuthToken | None = None, request: gr.Request | None = None,
                           **inputs: Any) -> AsyncIterator[list]:
        """The Step button (``/compare_step``): the same inputs and outputs as :meth:`compare`, but the modes
        pause after each step until :meth:`next_step` or :meth:`continue_run` (same session) lets them go."""
        async for outputs in self._run(inputs, oauth_token, request, stepping=True):
            yield outputs

    async def next_step(self, request: gr.Request | None = None) -> None:
        """Next step (``/step_next``): this session's paused run takes one more step in every unfinished mode."""
        next_step(self.stops.runs(session_of(request), TAB))

    async def continue_run(self, request: gr.Request | None = None) -> None:
        """Continue (``/step_continue``): this session's stepping run goes on to its end without pausing."""
        continue_runs(self.stops.runs(session_of(request), TAB))

    async def _run(self, inputs: dict[str, Any], oauth_token: gr.OAuthToken | None, request: gr.Request | None, *,
                   stepping: bool) -> AsyncIterator[list]:
        """One Compare run, stepping or not: read the request (one line for a bad one), then stream its frames."""
        # preprocess=False: inputs arrive as sent (plain strings, numbers, a list) and are checked once, here
        try:  # a follow-up from the page names its export file: read off the event loop
            inputs = {**inputs, PREVIOUS: await asyncio.to_thread(own_export, inputs.get(PREVIOUS))}
        except FollowupError as exc:
            yield refusal(str(exc)).to_outputs(self.outputs)
            return
        checked = read_request(inputs, self.registry, stepping=stepping)
        if isinstance(checked, str):
            yield refusal(checked).to_outputs(self.outputs)
            return
        settings = self.settings.with_overrides(model=checked.model, token=oauth_token.token if oauth_token else None)
        with contextlib.ExitStack() as held:
            if stepping and self.pauses is not None:
                try:  # counted for the stream's whole life: a visitor who leaves gives it back at once
                    held.enter_context(self.pauses.hold(visitor_of(request)))
                except PauseRefused as exc:
                    yield refusal(str(exc), short="⏸ No room for another paused run: see the status line.").to_outputs(
                        self.outputs)
                    return
            with self.stops.signal(session_of(request), TAB) as stop:
                async for frame in live_run(checked, settings, self.registry, model_factory=self.model_factory,
                                            admission=self.admission, stop=stop, beside=beside_value(inputs),
                                            pause_ttl_s=self.pauses.ttl_s if self.pauses else None):
                    yield frame.to_outputs(self.outputs)

    async def play(self, path: str | None, speed_label: str = DEFAULT_SPEED,
                   request: gr.Request | None = None) -> AsyncIterator[list]:
        """Replay a JSON export in the panels (no model or network needed), and put its question, run options and
        modes (the picker, last) back on the page."""
        try:  # read, checked and condensed in a worker process: a 20 MB file never stalls the app
            recording = await open_recording(path if isinstance(path, str) else "", window_of(speed_label))
        except RecordingError as exc:
            yield [*refusal(str(exc)).to_outputs(self.outputs, files=False), gr.skip(), *(gr.skip(),) * len(OPTIONS),
                   gr.skip()]
            return
        options, modes = recorded_options(recording.settings), modes_on_screen(recording)
        with self.stops.signal(session_of(request), TAB) as stop:
            async for frame in play(recording, speed_label, stop=stop):
                yield [*frame.to_outputs(self.outputs, files=False), recording.question, *options, modes]

    async def stop(self, request: gr.Request | None = None) -> None:
        """The Stop button: ends this visitor's run or replay; each stream renders its own stopped frame."""
        self.stops.stop(session_of(request), TAB)

    @staticmethod
    def reveal_beside(path: str | None) -> tuple:
        """A replayed run with a fork continued in a new panel opens the panel beside, titled with the fork; one
        without closes it (it would stay empty: the recording has nothing for it)."""
        if not isinstance(path, str):
            return gr.skip(), gr.skip()
        fork = beside_in_file(path)
        if fork is None:
            return gr.Column(visible=False), gr.skip()
        return gr.Column(visible=True), gr.Chatbot(label=mode_title(fork))

    @staticmethod
    def show_modes(chosen: list[str] | None) -> list:
        """The mode picker's columns: a column per chosen mode, in the page's order."""
        picked = set(chosen or ())
        return [gr.Column(visible=m in picked) for m in PANEL_MODES]
