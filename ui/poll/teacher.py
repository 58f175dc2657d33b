"""The teacher's class poll on the Compare tab: :func:`poll_layout` (the controls) and :func:`wire_poll` (events).

Start opens a room for the question and the modes on screen and shows its code, join link and QR code; a
``gr.Timer`` reads the shared store about once a second and redraws the bars only when the room changed (what
Gradio's maintainers recommend for state shared across sessions). The page's own events drive the room: Run
locks it, Step, Stop, Fork and Replay each give the phones one line, and the run's export reveals each mode's
answer and ✓/✗ (from the expected answer, else the teacher's marks). The page keeps only the room's *handle*
(code, secret, boot) in a hidden box, so after a restart it reads that the room ended rather than nothing.
Every event here is private and unqueued: a click or a tick is a dict lookup in the store. The page's own events
reach the poll through hidden signal buttons, clicked in the browser only when the page holds a room (or, for a
run's tallies, opened a shared link), so a visitor who is not polling costs the server nothing more per run.

No ``from __future__ import annotations`` here: Gradio reads a handler's type hints at every event, and string
annotations would be evaluated again each time (``tests/app/test_serving.py``).
"""

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from agents.modes.registry import mode_title
from ui.core import visitors
from ui.core.handlers import PAGE_EVENT
from ui.core.modes import PANEL_MODES
from ui.core.safe_text import plain
from ui.poll import records, tally
from ui.poll.rooms import PollError, Room, rooms

Trigger = Any  # a Gradio event listener (``button.click``), as ``gr.on`` takes it
NOTICES = {  # what the phones read when the teacher's run is not a plain live run
    "step": "The teacher is stepping through the run, one step at a time.",
    "stop": "The teacher stopped the run: some modes may not have finished.",
    "fork": "The teacher forked the run: an observation was changed by hand, then the run went on.",
    "replay": "This is a replay of a saved run, not a live one.",
}
CSV_DIR = Path(tempfile.gettempdir()) / "think-act-react-poll"
CSV_KEPT_S = 86400.0
SIGNALS = ("run", "step", "stop", "fork", "replay", "reveal", "shared", "record", "replayed")


def gate(when_polling: str | None, otherwise: str | None = None, *, shared_page: bool = False) -> str:
    """A browser-only event (no server call) that clicks the signal ``when_polling`` if this page holds a room,
    else ``otherwise`` (only on a page opened by a shared link, with ``shared_page``). A visitor who is not polling
    costs the server nothing on Run, Stop or a run's end."""
    other = f"document.getElementById('poll-signal-{otherwise}')?.click();" if otherwise else ""
    if other and shared_page:
        other = f"if (/[?&]run=/.test(location.search)) {{ {other} }}"
    polling = f"document.getElementById('poll-signal-{when_polling}')?.click();" if when_polling else ""
    return f"(h) => {{ if (h) {{ {polling} }} else {{ {other} }} }}"


@dataclass(frozen=True)
class PollControls:
    """The class poll's components on the Compare tab."""

    accordion: gr.Accordion
    record: gr.Markdown  # a shared or replayed run's class poll, in one line
    start: gr.Button
    box: gr.Column  # shown while a room is open
    join: gr.HTML  # code, link and QR code
    board: gr.HTML  # the live bars, the state and the reveal
    lock: gr.Button
    again: gr.Button
    reveal: gr.Button
    end: gr.Button
    marks: gr.CheckboxGroup  # the modes the teacher marks right, when there is no expected answer
    csv_btn: gr.Button
    csv_file: gr.File
    handle: gr.Textbox  # hidden: "CODE.SECRET.BOOT" of this page's room
    seen: gr.State  # the room version last drawn: a tick that finds it unchanged sends nothing
    timer: gr.Timer
    signals: dict[str, gr.Button]  # rendered but hidden: the page's events click them only when they concern a poll


def poll_layout() -> PollControls:
    """The Class poll accordion: a Start button, then the join box, the live tally and the teacher's buttons."""
    with gr.Accordion("Class poll: the class predicts on their phones, then sees the reveal", open=False,
                      elem_id="poll") as accordion:
        record = gr.Markdown("", elem_id="poll-record")
        start = gr.Button("Start a class poll", elem_id="poll-start", size="sm", variant="primary")
        with gr.Column(visible=False, elem_id="poll-box") as box:
            join = gr.HTML("", elem_id="poll-join")
            board = gr.HTML("", elem_id="poll-board")
            with gr.Row():
                lock = gr.Button("Lock votes", elem_id="poll-lock", size="sm")
                again = gr.Button("Vote again", elem_id="poll-again", size="sm")
                reveal = gr.Button("Reveal", elem_id="poll-reveal", size="sm")
                end = gr.Button("End poll", elem_id="poll-end", size="sm", variant="stop")
                csv_btn = gr.Button("Tallies as CSV", elem_id="poll-csv", size="sm")
            marks = gr.CheckboxGroup([], label="Right answers (when there is no expected answer, mark them here, then "
                                     "press Reveal)", elem_id="poll-marks")
            csv_file = gr.File(label="Tallies (counts only)", visible=False, interactive=False, elem_id="poll-csv-file")
        handle = gr.Textbox("", visible=False, elem_id="poll-handle")
        seen = gr.State(0)
        timer = gr.Timer(1.0, active=False)
        signals = {kind: gr.Button(visible="hidden", elem_id=f"poll-signal-{kind}") for kind in SIGNALS}
    return PollControls(accordion, record, start, box, join, board, lock, again, reveal, end, marks, csv_btn, csv_file,
                        handle, seen, timer, signals)


def _drawn(room: Room, problem: str = "") -> tuple[str, int]:
    return tally.tally_html(rooms().view(room), problem), room.version


def start(handle: str, question: str, modes: Any, request: gr.Request | None = None) -> tuple:
    """A new room for the question and modes on screen (this page's earlier room ends)."""
    store = rooms()
    picked = [m for m in (modes if isinstance(modes, list) else [modes]) if isinstance(m, str) and m in PANEL_MODES]
    try:
        earlier = store.owned(handle) if handle else None
    except PollError:
        earlier = None
    if earlier is not None and str(question or "").strip() and picked:  # a refused start keeps the room it had
        store.end(earlier.code, "The teacher started a new poll: this one has ended.")
    try:
        room = store.create(visitors.visitor_of(request) or "?", question, [(m, mode_title(m)) for m in picked])
    except PollError as refused:
        return (gr.skip(), gr.Column(visible=True), "", tally.tally_html(None, refused.line), 0,
                gr.Timer(active=False), gr.skip())
    link = tally.join_url(visitors.page_url_of(getattr(request, "headers", None)), room.code)
    board, version = _drawn(room)
    return (store.handle(room), gr.Column(visible=True), tally.join_html(room.code, link), board, version,
            gr.Timer(active=True), gr.CheckboxGroup(choices=[(t, m) for m, t in room.modes], value=[]))


def tick(handle: str, seen: int) -> tuple:
    """The timer: redraw the bars when the room changed; say once that it ended (and stop ticking)."""
    if not handle:
        return gr.skip(), gr.skip(), gr.Timer(active=False)
    try:
        room = rooms().owned(handle)
    except PollError as ended:
        return tally.tally_html(None, ended.line), -1, gr.Timer(active=False)
    if room.version == seen:
        return gr.skip(), gr.skip(), gr.skip()
    board, version = _drawn(room)
    return board, version, gr.skip()


def acting(action: Callable[[str], Room]) -> Callable[[str], tuple]:
    """A teacher's button on the room: the redrawn board, or its one line."""
    def act(handle: str) -> tuple:
        try:
            room = rooms().owned(handle)
            return _drawn(action(room.code))
        except PollError as refused:
            return tally.tally_html(_public(handle), refused.line), -1
    return act


def _public(handle: str) -> dict[str, Any] | None:
    try:
        return rooms().view(rooms().owned(handle))
    except PollError:
        return None


def on_run(kind: str | None) -> Callable[[str], None]:
    """The page's run events: a run locks the round; Step, Stop, Fork, Replay give the phones one line."""
    def moved(handle: str) -> None:
        try:
            room = rooms().owned(handle)
        except PollError:
            return
        if kind == "stop":
            if room.state == "running":
                rooms().set_state(room.code, "running", NOTICES["stop"])
            return
        if room.state == "revealed" and kind is None:
            return  # a new run after the reveal: "Vote again" opens the next round first
        rooms().set_state(room.code, "running", NOTICES.get(kind or "", ""))
    return moved


async def reveal(handle: str, exports: Any, share_line: Any, marks: Any = None, replayed: Any = None) -> tuple:
    """Each polled mode's short answer and ✓/✗ from the run's export, or from the replayed file (a replay makes no
    export); ``marks`` (the Reveal button) take the place of missing verdicts. Nothing happens before a room's
    votes were locked by a run."""
    try:
        room = rooms().owned(handle)
    except PollError:
        return gr.skip(), gr.skip()
    path = _json_of(exports) or (_json_of(replayed) if marks is not None else None)
    export = await asyncio.to_thread(tally.read_export, path)
    if export is None:
        line = "Run the question first: the reveal reads the run's answers." if marks is not None else ""
        return (tally.tally_html(rooms().view(room), line), -1) if line else (gr.skip(), gr.skip())
    if marks is None and room.state not in ("running", "locked"):
        return gr.skip(), gr.skip()
    modes = [m for m, _ in room.modes]
    verdicts = export.get("verdicts") if isinstance(export.get("verdicts"), dict) else {}
    use_marks = marks if isinstance(marks, list) and not verdicts else None
    answers, notice = tally.reveal_of(export, modes, use_marks)
    if path == _json_of(exports):  # the live run's own export (never a visitor's replayed file), before the phones
        kept = rooms().view(room)  # see the reveal, so a Share pressed then stores the tallies too
        kept["rounds"][-1]["reveal"] = answers
        await asyncio.to_thread(records.keep_with_export, path, kept)
    try:
        rooms().set_reveal(room.code, answers, tally.run_link_in(share_line))
        if notice or room.notice:
            rooms().set_state(room.code, "revealed", notice or room.notice)
        return _drawn(rooms().owned(handle))
    except PollError as refused:
        return tally.tally_html(None, refused.line), -1


async def recorded(handle: str, files: Any) -> tuple:
    """A run put on screen with a class poll kept in its export (a shared link, a replayed file): its line, and the
    accordion opened to show it. A page holding a room of its own leaves its board alone."""
    if handle:
        return gr.skip(), gr.skip()
    record = await asyncio.to_thread(records.record_in, _json_of(files) or (files if isinstance(files, str) else None))
    if record is None:
        return "", gr.skip()
    return f"**This run's class poll:** {plain(records.summary(record))}", gr.Accordion(open=True)


def shared(handle: str, share_line: Any) -> None:
    """A share link made after the reveal: the phones get "open the full run"."""
    link = tally.run_link_in(share_line)
    try:
        room = rooms().owned(handle)
    except PollError:
        return
    if link and room.state == "revealed" and room.link != link:
        rooms().update(room.code, lambda r: setattr(r, "link", link))


def csv_of(handle: str) -> Any:
    """The tallies as a CSV file (counts only)."""
    room = _public(handle)
    if room is None:
        return gr.File(visible=False)
    CSV_DIR.mkdir(parents=True, exist_ok=True)
    for old in CSV_DIR.glob("class-poll-*.csv"):  # a day's downloads at most: a CSV is made again in one click
        with contextlib.suppress(OSError):
            if time.time() - old.stat().st_mtime > CSV_KEPT_S:
                old.unlink()
    path = CSV_DIR / f"class-poll-{room['code']}-v{room['version']}.csv"
    path.write_text(tally.tallies_csv(room), encoding="utf-8")
    return gr.File(str(path), visible=True)


def end(handle: str) -> tuple:
    try:
        room = rooms().owned(handle)
        rooms().end(room.code)
    except PollError:
        pass
    return "", gr.Column(visible=False), "", "", 0, gr.Timer(active=False), gr.File(None, visible=False)


def _json_of(files: Any) -> str | None:
    """The ``.json`` among the export files (paths or Gradio's file dicts)."""
    for f in files if isinstance(files, list) else [files]:
        path = f.get("path") if isinstance(f, dict) else getattr(f, "path", f)
        if isinstance(path, str) and path.endswith(".json"):
            return path
    return None


@dataclass(frozen=True)
class PageHooks:
    """What of the Compare tab the poll reads or listens to (components and event triggers)."""

    question: gr.Textbox
    modes: gr.Dropdown
    exports: gr.File
    share_link: gr.Markdown
    replay_file: gr.File
    runs: list[Trigger]  # what starts a live run: Run, Enter in the question or expected answer, Ask a follow-up
    step: Trigger
    stop: Trigger
    fork: Trigger
    replay: Trigger
    more_steps: tuple[Trigger, ...] = ()  # other starts of a stepping run: Step a follow-up


def hooks_of(page: Any) -> PageHooks:
    """What the poll needs of ``app.ComparePage`` (taken by name: a feature does not import the app)."""
    return PageHooks(page.question, page.modes, page.outputs.exports, page.share_link, page.replay_file,
                     runs=[page.run_btn.click, page.question.submit, page.expected.submit,
                           page.followup.ask_btn.click],
                     step=page.step.step_btn.click, stop=page.stop_btn.click, fork=page.fork.button.click,
                     replay=page.replay_btn.click, more_steps=(page.followup.step_btn.click,))


def wire_poll(poll: PollControls, page: Any) -> None:
    """The poll's events on ``app.ComparePage``. Wire it before the runs: Gradio's page starts a trigger's events in
    turn, a later one only after a run before it has streamed to its end, and a run must lock the votes as it
    starts."""
    hooks = page if isinstance(page, PageHooks) else hooks_of(page)
    h = poll.handle
    board = [poll.board, poll.seen]
    poll.start.click(start, [h, hooks.question, hooks.modes],
                     [h, poll.box, poll.join, poll.board, poll.seen, poll.timer, poll.marks], **PAGE_EVENT)
    poll.timer.tick(tick, [h, poll.seen], [poll.board, poll.seen, poll.timer], **PAGE_EVENT)
    poll.lock.click(acting(lambda code: rooms().lock(code)), h, board, **PAGE_EVENT)
    poll.again.click(acting(lambda code: rooms().again(code)), h, board, **PAGE_EVENT)
    poll.end.click(end, h, [h, poll.box, poll.join, poll.board, poll.seen, poll.timer, poll.csv_file], **PAGE_EVENT)
    poll.csv_btn.click(csv_of, h, poll.csv_file, **PAGE_EVENT)
    signals = poll.signals
    browser_only = {"fn": None, "inputs": h, "queue": False, "api_visibility": "private", "show_progress": "hidden"}
    gr.on(hooks.runs, js=gate("run"), **browser_only)
    signals["run"].click(on_run(None), h, **PAGE_EVENT)
    for kind in ("step", "stop", "fork"):
        getattr(hooks, kind)(js=gate(kind), **browser_only)
        signals[kind].click(on_run(kind), h, **PAGE_EVENT)
    for trigger in hooks.more_steps:
        trigger(js=gate("step"), **browser_only)
    hooks.replay(js=gate("replay", "replayed"), **browser_only)  # a replayed file may hold a class poll
    signals["replay"].click(on_run("replay"), h, **PAGE_EVENT)
    signals["replayed"].click(recorded, [h, hooks.replay_file], [poll.record, poll.accordion], **PAGE_EVENT)
    hooks.exports.change(js=gate("reveal", "record", shared_page=True), **browser_only)  # a run's end, a shared run
    signals["reveal"].click(reveal, [h, hooks.exports, hooks.share_link], board, **PAGE_EVENT)
    signals["record"].click(recorded, [h, hooks.exports], [poll.record, poll.accordion], **PAGE_EVENT)
    poll.reveal.click(reveal, [h, hooks.exports, hooks.share_link, poll.marks, hooks.replay_file], board,
                      **PAGE_EVENT)
    hooks.share_link.change(js=gate("shared"), **browser_only)
    signals["shared"].click(shared, [h, hooks.share_link], **PAGE_EVENT)
