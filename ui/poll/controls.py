"""The class poll's controls on the Compare tab (:func:`poll_layout`): Start, the join box and the live board, the
teacher's buttons, and the list of the teacher's other rooms. Their events are wired in ``ui/poll/teacher.py``.
"""

from dataclasses import dataclass

import gradio as gr

SIGNALS = ("run", "step", "stop", "fork", "replay", "reveal", "shared", "record", "replayed")


@dataclass(frozen=True)
class PollControls:
    """The class poll's components on the Compare tab."""

    accordion: gr.Accordion
    record: gr.Markdown  # a shared or replayed run's class poll, in one line
    start: gr.Button
    split: gr.Checkbox  # show the split of the votes while they are open (off: only how many voted)
    mine_box: gr.Column  # this teacher's rooms that this page does not show
    mine: gr.Radio
    show_here: gr.Button
    end_mine: gr.Button
    box: gr.Column  # shown while this page holds a room
    join: gr.HTML  # code, link and QR code
    board: gr.HTML  # the live bars, the state and the reveal
    lock: gr.Button
    again: gr.Button
    reveal: gr.Button
    end: gr.Button
    marks: gr.CheckboxGroup  # the modes the teacher marks right, when there is no expected answer
    csv_btn: gr.Button
    csv_file: gr.File
    timer: gr.Timer
    signals: dict[str, gr.Button]  # rendered but hidden: the page's events click them only when they concern a poll


def poll_layout() -> PollControls:
    """The Class poll accordion (near Run): Start, then — while this page holds a room — the join box beside the
    live tally and the teacher's buttons, which take Start's place so that the code and its QR code are on the
    first screen; under them this teacher's other rooms."""
    with gr.Accordion("Class poll: the class predicts on their phones, then sees the reveal", open=False,
                      elem_id="poll") as accordion:
        record = gr.Markdown("", elem_id="poll-record")
        start = gr.Button("Start a class poll", elem_id="poll-start", size="sm", variant="primary")
        with gr.Column(visible=False, elem_id="poll-box") as box:
            with gr.Row(equal_height=False):  # the code beside the tally: both on the first screen after Start
                join = gr.HTML("", elem_id="poll-join", scale=2, min_width=300)
                board = gr.HTML("", elem_id="poll-board", scale=3, min_width=320)
            with gr.Row(equal_height=True):
                lock = gr.Button("Lock votes", elem_id="poll-lock", size="sm")
                again = gr.Button("Vote again", elem_id="poll-again", size="sm")
                reveal = gr.Button("Reveal", elem_id="poll-reveal", size="sm")
                end = gr.Button("End poll", elem_id="poll-end", size="sm", variant="stop")
                csv_btn = gr.Button("Tallies as CSV", elem_id="poll-csv", size="sm")
                split = gr.Checkbox(False, label="Show the class's split while voting is open", elem_id="poll-split",
                                    scale=2, min_width=280)
            marks = gr.CheckboxGroup([], label="Right answers (when there is no expected answer, mark them here, then "
                                     "press Reveal)", elem_id="poll-marks")
            csv_file = gr.File(label="Tallies (counts only)", visible=False, interactive=False, elem_id="poll-csv-file")
        with gr.Column(visible=False, elem_id="poll-mine") as mine_box:
            mine = gr.Radio([], label="Your open class polls (on other pages, or left open)", elem_id="poll-mine-list")
            with gr.Row():
                show_here = gr.Button("Show it on this page", elem_id="poll-show-here", size="sm", scale=0,
                                      min_width=180)
                end_mine = gr.Button("End it", elem_id="poll-end-mine", size="sm", variant="stop", scale=0,
                                     min_width=100)
        timer = gr.Timer(1.0, active=False)
        signals = {kind: gr.Button(visible="hidden", elem_id=f"poll-signal-{kind}") for kind in SIGNALS}
    return PollControls(accordion, record, start, split, mine_box, mine, show_here, end_mine, box, join, board, lock,
                        again, reveal, end, marks, csv_btn, csv_file, timer, signals)
