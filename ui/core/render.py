"""Engine events → what a panel shows: its messages, streamed event by event (:class:`Panel`).

Everything here is pure (no Gradio events, no I/O), so it is unit-tested directly and shared by live runs and
replays. Model text and tool output are untrusted: HTML in them is escaped (model text) or fenced as code (tool
output) before it reaches the Chatbot, so a page or a model that writes ``<script>`` shows the tag instead of
running it. The Chatbot's own sanitizer stays on as a second layer (how text is made safe: :mod:`ui.core.safe_text`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import gradio as gr

from agents.events import (
    Action,
    Evaluation,
    Event,
    FinalAnswer,
    Forked,
    LLMError,
    Observation,
    ParseError,
    Paused,
    Reflection,
    Resumed,
    Retry,
    Thought,
    TokenDelta,
    Trial,
    Truncated,
    Usage,
    Waited,
    Waiting,
)
from agents.modes.registry import mode_title
from ui.core import trials
from ui.core.batch import RUNNING, Batch
from ui.core.notices import WaitNote, not_run, notice, to_wire, waiting  # noqa: F401 - the panel module's API
from ui.core.safe_text import fenced, plain, safe_markdown
from ui.core.table import NO_FORCED_ANSWER, answer_text

SHORT_OBSERVATION = 280  # observations up to this many characters start open; longer ones collapsed
INCOMPLETE = "⚠ Incomplete reply — cut off, not used as an answer"


def format_input(value: str | dict) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=1) if isinstance(value, dict) else str(value)
    return fenced(text, "json" if isinstance(value, dict) else "text")


PAUSED_NOTE = "Waiting: press **Next step** or **Continue**."


@dataclass
class Panel:
    """The messages of one mode's panel, updated event by event.

    Streamed tokens go into a *draft* message (open, with a spinner) that is replaced by the
    structured step once the model's reply is parsed; reasoning tokens get their own box.
    """

    mode: str
    messages: list[gr.ChatMessage] = field(default_factory=list)
    calls: int = 0
    actions: int = 0
    done: bool = False
    _draft: gr.ChatMessage | None = None
    _draft_text: str = ""
    _reasoning: gr.ChatMessage | None = None
    _reasoning_text: str = ""
    _pending: gr.ChatMessage | None = None
    _wait: WaitNote = field(default_factory=WaitNote)  # a wait for the model server under way
    _draft_stale: bool = False
    _reasoning_stale: bool = False
    _error: gr.ChatMessage | None = None  # the last model error, until a retry makes it history
    _pause: gr.ChatMessage | None = None  # the "paused after step N" marker, until the mode resumes
    _calls: int = 0  # tool calls made by the current CodeAct program
    _call_pending: gr.ChatMessage | None = None  # the result of the program's call under way
    _trial: gr.ChatMessage | None = None  # Reflexion's trial under way: the messages until its end go under it
    _trials: int = 0
    _batch: Batch | None = None  # the calls of one native reply, run at once: one step (ui/core/batch.py)
    _numbers: list[str] = field(default_factory=list)  # each observation's number as shown ("2", "3.2")
    _wire: dict[int, tuple] = field(default_factory=dict, repr=False)  # id(message) → (message, key, browser form)

    @property
    def title(self) -> str:
        return mode_title(self.mode)

    @property
    def streaming(self) -> bool:
        """True while a model reply (or its hidden reasoning) is being written into the panel."""
        return self._draft is not None or self._reasoning is not None

    def add(self, event: Event) -> None:
        if not isinstance(event, Waiting | Waited):
            self._wait.end(self.messages)  # the call got its turn (a recording whose wait never said it ended)
        if isinstance(event, TokenDelta):
            self._token(event)
        elif isinstance(event, Waiting):
            self._waiting(event)
        elif isinstance(event, Waited):
            self._wait.end(self.messages, event)
        elif isinstance(event, Truncated):
            self._append(f"{safe_markdown(event.message[:1].upper() + event.message[1:])}: raise **Max tokens** "
                         "(or `LLM_MAX_TOKENS`) for longer replies.",
                         title=f"✂ LLM call {self.calls} hit the token limit", status="done")
        elif isinstance(event, Retry):
            self._keep_draft(INCOMPLETE)
            self._close_pending()
            self._end_trial("failed")
            self._retire_error()
            self._append(safe_markdown(event.message), title="⟳ Running this mode again", status="done")
        elif isinstance(event, Usage):
            self._end_call(event)
        elif isinstance(event, Thought):
            self._drop_draft()
            self._append(safe_markdown(event.text), title="✎ Thought")
            Batch.keep_below(self._batch, self.messages)
        elif isinstance(event, Action):
            self._action(event)
        elif isinstance(event, Observation):
            self._observation(event)
        elif isinstance(event, Trial | Evaluation | Reflection):
            self._reflexion(event)
        elif isinstance(event, ParseError):
            self._drop_draft()
            body = safe_markdown(event.message)
            if event.text.strip():
                body = f"The model wrote:\n\n{fenced(event.text.strip())}\n\nRe-prompt sent back:\n\n{body}"
            self._append(body, title="↩ Format error — corrective re-prompt sent to the model", status="done")
        elif isinstance(event, LLMError):
            self._keep_draft(INCOMPLETE)
            self._close_pending()
            self._end_trial("⚠ model error")
            self._error = self._append(f"⚠ **Model error:** {safe_markdown(event.message)}")
        elif isinstance(event, Paused):
            self._pause = self._append(PAUSED_NOTE, title=f"⏸ Paused after step {event.step}", status="done")
        elif isinstance(event, Resumed):
            if self._pause is not None:  # the marker stays, between the steps it separates
                self._pause.content = f"Resumed after {event.waited_s:.1f} s (the wait is not counted in the metrics)."
                self._pause = None
        elif isinstance(event, Forked):
            self._forked(event)
        elif isinstance(event, FinalAnswer):
            self._drop_draft()
            self._close_pending()
            self._end_trial("no verdict")
            why = safe_markdown(event.why) if event.why else "the model did not finish on its own"
            flag = f" _(forced: {why})_" if event.forced else ""
            text = answer_text(event.text)  # never the raw step format (an older recording's forced reply)
            shown = safe_markdown(text) if text else NO_FORCED_ANSWER if event.forced else "_(empty)_"
            self._append(f"**✔ Final answer**{flag}\n\n{shown}")  # bold, not a heading: a message is no section

    def finish(self, stopped: bool = False, reason: str = "") -> None:
        """Close spinners; a run that ended without an answer or an error says so (and ``reason``, when it was
        not the visitor who stopped it)."""
        self._wait.end(self.messages)
        self._keep_draft("Unfinished reply (stopped)" if stopped else "Reply")
        self._close_pending()
        self._end_trial("stopped" if stopped else "ended")
        if self._pause is not None:
            self._pause.content, self._pause = (safe_markdown(reason) if reason else "Stopped while paused."), None
        self._render_live()
        if self._reasoning is not None:
            self._reasoning.metadata["status"] = "done"
            self._reasoning = None
        for m in self.messages:
            if m.metadata.get("status") == "pending":
                m.metadata["status"] = "done"
        ended = any(_is_terminal(m) for m in self.messages)
        if not ended:
            note = "■ **Stopped** before an answer." if stopped else "⚠ Ended without an answer."
            self._append(f"■ **Ended** before an answer. {safe_markdown(reason)}" if stopped and reason else note)
        self.done = True

    def value(self) -> list[gr.ChatMessage]:
        self._render_live()
        return list(self.messages)

    def wire(self) -> list[dict]:
        """The messages as the browser receives them; only a message that changed since the last call is
        converted again (a frame's work follows what changed, not the length of the trace)."""
        self._render_live()
        out, kept = [], {}
        for message in self.messages:
            key = (message.content, tuple(message.metadata.items()))
            cached = self._wire.get(id(message))
            if cached is None or cached[0] is not message or cached[1] != key:
                cached = (message, key, to_wire([message])[0])
            kept[id(message)] = cached
            out.append(cached[2])
        self._wire = kept
        return out

    def _render_live(self) -> None:
        """Streamed text is rendered when shown, not per token (a frame carries many tokens)."""
        if self._draft is not None and self._draft_stale:
            self._draft.content = safe_markdown(self._draft_text)
        if self._reasoning is not None and self._reasoning_stale:
            self._reasoning.content = fenced(self._reasoning_text)
        self._draft_stale = self._reasoning_stale = False

    # -- internals -------------------------------------------------------------------------

    def _waiting(self, event: Waiting) -> None:
        """A wait for the model server, shown with a spinner. A reply under way is asked for again (its draft goes);
        a mode that runs again later keeps what it wrote, marked as cut off."""
        if event.rerun:
            self._keep_draft(INCOMPLETE)
            self._close_pending()
            self._end_trial("waiting to run again")
        else:
            self._drop_draft()
            if self._reasoning is not None:
                self._drop(self._reasoning)
                self._reasoning = None
        self._wait.show(event, self.calls + 1, self._append)

    def _retire_error(self) -> None:
        """A retry follows: the earlier error becomes a closed note, so the panel ends with one ⚠ line at most."""
        if self._error is not None:
            self._error.content = str(self._error.content).replace("⚠ **Model error:** ", "", 1)
            self._error.metadata = {"title": "✗ That attempt failed", "status": "done"}
            self._error = None

    def _append(self, content: str, *, title: str | None = None, status: str | None = None,
                duration: float | None = None, log: str | None = None) -> gr.ChatMessage:
        meta: dict = {}
        if title:
            meta["title"] = title
        if status:
            meta["status"] = status
        if duration is not None:
            meta["duration"] = round(duration, 2)
        if log:
            meta["log"] = log
        if self._trial is not None:
            meta["parent_id"] = self._trial.metadata["id"]
        msg = gr.ChatMessage(content=content, role="assistant", metadata=meta)  # type: ignore[arg-type]
        self.messages.append(msg)
        return msg

    def _token(self, event: TokenDelta) -> None:
        if event.channel == "reasoning":
            if self._reasoning is None:
                self._reasoning_text = ""
                self._reasoning = self._append("", title=f"⋯ Hidden reasoning · LLM call {self.calls + 1}",
                                               status="pending")
            self._reasoning_text += event.text
            self._reasoning_stale = True
            return
        if self._draft is None:
            self._draft_text = ""
            self._draft = self._append("", title=f"✍ Writing… · LLM call {self.calls + 1}", status="pending")
        self._draft_text += event.text
        self._draft_stale = True
        if event.channel == "answer":
            self._draft.metadata["title"] = f"✍ Writing the answer… · LLM call {self.calls + 1}"

    def _end_call(self, usage: Usage) -> None:
        self.calls += 1
        if len(usage.tool_calls) > 1:
            self.actions, self._calls = self.actions + 1, 0
            header = self._append(Batch.listing(usage), title=Batch.title(self.actions, len(usage.tool_calls))
                                  + RUNNING, status="pending")
            self._batch = Batch.of(usage, self.actions, header)
        self._render_live()
        if self._reasoning is not None:
            self._reasoning.metadata["status"] = "done"
            self._reasoning.metadata["duration"] = round(usage.elapsed_s, 2)
            self._reasoning = None

    def _drop(self, message: gr.ChatMessage) -> None:
        if message in self.messages:
            self.messages.remove(message)

    def _drop_draft(self) -> None:
        if self._draft is not None:
            if self._draft in self.messages:
                self.messages.remove(self._draft)
            self._draft, self._draft_text = None, ""

    def _keep_draft(self, title: str) -> None:
        if self._draft is None:
            return
        self._render_live()
        if self._draft_text.strip():
            self._draft.metadata["title"] = title
            self._draft.metadata["status"] = "done"
            self._draft = None
        else:
            self._drop_draft()

    def _close_pending(self) -> None:
        for pending in (self._call_pending, self._pending):
            if pending is not None:
                pending.metadata["status"] = "done"
                pending.metadata["title"] = pending.metadata["title"].replace(" · running…", " · no result")
        self._pending = self._call_pending = None
        if self._batch is not None and self._batch.close(" · not all calls finished"):
            self._batch = None

    def _forked(self, event: Forked) -> None:
        """The teacher's edit, original beside edited, so the class sees what was changed (ui/fork/accordion.py)."""
        number = self._numbers[event.step] if event.step < len(self._numbers) else event.step + 1
        what = f"Observation {number}" if self.actions else "The reasoning"
        long = len(event.original) + len(event.edited) > 2 * SHORT_OBSERVATION  # long web text starts collapsed
        self._append(f"**Was:**\n\n{fenced(event.original)}\n\n**Now:**\n\n{fenced(event.edited)}\n\n"
                     "_The mode continues live from the edited text._",
                     title=f"✎ {what} edited by the teacher — forked here", status="done" if long else None)

    def _action(self, event: Action) -> None:
        """A step's action; a CodeAct program is one too, and the tool calls it makes come as nested actions
        numbered under it ("Call 2.1"), each with its own result, while the program's output waits below them."""
        self._drop_draft()
        if event.nested:
            self._calls += 1
            n = f"{self.actions}.{self._calls}"
            if self._pending is not None:  # the program's output stays last, below its calls
                self._drop(self._pending)
            self._append(format_input(event.input), title=f"⚙ Call {n}: {plain(event.tool)}")
            self._call_pending = self._append("", title=f"↳ Result {n} · {plain(event.tool)} · running…",
                                              status="pending")
            if self._pending is not None:
                self.messages.append(self._pending)
            return
        if self._batch is None:
            self.actions, self._calls = self.actions + 1, 0
        n = self._batch.number(event) if self._batch is not None else self.actions  # "3.2": a reply's 2nd call
        if event.code:
            self._append(fenced(str(event.input), "python"), title=f"⚙ Program {n}")
        else:
            self._append(format_input(event.input), title=f"⚙ Action {n}: {plain(event.tool)}")
        self._pending = self._append("", title=f"↳ Observation {n} · {plain(event.tool)} · running…",
                                     status="pending")

    def _reflexion(self, event: Trial | Evaluation | Reflection) -> None:
        """Reflexion: each trial one line (:mod:`ui.core.trials`) over its steps, its verdict (and who gave it)
        and the reflection on a failed one; the line closes once the trial's story is told."""
        self._drop_draft()  # the check and the reflection are model calls: their draft gives way to the result
        if isinstance(event, Trial):
            self._end_trial("ended")
            title, intro = trials.started(event)
            self._trials += 1
            self._trial = self._append(intro, title=title, status="pending")
            self._trial.metadata["id"] = f"trial-{self._trials}"
        elif isinstance(event, Evaluation):
            mark = "✓ Right" if event.correct else "✗ Wrong"
            why = f": {safe_markdown(event.reason)}" if event.reason else ""
            self._append(f"**{mark}** — {event.label}{why}", title=f"⚖ Trial verdict ({event.label})", status="done")
            if self._trial is not None:
                self._trial.metadata["title"] = trials.judged(self._trial.metadata["title"], event)
        else:
            self._append(safe_markdown(event.text), title="💭 Reflection for the next trial", status="done")
            if self._trial is not None:
                self._trial.metadata["title"] = trials.reflected(self._trial.metadata["title"], event.text)
            self._end_trial("")

    def _end_trial(self, why: str) -> None:
        """Close the trial under way (collapsed to its line); one that ended before its verdict says ``why``."""
        if self._trial is not None:
            self._trial.metadata["title"] = trials.ended(self._trial.metadata["title"], why)
            self._trial.metadata["status"] = "done"
            self._trial = None

    def _observation(self, event: Observation) -> None:
        n = f"{self.actions}.{self._calls}" if event.nested else str(self.actions)
        n = self._batch.current if self._batch is not None and not event.nested else n
        self._numbers += [] if event.nested else [n]
        flags = ", ".join(f for f, on in (("error", event.is_error), ("cached", event.cached)) if on)
        what = "Result" if event.nested else "Observation"
        title = f"{'✗' if event.is_error else '↳'} {what} {n} · {plain(event.tool)}"
        if event.nested:
            msg, self._call_pending = self._call_pending, None
        else:
            msg, self._pending = self._pending, None
        if msg is None:
            msg = self._append("")
        msg.content = fenced(event.output)
        kept = {"parent_id": msg.metadata["parent_id"]} if "parent_id" in msg.metadata else {}  # its trial's
        msg.metadata = {**kept, "title": title, "duration": round(event.elapsed_s, 2)}
        if flags:
            msg.metadata["log"] = flags
        if len(event.output) > SHORT_OBSERVATION:
            msg.metadata["status"] = "done"  # long web text starts collapsed; short results stay open
        if self._batch is not None and not event.nested and self._batch.close():
            self._batch = None


def _is_terminal(msg: gr.ChatMessage) -> bool:
    text = msg.content if isinstance(msg.content, str) else ""
    return not msg.metadata.get("title") and ("Final answer" in text or "Model error" in text)
