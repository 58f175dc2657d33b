"""What the class poll's phones may do: voter ids the app issues, and the per-address rates (:class:`Rate`).

A phone's voter id is the app's, not the phone's (``POST /poll/CODE/join``, :func:`issue`): random (the same one
for every join of one browser), and sealed with the app's ``poll-voter`` key (``agents/app_key.py``) for one room in
one start of the app, so a vote with an id the app did not give is refused and counts nothing (:func:`refusal`),
and a script cannot vote as many phones as it makes up ids. How many ids one address may be given is the room
store's (``ui/poll/rooms.py``).
"""

from __future__ import annotations

import collections
import re
import secrets
from collections.abc import Callable
from typing import Any

from agents import app_key

VOTER_RE = re.compile(r"[0-9a-f]{24}\.[0-9a-f]{32}")  # the id the app issued, and its seal


def issue(room: str, browser: str | None = None) -> str:
    """A voter id for ``room`` (the room's code and the app's start, e.g. ``"<boot>:<code>"``): a new random one, or
    for a ``browser`` (its signed cookie, ``ui/core/visitors.py``) always the same one, so a phone that joins again
    (another tab, a cleared page) keeps its one vote."""
    voter = app_key.seal("poll-browser", f"{room}:{browser}")[:24] if browser else secrets.token_hex(12)
    return f"{voter}.{_seal(room, voter)}"


def refusal(voter: Any, room: str) -> str | None:
    """Why ``voter`` cannot vote in ``room`` (one line), or None when the app issued it for that room."""
    if not isinstance(voter, str) or not VOTER_RE.fullmatch(voter):
        return "This phone has not joined this poll: reload the page."
    if not secrets.compare_digest(voter[25:], _seal(room, voter[:24])):
        return "This phone's vote token is not this poll's: reload the page."
    return None


def _seal(room: str, voter: str) -> str:
    return app_key.seal("poll-voter", f"{room}:{voter}")[:32]


class Rate:
    """At most ``limit`` actions per key in any ``span_s`` seconds, on an injectable clock. Keys quiet for a whole
    span are forgotten, so the map stays as small as the set of recent actors."""

    def __init__(self, limit: int, span_s: float, clock: Callable[[], float]) -> None:
        self.limit, self.span_s, self.clock = limit, span_s, clock
        self._seen: dict[str, collections.deque[float]] = {}
        self._swept = 0.0

    def count(self, key: str) -> int:
        """Actions of ``key`` in the last span."""
        now = self.clock()
        if now - self._swept > self.span_s:
            self._seen = {k: d for k, d in self._seen.items() if d and now - d[-1] < self.span_s}
            self._swept = now
        times = self._seen.get(key)
        while times and now - times[0] >= self.span_s:
            times.popleft()
        return len(times) if times else 0

    def allow(self, key: str) -> bool:
        """Count one action of ``key`` and return True, or False (nothing counted) past the limit."""
        if self.count(key) >= self.limit:
            return False
        self._seen.setdefault(key, collections.deque()).append(self.clock())
        return True
