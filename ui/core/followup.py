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
from agents.followup import FollowUp, Previous, block_for, follow_up, opened
from agents.modes.registry import forked_mode, mode_title
from agents.request import RunRequest
from agents.trace import Trace
from tools.registry import ToolRegistry
from ui.core import render
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


def thread(followup: FollowUp, mode: str, question: str) -> list[dict]:
    """What a follow-up's panel shows above its new turn, in the browser's form: each earlier turn's question and
    this mode's answer, then the new question (and a note when observations were cut or the mode is new)."""
    messages: list[gr.ChatMessage] = []
    mode = forked[0] if (forked := forked_mode(mode)) else mode  # a fork ("react@2") continues its mode's turns
    for n, turn in enumerate(followup.previous.turns, start=1):
        messages.append(gr.ChatMessage(role="user", content=f"**Turn {n}** · {safe_markdown(turn['question'])}"))
        answer = turn["answers"].get(mode)
        said = safe_markdown(str(answer)) if answer is not None else "_(no answer in this turn)_"
        messages.append(gr.ChatMessage(role="assistant", content=said,
                                       metadata={"title": f"{plain(mode_title(mode))} in turn {n}"}))
    messages.append(gr.ChatMessage(role="user", content=f"**Turn {followup.previous.turn + 1}** · "
                                                        f"{safe_markdown(question)}"))
    if mode not in followup.previous.history:
        messages += render.notice(NEW_HERE)
    elif mode == "codeact":
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
    """A fork's earlier turns: those of the mode it forks, within the context budget."""
    if previous is None:
        return ()
    mode = forked[0] if (forked := forked_mode(panel)) else panel
    return tuple(fit(previous.history.get(mode, ()), app_settings().context_budget)[0])


def earlier_table(previous: Previous | None, modes: tuple[str, ...]) -> str:
    """The earlier turns as table rows (turn, question, each mode's answer), above this turn's table."""
    if previous is None:
        return ""
    head = "| Turn | Question | " + " | ".join(plain(mode_title(m)) for m in modes) + " |"
    rule = "|---|---|" + "---|" * len(modes)
    rows = [f"| {n} | {_cell(t['question'])} | " + " | ".join(_answered(t, m) for m in modes) + " |"
            for n, t in enumerate(previous.turns, start=1)]
    return "\n".join(["**Earlier turns**", "", head, rule, *rows, "", f"**Turn {previous.turn + 1}**", ""])


def _answered(turn: dict[str, Any], mode: str) -> str:
    """A mode's cell of an earlier turn: its answer, then its steps, tokens and seconds."""
    if mode not in turn["answers"]:
        return "—"
    figures = turn.get("numbers", {}).get(mode) if isinstance(turn.get("numbers"), dict) else None
    got = [figures.get(k) for k in ("steps", "tokens", "seconds")] if isinstance(figures, dict) else []
    shown = (f" ({got[0]} step{'' if got[0] == 1 else 's'} · {got[1]:,} tokens · {got[2]:.1f} s)"
             if got and all(isinstance(x, int | float) and not isinstance(x, bool) for x in got) else "")
    return _cell(turn["answers"][mode]) + shown  # a recording's figures of another shape: the answer alone


def _cell(value: Any) -> str:
    text = "—" if value is None else " ".join(str(value).split())
    return plain(text[:120] + ("…" if len(text) > 120 else "")).replace("|", "\\|")


def export_fields(request: RunRequest, traces: Mapping[str, Trace], registry: ToolRegistry) -> dict[str, Any]:
    """What a turn's export adds: its number, the block of the turns it continued (``previous``: a replay, a share
    and a fork show and keep them) and the block it hands on (``followup``: the next turn's ``previous``)."""
    previous = request.followup.previous if request.followup is not None else None
    block = block_for(previous, request.question, traces, registry, request.config())
    return {"turn": request.turn, **({"previous": previous.block()} if previous is not None else {}),
            "followup": block}
