"""Follow-up questions on the page, at ``/compare`` and in MCP: reading ``previous``, showing the earlier turns.

A follow-up names the turn it follows by that turn's sealed block (``agents/followup.py``): the page hands back
its own export file, an API caller the export's or the MCP answer's JSON.
Each panel then shows the conversation as a thread — every earlier turn's question and that mode's answer, then
the new question — and the table gets a row per earlier turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gradio as gr

from agents.conversation import fit
from agents.correctness import clean_expected, judge
from agents.events import Forked
from agents.followup import FollowUp, Previous, block_for, follow_up, opened
from agents.modes import RunConfig
from agents.modes.registry import forked_mode, mode_of, mode_title
from agents.request import RunRequest
from agents.trace import Trace
from tools.registry import ToolRegistry
from ui.core import render
from ui.core.modes import PANEL_MODES
from ui.core.safe_text import plain, safe_markdown
from ui.core.settings import app_settings

CUT_NOTE = ("✂ To fit the context budget ({budget:,} tokens), {n} earlier observation{s} of this mode "
            "{were} cut to {their} first line.")
NEW_HERE = "This mode was not in the earlier turns: it starts this conversation afresh."
RESTORED = ("CodeAct's earlier programs ran again in this turn's fresh sandbox, unseen: their variables are back "
            "(the tools they called answered from the tools' cache, or again).")


def read_previous(raw: Any, modes: tuple[str, ...]) -> tuple[FollowUp, dict[str, tuple]] | None:
    """``/compare``'s ``previous`` input opened for ``modes`` (None when there is none), or :class:`FollowupError`
    (one line). It is an earlier turn's export or MCP answer (JSON text or object); the page's own export file is
    read before (``ui/recordings/export.own_export``)."""
    if raw is None or raw == "" or raw == []:
        return None
    settings = app_settings()
    previous = opened(raw, max_turns=settings.followup_turns)
    return follow_up(previous, modes, settings.context_budget)


EDITED = "✎ Observation {step} edited by the teacher in turn {turn}: “{original}” → “{edited}”"


def own_key(previous: Previous, panel: str) -> str:
    """Whose earlier turns a panel shows and continues: its own (a mode, or a fork continued in a follow-up:
    ``react@2``), else its mode's (a fork made in this turn continues the turns of the mode it forked)."""
    return panel if panel in previous.history or any(panel in t["answers"] for t in previous.turns) \
        else mode_of(panel)


def thread(followup: FollowUp, mode: str, question: str) -> list[dict]:
    """What a follow-up's panel shows above its new turn, in the browser's form: each earlier turn's question and
    this panel's answer (marked against that turn's own expected answer, with the teacher's edit of a fork), then
    the new question (and a note when observations were cut or the mode is new)."""
    messages: list[gr.ChatMessage] = []
    mode = own_key(followup.previous, mode)
    for n, turn in enumerate(followup.previous.turns, start=1):
        messages.append(gr.ChatMessage(role="user", content=f"**Turn {n}** · {safe_markdown(turn['question'])}"))
        answer = turn["answers"].get(mode)
        said = safe_markdown(str(answer)) if answer is not None else "_(no answer in this turn)_"
        if (mark := _mark(turn, mode)) is not None:
            said += f" {mark}"
        messages.append(gr.ChatMessage(role="assistant", content=said,
                                       metadata={"title": f"{plain(mode_title(mode))} in turn {n}"}))
        if isinstance(edit := (turn.get("edits") or {}).get(mode), dict):
            messages += render.notice(EDITED.format(step=edit.get("step", "?"), turn=n,
                                                    original=safe_markdown(_short(edit.get("original"))),
                                                    edited=safe_markdown(_short(edit.get("edited")))))
    messages.append(gr.ChatMessage(role="user", content=f"**Turn {followup.previous.turn + 1}** · "
                                                        f"{safe_markdown(question)}"))
    if mode not in followup.previous.history and mode_of(mode) not in followup.previous.history:
        messages += render.notice(NEW_HERE)
    elif mode_of(mode) == "codeact":
        messages += render.notice(RESTORED)
    elif cut := followup.cuts.get(mode):
        budget = app_settings().context_budget
        messages += render.notice(CUT_NOTE.format(budget=budget, n=cut, s="" if cut == 1 else "s",
                                                  were="was" if cut == 1 else "were", their="its" if cut == 1 else
                                                  "their"))
    return render.to_wire(messages)


def threads_of(previous: Previous, modes: tuple[str, ...], question: str) -> dict[str, list[dict]]:
    """Every panel's earlier turns (a recorded follow-up: its cuts were not recorded)."""
    shown = FollowUp(previous, {})
    return {m: thread(shown, m, question) for m in modes}


def history_of(previous: Previous | None, panel: str) -> tuple[dict[str, Any], ...]:
    """A fork's earlier turns: those of the panel it forks (a mode's, or a fork's continued in a follow-up),
    within the context budget."""
    if previous is None:
        return ()
    return tuple(fit(previous.history.get(own_key(previous, panel), ()), app_settings().context_budget)[0])


def earlier_table(previous: Previous | None, modes: tuple[str, ...]) -> str:
    """The earlier turns as table rows (turn, question, its own expected answer, each panel's answer marked
    against it), above this turn's table."""
    if previous is None:
        return ""
    keys = [own_key(previous, m) for m in modes]
    head = "| Turn | Question | Expected | " + " | ".join(plain(mode_title(m)) for m in modes) + " |"
    rule = "|---|---|---|" + "---|" * len(modes)
    rows = [f"| {n} | {_cell(t['question'])} | {_cell(_expected(t) or '—')} | "
            + " | ".join(_answered(t, k) for k in keys) + " |"
            for n, t in enumerate(previous.turns, start=1)]
    return "\n".join(["**Earlier turns**", "", head, rule, *rows, "", f"**Turn {previous.turn + 1}**", ""])


def _expected(turn: dict[str, Any]) -> str | None:
    return clean_expected(turn.get("expected"))


def _mark(turn: dict[str, Any], mode: str) -> str | None:
    """✓ / ✗ of a panel's answer in an earlier turn, against that turn's own expected answer (None: none given)."""
    expected = _expected(turn)
    if expected is None or mode not in turn["answers"]:
        return None
    answer = turn["answers"][mode]
    return judge(answer if isinstance(answer, str) else None, expected, turn.get("question")).mark


def _answered(turn: dict[str, Any], mode: str) -> str:
    """A panel's cell of an earlier turn: its answer and mark, then its steps, tokens and seconds."""
    if mode not in turn["answers"]:
        return "—"
    figures = turn.get("numbers", {}).get(mode) if isinstance(turn.get("numbers"), dict) else None
    got = [figures.get(k) for k in ("steps", "tokens", "seconds")] if isinstance(figures, dict) else []
    shown = (f" ({got[0]} step{'' if got[0] == 1 else 's'} · {got[1]:,} tokens · {got[2]:.1f} s)"
             if got and all(isinstance(x, int | float) and not isinstance(x, bool) for x in got) else "")
    mark = _mark(turn, mode)
    return _cell(turn["answers"][mode]) + (f" {mark}" if mark else "") + shown  # odd figures: the answer alone


def _short(value: Any, limit: int = 80) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell(value: Any) -> str:
    text = "—" if value is None else " ".join(str(value).split())
    return plain(text[:120] + ("…" if len(text) > 120 else "")).replace("|", "\\|")


def export_fields(request: RunRequest, traces: Mapping[str, Trace], registry: ToolRegistry) -> dict[str, Any]:
    """What a turn's export adds: its number, the block of the turns it continued (``previous``: a replay, a share
    and a fork show and keep them) and the block it hands on (``followup``: the next turn's ``previous``)."""
    previous = request.followup.previous if request.followup is not None else None
    block = block_for(previous, request.question, traces, registry, request.config(), expected=request.expected)
    return {"turn": request.turn, **({"previous": previous.block()} if previous is not None else {}),
            "followup": block}


def fork_fields(previous: Previous | None, question: str, traces: Mapping[str, Trace], key: str, slot: str,
                made: tuple[ToolRegistry, RunConfig], expected: str | None) -> dict[str, Any]:
    """What a fork's export adds so that a follow-up continues it: the block of the turn as it is now on screen.
    Each panel continues its own run; the fork's panel (``slot``: a mode's own, in place, or the panel beside)
    continues the fork, the teacher's edit in its history. None for a turn whose earlier turns came from a file
    this app did not seal (``Previous.trusted``)."""
    if previous is not None and not previous.trusted:
        return {}
    fork = traces[key]
    panels = {m: t for m, t in traces.items() if forked_mode(m) is None and m != slot}
    shown_as = slot if slot in PANEL_MODES else key
    panels[shown_as] = fork
    edit = next((e for _, e in reversed(fork.events) if isinstance(e, Forked)), None)
    edits = {shown_as: {"step": edit.step + 1, "original": edit.original, "edited": edit.edited}} if edit else None
    registry, config = made
    block = block_for(previous, question, panels, registry, config, expected=expected, edits=edits)
    return {"turn": 1 + (previous.turn if previous is not None else 0), "followup": block}
