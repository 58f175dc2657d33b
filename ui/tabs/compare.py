"""The Compare tab's layout: the question row, examples, class poll, status line, panels, table, fork, share, export
and replay.

:class:`ComparePage` holds the components its events read or write (wired in ``app.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from agents.modes.registry import mode_title
from ui.core.frame import Outputs
from ui.core.modes import BASE, PANEL_MODES, PICKER_CHOICES
from ui.core.verdicts import MAX_EXPECTED_CHARS
from ui.fork import accordion
from ui.page import parts
from ui.page.examples import Example
from ui.poll import controls as poll_controls
from ui.recordings.playback import DEFAULT_SPEED, SPEEDS


@dataclass(frozen=True)
class ComparePage:
    """The Compare tab's components that events read or write."""

    question: gr.Textbox
    expected: gr.Textbox
    expected_given: gr.Checkbox  # hidden: the Expected answer was typed or set by an example since the last turn
    modes: gr.Dropdown  # the mode picker: which panel modes are on screen and run
    run_btn: gr.Button
    stop_btn: gr.Button
    outputs: Outputs
    columns: tuple[gr.Column, ...]  # one per panel mode, in PANEL_MODES order: shown when picked
    beside_col: gr.Column  # the panel beside the modes (a fork continued in a new panel)
    fourth: gr.Textbox  # /compare's older `fourth` input (docs/api.md): hidden, the page never fills it
    previous: gr.Textbox  # /compare's `previous` input, for API callers: the page's follow-up reads its lesson
    followup: FollowupButtons  # after a run: the question goes on in every mode's conversation
    replay_file: gr.File
    speed: gr.Radio
    replay_btn: gr.Button
    replay_api: gr.Button  # hidden: /replay's trigger (the page's Replay is its own event, which also sets the box)
    share_btn: gr.Button
    share_link: gr.Markdown
    step: StepButtons
    fork: accordion.ForkControls
    poll: poll_controls.PollControls  # near Run: the class predicts, then sees the reveal
    examples: list[tuple[gr.Button, Example]]

    def on_screen(self) -> list[gr.Component]:
        """What a run put on screen from a file also sets (a shared link, a benchmark item): the question, the
        expected answer, the picker and the panel beside (``ui/recordings/playback.run_on_screen``)."""
        return [self.question, self.expected, self.modes, self.beside_col]


@dataclass(frozen=True)
class FollowupButtons:
    """The row under the question once a run has an export: Ask a follow-up, and Step through one."""

    row: gr.Row
    ask_btn: gr.Button
    step_btn: gr.Button


@dataclass(frozen=True)
class StepButtons:
    """Step (beside Run) and, while a stepping run lives, Next step and Continue."""

    step_btn: gr.Button
    next_btn: gr.Button
    continue_btn: gr.Button


def compare_layout(*, toy: bool = False) -> ComparePage:
    """The question row, examples (marked for the toy model), class poll, status line, panels, comparison table,
    export, replay."""
    with gr.Row(elem_id="ask-row", equal_height=True):
        question = gr.Textbox(label="Question", show_label=False, lines=1, max_lines=5, scale=5,
                              placeholder="Ask a question, or pick an example below…", elem_id="question")
        modes = gr.Dropdown(PICKER_CHOICES, value=list(BASE), multiselect=True, label="Modes", show_label=False,
                            scale=0, min_width=420, elem_id="modes")
        run_btn = gr.Button("▶ Run", variant="primary", elem_id="run-btn", scale=0, min_width=90)
        step = StepButtons(gr.Button("▷ Step", elem_id="step-btn", scale=0, min_width=90),
                           gr.Button("› Next step", variant="primary", elem_id="next-btn", scale=0, min_width=130,
                                     visible=False),
                           gr.Button("» Continue", elem_id="continue-btn", scale=0, min_width=120, visible=False))
        stop_btn = gr.Button("■ Stop", variant="stop", elem_id="stop-btn", scale=0, min_width=90)
    expected = gr.Textbox("", lines=1, max_lines=1, elem_id="expected",  # its label stays, inline (theme.css)
                          label="Expected answer", max_length=MAX_EXPECTED_CHARS,
                          placeholder="optional: each mode's answer is then marked ✓ / ✗")
    given = gr.Checkbox(False, visible=False, elem_id="expected-given")
    expected.input(fn=None, js="() => true", outputs=given, show_progress="hidden", queue=False)  # in the browser
    examples = parts.examples(question, expected, toy=toy, given=given)
    poll = poll_controls.poll_layout()  # near Run: after Start, the code and its QR code are on the first screen
    with gr.Row(elem_id="status-row"):
        status = gr.Markdown("", label="Status", elem_id="run-status")
        with gr.Row(elem_id="followup-row", visible=False) as followup_row:  # once a run is on screen
            followup_btn = gr.Button("↪ Ask a follow-up", variant="primary", elem_id="followup-btn", scale=0,
                                     min_width=160, size="sm")
            followup_step = gr.Button("▷ Step a follow-up", elem_id="followup-step-btn", scale=0, min_width=160,
                                      size="sm")
    with gr.Row(elem_id="panels", equal_height=True):
        columns = [parts.panel_column(m, mode_title(m), f"**{mode_title(m)}** — press Run", visible=m in BASE)
                   for m in PANEL_MODES]
        beside_col, beside_chat, beside_metrics = parts.panel_column("beside", "Fork",
                                                                     "A fork continued in a new panel", visible=False)
    fourth = gr.Textbox("", visible=False, elem_id="fourth-input")
    previous = gr.Textbox("", visible=False, label="Previous turn (a follow-up)", elem_id="previous-input")
    step_map = gr.HTML("", elem_id="step-map", js_on_load=None)  # after a run, under the panels (ui/core/step_map.py)
    table = gr.Markdown("", label="Comparison", elem_id="comparison")
    fork = accordion.layout()  # under the table: pick a panel's observation, edit it, fork
    with gr.Row(elem_id="share-row", equal_height=True):
        share_btn = gr.Button("Share", elem_id="share-btn", scale=0, min_width=100, size="sm")
        share_link = gr.Markdown("", elem_id="share-link")
    with gr.Row():
        exports = gr.File(label="Save this run: its whole trace, to replay, and a readable report",
                          file_count="multiple", interactive=False, elem_id="exports", scale=3)
        with gr.Column(scale=2, min_width=240, elem_id="replay-box"):
            replay_file = gr.File(label="Replay a saved run", file_types=[".json"], type="filepath",
                                  elem_id="replay-file")
            with gr.Row():
                speed = gr.Radio(list(SPEEDS), value=DEFAULT_SPEED, label="Replay speed", scale=3)
                replay_btn = gr.Button("▶ Replay", elem_id="replay-btn", scale=1, min_width=80)
                replay_api = gr.Button(visible="hidden", elem_id="replay-api")
    outputs = Outputs(tuple(c[1] for c in columns), tuple(c[2] for c in columns), status, table,  # type: ignore[arg-type]
                      exports, beside_chat, beside_metrics, step_map)
    followup = FollowupButtons(followup_row, followup_btn, followup_step)
    return ComparePage(question, expected, given, modes, run_btn, stop_btn, outputs, tuple(c[0] for c in columns),
                       beside_col, fourth, previous, followup, replay_file, speed, replay_btn, replay_api, share_btn,
                       share_link, step, fork, poll, examples)
