"""The Compare tab's handlers: run (``/compare``), step through (``/compare_step``, ``/step_next``,
``/step_continue``), a follow-up, replay (``/replay``, and the page's own Replay), Stop, and the picker's columns.

They live here, not in closures inside ``build_demo``, so tests call them without a browser: a
:class:`CompareTab` needs only the backend, the tool registry and the tab's :class:`~ui.core.frame.Outputs`.
Every request is read once, into a :class:`~agents.request.RunRequest` (``ui/core/inputs.read_request``),
before anything runs; what each leaves on screen goes to the page's lesson (``ui/core/lesson.py``).
"""


import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import gradio as gr

from agents.followup import FollowupError
from agents.llm.settings import LLMSettings
from agents.modes.registry import forked_mode, mode_title, run_options
from agents.request import RunRequest
from ui.compare import followups
from ui.compare.live_run import Serving, live_run
from ui.compare.stepping import PauseBook, PauseRefused, continue_runs, next_step
from ui.core.frame import Frame, refusal
from ui.core.handlers import TabHandlers
from ui.core.inputs import PREVIOUS, beside_value, read_request
from ui.core.lesson import Lesson, Shown, Source, Turn
from ui.core.modes import PANEL_MODES
from ui.core.stream import session_of
from ui.core.visitors import visitor
from ui.recordings.export import json_of, own_export
from ui.recordings.playback import DEFAULT_SPEED, beside_in_file, beside_of, modes_on_screen, play, window_of
from ui.recordings.reader import Recording, RecordingError, open_recording

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

    async def follow_up(self, oauth_token: gr.OAuthToken | None = None, request: gr.Request | None = None,
                        **inputs: Any) -> AsyncIterator[list]:
        """Ask a follow-up (the page's own event): every panel on screen continues its conversation with the new
        question, read from the lesson (``ui/compare/followups.py``); one line, and the run left as it is, when
        the run on screen cannot be continued."""
        async for outputs in self._follow(inputs, oauth_token, request, stepping=False):
            yield outputs

    async def step_follow_up(self, oauth_token: gr.OAuthToken | None = None, request: gr.Request | None = None,
                             **inputs: Any) -> AsyncIterator[list]:
        """Step a follow-up: :meth:`follow_up`, pausing after each step as Step does."""
        async for outputs in self._follow(inputs, oauth_token, request, stepping=True):
            yield outputs

    async def next_step(self, request: gr.Request | None = None) -> None:
        """Next step (``/step_next``): this session's paused run takes one more step in every unfinished mode."""
        live = self.lessons.of(request).live
        next_step([live.run] if live is not None and live.run is not None else [])

    async def continue_run(self, request: gr.Request | None = None) -> None:
        """Continue (``/step_continue``): this session's stepping run goes on to its end without pausing."""
        live = self.lessons.of(request).live
        continue_runs([live.run] if live is not None and live.run is not None else [])

    async def _run(self, inputs: dict[str, Any], oauth_token: gr.OAuthToken | None, request: gr.Request | None, *,
                   stepping: bool) -> AsyncIterator[list]:
        """One Compare run, stepping or not: read the request (one line for a bad one), then stream its frames."""
        # preprocess=False: inputs arrive as sent (plain strings, numbers, a list) and are checked once, here
        lesson = self.lessons.of(request)
        try:  # an API caller's follow-up may name an export file of this app's: read off the event loop
            inputs = {**inputs, PREVIOUS: await asyncio.to_thread(own_export, inputs.get(PREVIOUS))}
        except FollowupError as exc:
            lesson.clear()
            yield refusal(str(exc)).to_outputs(self.outputs)
            return
        checked = read_request(inputs, self.registry, stepping=stepping)
        if isinstance(checked, str):
            lesson.clear()  # the panels now show the refusal
            yield refusal(checked).to_outputs(self.outputs)
            return
        async for outputs in self._stream(lesson, checked, oauth_token, request, beside_value(inputs), alongside=True):
            yield outputs

    async def _follow(self, inputs: dict[str, Any], oauth_token: gr.OAuthToken | None, request: gr.Request | None,
                      *, stepping: bool) -> AsyncIterator[list]:
        """A follow-up of the run on screen; a refusal changes the status line only."""
        lesson = self.lessons.of(request)
        shown = lesson.on_screen("ask a follow-up")
        checked = shown if isinstance(shown, str) else read_request({**inputs, PREVIOUS: None}, self.registry,
                                                                    stepping=stepping)
        if not isinstance(checked, str):
            assert isinstance(shown, Shown)
            model = checked.model or self.settings.model
            checked = await followups.continued(shown, checked, model)
        if isinstance(checked, str):
            yield self.outputs.only_status(f"⚠ {checked}")
            return
        beside = shown.beside if isinstance(shown, Shown) and shown.beside in checked.modes else None
        async for outputs in self._stream(lesson, checked, oauth_token, request, beside):
            yield outputs

    async def _stream(self, lesson: Lesson, checked: RunRequest, oauth_token: gr.OAuthToken | None,
                      request: gr.Request | None, beside: str | None, *,
                      alongside: bool = False) -> AsyncIterator[list]:
        """Stream an accepted request into the panels; what it leaves on screen goes to the lesson with its last
        frame. ``alongside``: an earlier stream of the session goes on (``Lesson.begin``)."""
        settings = self.settings.with_overrides(model=checked.model, token=oauth_token.token if oauth_token else None)
        who = visitor(request)
        with contextlib.ExitStack() as held:
            if checked.stepping and self.pauses is not None:
                try:  # counted for the stream's whole life: a visitor who leaves gives it back at once
                    held.enter_context(self.pauses.hold(who.key))
                except PauseRefused as exc:
                    lesson.clear()
                    yield refusal(str(exc), short="⏸ No room for another paused run: see the status line.").to_outputs(
                        self.outputs)
                    return
            with self.stops.signal(session_of(request), TAB) as stop:
                live = lesson.begin("step" if checked.stepping else "run", stop, turns_of(checked), alongside=alongside)
                try:
                    serving = Serving(self.model_factory, admission=self.admission, stop=stop, beside=beside,
                                      pause_ttl_s=self.pauses.ttl_s if self.pauses else None, visitor=who,
                                      on_stepping=lambda run, traces: lesson.stepping(live, run, traces))
                    async for frame in live_run(checked, settings, self.registry, serving):
                        if frame.final:
                            lesson.end(live, ran(live.source, checked, frame, beside, settings))
                        yield frame.to_outputs(self.outputs)
                finally:
                    lesson.left(live)

    async def play(self, path: str | None, speed_label: str = DEFAULT_SPEED,
                   request: gr.Request | None = None) -> AsyncIterator[list]:
        """Replay a JSON export in the panels (``/replay``: no model or network needed), put its question, run
        options and modes (the picker) back on the page, and last its step-aligned map."""
        async for values, _ in self._play(path, speed_label, request, alongside=True):
            yield values

    async def play_on_page(self, path: str | None, speed_label: str = DEFAULT_SPEED,
                           request: gr.Request | None = None) -> AsyncIterator[list]:
        """The page's Replay: :meth:`play`'s outputs, then the turn's own expected answer (the box the table marks
        against)."""
        first = True
        async for values, recording in self._play(path, speed_label, request):
            if recording is None:  # a file that does not replay: one line, and the run on screen stays
                status = self.outputs.all(files=False).index(self.outputs.status)
                yield [values[status] if i == status else gr.skip() for i in range(len(values) + 1)]
                return
            yield [*values, (recording.expected or "") if first else gr.skip()]
            first = False

    async def _play(self, path: str | None, speed_label: str, request: gr.Request | None,
                    alongside: bool = False) -> AsyncIterator[tuple[list, Recording | None]]:
        lesson = self.lessons.of(request)
        try:  # read, checked and condensed in a worker process: a 20 MB file never stalls the app
            recording = await open_recording(path if isinstance(path, str) else "", window_of(speed_label))
        except RecordingError as exc:
            yield [*refusal(str(exc)).to_outputs(self.outputs, files=False, step_map=False), gr.skip(),
                   *(gr.skip(),) * len(OPTIONS), gr.skip(), ""], None
            return
        options, modes = recorded_options(recording.settings), modes_on_screen(recording)
        with self.stops.signal(session_of(request), TAB) as stop:
            live = lesson.begin("replay", stop, alongside=alongside)
            try:
                async for frame in play(recording, speed_label, stop=stop):
                    if frame.final:
                        lesson.end(live, replayed(recording, str(path)))
                    yield [*frame.to_outputs(self.outputs, files=False, step_map=False), recording.question, *options,
                           modes, frame.step_map], recording
            finally:
                lesson.left(live)

    def followup_row(self, request: gr.Request | None = None) -> Any:
        """The follow-up buttons show while a finished run is on screen (a live run's, a fork's, a replayed or
        shared run's, a benchmark item's)."""
        lesson = self.lessons.of(request)
        return gr.Row(visible=lesson.shown is not None and lesson.live is None)

    def followup_start(self, given: bool, expected: str | None, request: gr.Request | None = None) -> tuple:
        """As a follow-up starts: its Expected answer is the one the teacher gave it (typed, or its example's),
        else empty — the turn on screen's own is not the follow-up's, each turn is marked against its own; the
        fork beside stays on screen when the follow-up continues it; the last share link goes."""
        shown = self.lessons.of(request).shown
        box = expected if isinstance(expected, str) else ""
        stale = shown is not None and not given and box.strip() == (shown.turn.expected or "").strip()
        return ("" if stale else box, False, "", gr.Column(visible=shown is not None and shown.beside is not None))

    def page_run(self, request: gr.Request | None = None) -> tuple:
        """The page's Run or Step, before the run starts: a replay or a paused run on screen stops
        (``Lesson.interrupt``), and the last share link, the panel beside and the mark "Expected answer given"
        go."""
        self.lessons.of(request).interrupt()
        return "", gr.Column(visible=False), False

    def closed(self, request: gr.Request) -> None:
        """The page closed (``demo.unload``): its lesson is given back, and a stream it still had ends."""
        lesson = self.lessons.close(request)
        if lesson is not None and lesson.live is not None:
            lesson.live.stop.stop()

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


def turns_of(request: RunRequest) -> tuple[Turn, ...]:
    """A run's turns: those it continues (each with its own expected answer and forks), then its own."""
    previous = request.followup.previous.turns if request.followup is not None else ()
    return (*(Turn.of_block(t) for t in previous), Turn(request.question, request.expected))


def ran(source: Source, request: RunRequest, frame: Frame, beside: str | None, settings: LLMSettings) -> Shown:
    """What a live run's last frame leaves on screen."""
    fork = beside if beside in request.modes and forked_mode(beside or "") is not None else None
    return Shown(source, json_of(frame.files), turns_of(request), beside=fork, model=settings.model)


def replayed(recording: Recording, path: str) -> Shown:
    """What a replay leaves on screen: the replayed file, which a fork, a follow-up and Share read."""
    previous = recording.previous.turns if recording.previous is not None else ()
    model = recording.settings.get("model")
    return Shown("replay", path, (*(Turn.of_block(t) for t in previous), Turn(recording.question, recording.expected)),
                 beside=beside_of(recording), model=model if isinstance(model, str) else None,
                 followup=recording.followup)
