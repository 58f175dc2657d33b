"""The Compare tab's handlers: run (``/compare``), step through (``/compare_step``, ``/step_next``,
``/step_continue``), replay (``/replay``), Stop, and the fourth panel.

They live here, not in closures inside ``build_demo``, so tests call them without a browser: a
:class:`CompareTab` needs only the backend, the tool registry and the tab's :class:`~ui.core.frame.Outputs`.
Every request is checked once, by :func:`check_request`, before anything runs.
"""


import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from agents.comparison import validate_question
from agents.modes import RunConfig
from agents.modes.registry import mode_title
from tools.registry import ToolRegistry
from ui.compare.live_run import live_run
from ui.compare.stepping import PauseBook, PauseRefused, continue_runs, next_step
from ui.core.frame import refusal
from ui.core.handlers import TabHandlers
from ui.core.inputs import compare_problem, make_config, protocol_value, trials_problem, trials_value
from ui.core.modes import MODE_CHOICES, extra_mode
from ui.core.stream import session_of
from ui.core.verdicts import expected_problem
from ui.core.visitors import visitor_of
from ui.recordings.playback import DEFAULT_SPEED, hybrid_in_file, play, window_of
from ui.recordings.reader import RecordingError, open_recording

TAB = "compare"  # the Stop button's key in :class:`~ui.core.stream.Stops` (runs and replays alike)


@dataclass(frozen=True)
class CompareRequest:
    """A checked ``/compare`` request: the modes to run (the selection plus an optional extra panel's mode)."""

    question: str
    selection: str
    modes: tuple[str, ...]
    registry: ToolRegistry
    config: RunConfig
    expected: str | None = None  # the teacher's expected answer: each mode is marked ✓ / ✗ against it
    trials: int | None = None  # Reflexion's attempts (None: its default)


def check_request(question: Any, mode: Any, model: Any, protocol: Any, max_steps: Any, temperature: Any,
                  tools: Any, fourth: Any, max_tokens: Any, registry: ToolRegistry,
                  expected: Any = None, trials: Any = None) -> CompareRequest | str:
    """The request to run, or one line saying what is wrong with it (no model is called for a bad one)."""
    problem = validate_question(question) or compare_problem(
        mode=mode, model=model, protocol=protocol, max_steps=max_steps, temperature=temperature, tools=tools,
        fourth=fourth, registry=registry, max_tokens=max_tokens) or expected_problem(expected) \
        or trials_problem(trials)
    if problem is not None:
        return problem
    try:
        extra = extra_mode(fourth)
    except ValueError as exc:
        return str(exc)
    modes = MODE_CHOICES[mode] + ((extra,) if extra else ())
    config = make_config(protocol_value(protocol) or "text", max_steps, temperature, max_tokens)
    return CompareRequest(question, mode, modes, registry.subset(tools), config, expected or None,
                          trials_value(trials))


class CompareTab(TabHandlers):
    """The Compare tab's event handlers, bound to one app's backend and output components; ``pauses`` bounds the
    stepping runs (per visitor, in all, and how long one stays paused: ``ui/compare/stepping.PauseBook``)."""

    def __init__(self, *args: Any, pauses: PauseBook | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pauses = pauses

    async def compare(self, question: str, mode: str = "All", model: str | None = None, protocol: str = "text",
                      max_steps: float = 5, temperature: float = 0.2, tools: list[str] | None = None,
                      fourth: str = "None", max_tokens: float | None = None, expected: str | None = None,
                      trials: float | None = None, oauth_token: gr.OAuthToken | None = None,
                      request: gr.Request | None = None) -> AsyncIterator[list]:
        """Run the question through the chosen modes in parallel; streams the base panels (three by default),
        their metrics lines, the status line, the comparison table, the export files, and the extra panel
        with its metrics. ``max_tokens`` caps each reply (None: LLM_MAX_TOKENS);
        ``expected`` (optional) marks each mode's answer ✓ / ✗ in the table and metrics; ``trials`` (the last
        input, optional) is how many attempts Reflexion may make."""
        async for outputs in self._run((question, mode, model, protocol, max_steps, temperature, tools, fourth,
                                         max_tokens, expected, trials), oauth_token, request, stepping=False):
            yield outputs

    async def step_compare(self, question: str, mode: str = "All", model: str | None = None, protocol: str = "text",
                           max_steps: float = 5, temperature: float = 0.2, tools: list[str] | None = None,
                           fourth: str = "None", max_tokens: float | None = None, expected: str | None = None,
                           trials: float | None = None, oauth_token: gr.OAuthToken | None = None,
                           request: gr.Request | None = None) -> AsyncIterator[list]:
        """The Step button (``/compare_step``): the same inputs and outputs as :meth:`compare`, but the modes
        pause after each step until :meth:`next_step` or :meth:`continue_run` (same session) lets them go."""
        async for outputs in self._run((question, mode, model, protocol, max_steps, temperature, tools, fourth,
                                         max_tokens, expected, trials), oauth_token, request, stepping=True):
            yield outputs

    async def next_step(self, request: gr.Request | None = None) -> None:
        """Next step (``/step_next``): this session's paused run takes one more step in every unfinished mode."""
        next_step(self.stops.runs(session_of(request), TAB))

    async def continue_run(self, request: gr.Request | None = None) -> None:
        """Continue (``/step_continue``): this session's stepping run goes on to its end without pausing."""
        continue_runs(self.stops.runs(session_of(request), TAB))

    async def _run(self, inputs: tuple, oauth_token: gr.OAuthToken | None, request: gr.Request | None, *,
                   stepping: bool) -> AsyncIterator[list]:
        """One Compare run, stepping or not: check the request, then stream its frames."""
        question, mode, model, protocol, max_steps, temperature, tools, fourth, max_tokens, expected, trials = inputs
        # preprocess=False: inputs arrive as sent (plain strings, numbers, a list); they are checked
        # once here (one clear line, no model call), which saves Gradio a thread hop per input.
        checked = check_request(question, mode, model, protocol, max_steps, temperature, tools, fourth, max_tokens,
                                self.registry, expected, trials)
        if isinstance(checked, str):
            yield refusal(checked).to_outputs(self.outputs)
            return
        run_settings = self.settings.with_overrides(model=model or None,
                                                    token=oauth_token.token if oauth_token else None)
        with contextlib.ExitStack() as held:
            if stepping and self.pauses is not None:
                try:  # counted for the stream's whole life: a visitor who leaves gives it back at once
                    held.enter_context(self.pauses.hold(visitor_of(request)))
                except PauseRefused as exc:
                    yield refusal(str(exc), short="⏸ No room for another paused run: see the status line.").to_outputs(
                        self.outputs)
                    return
            with self.stops.signal(session_of(request), TAB) as stop:
                async for frame in live_run(checked.question, checked.selection, checked.modes, run_settings,
                                            checked.registry, checked.config, model_factory=self.model_factory,
                                            admission=self.admission, stop=stop, expected=checked.expected,
                                            trials=checked.trials,
                                            stepping=stepping, pause_ttl_s=self.pauses.ttl_s if self.pauses else None):
                    yield frame.to_outputs(self.outputs)

    async def play(self, path: str | None, speed_label: str = DEFAULT_SPEED,
                   request: gr.Request | None = None) -> AsyncIterator[list]:
        """Replay a JSON export in the panels (no model or network needed)."""
        try:  # read, checked and condensed in a worker process: a 20 MB file never stalls the app
            recording = await open_recording(path if isinstance(path, str) else "", window_of(speed_label))
        except RecordingError as exc:
            yield [*refusal(str(exc)).to_outputs(self.outputs, files=False), gr.skip()]
            return
        with self.stops.signal(session_of(request), TAB) as stop:
            async for frame in play(recording, speed_label, stop=stop):
                yield [*frame.to_outputs(self.outputs, files=False), recording.question]

    async def stop(self, request: gr.Request | None = None) -> None:
        """The Stop button: ends this visitor's run or replay; each stream renders its own stopped frame."""
        self.stops.stop(session_of(request), TAB)

    @staticmethod
    def reveal_fourth(path: str | None) -> tuple:
        """A replayed run with a hybrid (or a fork in a new panel) opens the fourth panel, titled with it;
        one without closes it (it would stay empty: the recording has nothing for it)."""
        if not isinstance(path, str):
            return gr.skip(), gr.skip()
        hybrid = hybrid_in_file(path)
        if hybrid is None:
            return gr.Column(visible=False), gr.skip()
        return gr.Column(visible=True), gr.Chatbot(label=mode_title(hybrid))

    @staticmethod
    def show_fourth(choice: str) -> tuple:
        """The fourth-panel dropdown shows (and titles) the hybrid panel, or hides it."""
        return gr.Column(visible=choice != "None"), gr.Chatbot(label=choice)
