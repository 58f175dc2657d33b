"""One class poll room and its rounds (kept in ``ui/poll/rooms.RoomStore``, changed only under its lock): what the
teacher's screen, the CSV and an export read (:meth:`Room.public`), and what a phone reads (:meth:`Room.phone`).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

NONE = "none"  # the choice "no mode gets it right"
BOOT = secrets.token_hex(4)  # this process's start: a phone seeing another one knows a restart ended its room


@dataclass
class Round:
    """One round of votes: each voter's choice, the counts kept in step, and whether the teacher locked it."""

    counts: dict[str, int]
    votes: dict[str, str] = field(default_factory=dict)
    locked: bool = False
    reveal: dict[str, dict[str, Any]] = field(default_factory=dict)  # mode id → {"answer", "correct"}

    def public(self) -> dict[str, Any]:
        return {"tally": dict(self.counts), "total": len(self.votes), "locked": self.locked,
                "reveal": self.reveal}


@dataclass
class Room:
    """One class's poll. Changed only under the store's lock; :meth:`body` is the phones' JSON, made once per
    version."""

    code: str
    owner: str  # the teacher: their browser (``browser:<id>``), else their address; rooms per teacher are capped
    question: str
    modes: tuple[tuple[str, str], ...]  # (id, title) of the modes on screen, in the page's order
    touched: float
    rounds: list[Round] = field(default_factory=list)
    state: str = "open"
    notice: str = ""
    link: str = ""  # the run's share link, for "open the full run"
    joined: dict[str, int] = field(default_factory=dict)  # address → voter ids issued to it in this room
    browsers: set[str] = field(default_factory=set)  # the browsers that joined it (each has one voter id)
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(16))  # the teacher's page holds it
    page: str = ""  # the session of the teacher's page showing it ("" for none)
    closed_at: float | None = None  # when that page closed: the room ends a grace time later unless shown again
    version: int = 1  # every change (the teacher's screen redraws on it)
    seen: int = 1  # every change a phone shows: in an open round only the number voted, not who chose what
    _body: tuple[int, bytes] | None = None

    @property
    def choices(self) -> list[str]:
        return [m for m, _ in self.modes] + [NONE]

    @property
    def current(self) -> Round:
        return self.rounds[-1]

    @property
    def reveal(self) -> dict[str, dict[str, Any]]:
        """The current round's answers and marks (each round keeps its own, shown side by side)."""
        return self.current.reveal

    def changed(self, now: float, *, phones: bool = True) -> None:
        self.version += 1
        self.seen += phones
        self.touched = now

    def public(self) -> dict[str, Any]:
        """Everything but the voters: counts only (the teacher's screen, the CSV, the export)."""
        return {"code": self.code, "boot": BOOT, "version": self.version, "state": self.state, "notice": self.notice,
                "question": self.question, "modes": [{"id": m, "title": t} for m, t in self.modes],
                "choices": self.choices, "round": len(self.rounds), "rounds": [r.public() for r in self.rounds],
                "reveal": self.reveal, "link": self.link}

    def phone(self) -> dict[str, Any]:
        """What a phone reads: as :meth:`public`, with only the number voted in a round still open. Students commit
        before they see the class's split (peer instruction's first vote is their own); a changed vote changes
        nothing a phone shows, so it costs the other phones no fresh copy."""
        data = self.public()
        data["version"] = self.seen
        data["rounds"] = [r if r["locked"] else {**r, "tally": None} for r in data["rounds"]]
        return data

    def body(self) -> bytes:
        """:meth:`phone` as JSON, made once per change the phones see."""
        if self._body is None or self._body[0] != self.seen:
            self._body = (self.seen, json.dumps(self.phone(), separators=(",", ":")).encode())
        return self._body[1]

    @property
    def etag(self) -> str:
        return f'"{BOOT}-{self.code}-{self.seen}"'
