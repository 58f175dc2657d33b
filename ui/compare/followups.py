"""A follow-up from the page: the run on screen (the lesson's :class:`~ui.core.lesson.Shown`) continued.

Every panel on screen continues its own conversation, the fork beside the modes included, from the sealed block
the run on screen hands on (``agents/followup.py``): a live run's or a fork's export, a replayed file's, a
shared run's, a benchmark item's. What cannot be continued is one line in a teacher's words (the words for
``/compare``'s API callers stay at the API).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

from agents.followup import FollowupError, follow_up, opened
from agents.request import RunRequest
from ui.core.lesson import FROM_FILE, Shown
from ui.core.safe_text import plain
from ui.core.settings import app_settings
from ui.recordings.reader import MAX_REPLAY_BYTES

ANEW = "press ▶ Run to ask your question anew."
LINES = {  # FollowupError.kind → what the page says
    "missing": "This run holds no conversation to continue (it was saved before follow-ups existed): " + ANEW,
    "changed": ("This run was saved by another copy of the app, or before the app restarted, so its conversation "
                "cannot be continued here: " + ANEW),
    "full": "This conversation has reached its {turns} turns, the most one may hold: press ▶ Run to start anew.",
    "gone": "This run's saved turns are gone (they are kept for an hour): " + ANEW,
    "malformed": "This run's conversation could not be read: " + ANEW,
}
OTHER_MODEL = ("This run was recorded on {recorded}, and this page is set to {model}: choose {recorded} under "
               "Settings → Model to continue its conversation, or " + ANEW)


def teacher_line(exc: FollowupError) -> str:
    """A refusal of a follow-up in the page's words."""
    return LINES.get(exc.kind, LINES["malformed"]).format(turns=app_settings().followup_turns)


def block_in(path: str | None) -> Any:
    """The sealed block a run's export file hands on (read in a thread: the file may be a few megabytes)."""
    file = Path(path) if path else None
    if file is None or not file.is_file():
        raise FollowupError("the earlier turn's file is gone", "gone")
    if file.stat().st_size > MAX_REPLAY_BYTES:
        raise FollowupError("the earlier turn's file is too large", "malformed")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, RecursionError):
        raise FollowupError("the earlier turn's file does not read", "malformed") from None
    block = data.get("followup") if isinstance(data, dict) else None
    if block is None:
        raise FollowupError("the earlier turn has no follow-up block", "missing")
    return block


async def continued(shown: Shown, request: RunRequest, model: str | None) -> RunRequest | str:
    """``request`` (the follow-up's question, modes and settings, checked) continuing the run on screen — the fork
    beside the modes among its panels — or the one line why it cannot. ``model``: the one the follow-up runs on."""
    recorded = shown.model
    if shown.source in FROM_FILE and recorded and model and recorded != model:
        return OTHER_MODEL.format(recorded=plain(recorded), model=plain(model))
    settings = app_settings()
    try:
        block = shown.followup if shown.followup is not None else await asyncio.to_thread(block_in, shown.export)
        previous = opened(block, max_turns=settings.followup_turns)
    except FollowupError as exc:
        return teacher_line(exc)
    modes = request.modes
    if shown.beside is not None and shown.beside in previous.history and shown.beside not in modes:
        modes = (*modes, shown.beside)  # the fork beside the modes continues in its own panel
    followup, history = follow_up(previous, modes, settings.context_budget)
    return dataclasses.replace(request, modes=modes, history=history, followup=followup)
