"""The class poll's rooms: an in-memory, thread-safe store shared by the teacher's page and the phones' routes.

A vote is kept as *voter id → choice* only, so a phone can change it and is never counted twice; only counts leave
the store. The voter id is the store's, sealed with the app's key for that room and this start of the app, so a
vote with any other id counts nothing. Everything a phone may do is bounded (:class:`RoomLimits`). Rooms live in
this process: a restart ends them, and :data:`BOOT` (new each start) lets a phone tell that from an expiry. A room
itself is ``ui/poll/room.py``.
"""

from __future__ import annotations

import collections
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ui.core.settings import app_settings
from ui.poll import voters
from ui.poll.room import BOOT, Room, Round
from ui.poll.voters import Rate

ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L: a code read off a projector is typed right
CODE_LENGTH = 6  # 31**6 ≈ 887 million codes
STATES = ("open", "locked", "running", "revealed", "ended")
MAX_ROUNDS = 5
MAX_ROOMS = 500  # in the whole app, whoever holds them
MAX_ADDRESSES = 100_000  # addresses remembered with the codes they found
GONE_KEPT = 2000  # ended or expired codes remembered, so a phone reads why rather than "unknown"


class PollError(Exception):
    """One line for a phone or the teacher, with the HTTP status a route answers it with."""

    def __init__(self, line: str, status: int = 400) -> None:
        super().__init__(line)
        self.line, self.status = line, status


def new_code(length: int = CODE_LENGTH) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def clean_code(text: Any) -> str | None:
    """A typed code as the store keeps it (upper case, spaces and dashes dropped), or None if it cannot be one."""
    if not isinstance(text, str) or len(text) > 32:
        return None
    code = re.sub(r"[\s-]", "", text).upper()
    return code if len(code) >= CODE_LENGTH and set(code) <= set(ALPHABET) else None




@dataclass(frozen=True)
class RoomLimits:
    """What a store's rooms may hold and how fast addresses may act: the app's come from ``APP_POLL_*``."""

    idle_s: float = 7200.0  # a room ends this long without activity
    phones: int = 300  # voters one room holds
    per_teacher: int = 3  # rooms one teacher holds at once
    max_rooms: int = MAX_ROOMS  # rooms the whole app holds
    guesses: int = 100  # unknown codes one address may try per guess_span_s
    guess_span_s: float = 600.0
    votes_per_address: int = 600  # votes per vote_span_s: a class behind one address votes together
    votes_per_voter: int = 20  # one phone's flood, per vote_span_s
    vote_span_s: float = 60.0
    voters_per_address: int = 60  # new voters per join_span_s from one address, over all rooms
    join_span_s: float = 60.0
    grace_s: float = 300.0  # a room whose teacher's page closed ends this long after


class RoomStore:
    """Every room of this process. All methods are thread-safe and cheap (a dict lookup under one lock)."""

    def __init__(self, limits: RoomLimits | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        limits = limits or RoomLimits()
        self.idle_s, self.phones, self.per_teacher, self.max_rooms = (limits.idle_s, limits.phones,
                                                                      limits.per_teacher, limits.max_rooms)
        self.voters_per_address, self.grace_s = limits.voters_per_address, limits.grace_s
        self.clock = clock
        self._rooms: dict[str, Room] = {}
        self._gone: collections.OrderedDict[str, str] = collections.OrderedDict()  # code → why it ended
        self._lock = threading.Lock()
        self._misses = Rate(limits.guesses, limits.guess_span_s, clock)  # unknown codes tried, per address
        self._joined: dict[str, set[str]] = {}  # address → codes it found: a guesser over its limit learns no more
        self._votes = Rate(limits.votes_per_address, limits.vote_span_s, clock)
        self._voter_votes = Rate(limits.votes_per_voter, limits.vote_span_s, clock)
        self._joins = Rate(limits.voters_per_address, limits.join_span_s, clock)
        self._swept = clock()

    # -- the teacher's side ------------------------------------------------------------------------------------
    def create(self, owner: str, question: str, modes: Iterable[tuple[str, str]], page: str = "") -> Room:
        """A new open room shown on the teacher's ``page``; refused with one line past the teacher's or the app's
        number of rooms (a room counts until it ends: a closed page's, until its grace time is over)."""
        question = " ".join(str(question or "").split())[:500]
        modes = tuple((str(m), str(t)) for m, t in modes)[:12]
        if not question:
            raise PollError("Type the question first: the class votes on it.")
        if not modes:
            raise PollError("Pick at least one mode first: the class predicts which one gets it right.")
        with self._lock:
            now = self._sweep()
            if sum(r.owner == owner for r in self._rooms.values()) >= self.per_teacher:
                raise PollError(f"You already hold {self.per_teacher} open class polls (listed above): end one "
                                "first.", 429)
            if len(self._rooms) >= self.max_rooms:
                raise PollError("The app holds as many class polls as it can: try again later.", 503)
            code = new_code()
            while code in self._rooms or code in self._gone:
                code = new_code()
            room = Room(code, owner, question, modes, now, page=page)
            room.rounds.append(Round(dict.fromkeys(room.choices, 0)))
            self._rooms[code] = room
            return room

    def handle(self, room: Room) -> str:
        """What the teacher's page keeps to act on its room: code, secret and this process's boot."""
        return f"{room.code}.{room.secret}.{BOOT}"

    def owned(self, handle: Any) -> Room:
        """The teacher's room from its handle; one line when it ended, expired, or the app restarted."""
        code, secret, boot = (handle.split(".") + ["", "", ""])[:3] if isinstance(handle, str) else ("", "", "")
        if not code:
            raise PollError("Start a class poll first.")
        if boot != BOOT:
            raise PollError("The app restarted: that class poll has ended. Start a new one.", 410)
        with self._lock:
            room = self._live(code)
            if not secrets.compare_digest(room.secret, secret):
                raise PollError("That class poll is not yours.", 403)
            return room

    def update(self, code: str, change: Callable[[Room], None]) -> Room:
        """Apply ``change`` to the room under the lock and mark it changed (the teacher's buttons)."""
        with self._lock:
            room = self._live(code)
            change(room)
            room.changed(self.clock())
            return room

    def lock(self, code: str) -> Room:
        def locked(room: Room) -> None:
            room.current.locked = True
            if room.state == "open":
                room.state = "locked"
        return self.update(code, locked)

    def again(self, code: str, question: str | None = None) -> Room:
        """A new round after discussion: votes open again from zero, the earlier rounds kept beside it; ``question``
        (the one on the teacher's screen now, a follow-up's) is what the phones vote on."""
        asked = " ".join(str(question or "").split())[:500]

        def reopened(room: Room) -> None:
            if len(room.rounds) >= MAX_ROUNDS:
                raise PollError(f"A poll has at most {MAX_ROUNDS} rounds: start a new poll.")
            room.current.locked = True
            room.rounds.append(Round(dict.fromkeys(room.choices, 0)))
            room.state, room.notice, room.link = "open", "", ""
            room.question = asked or room.question
        return self.update(code, reopened)

    def rooms_of(self, owner: str) -> list[Room]:
        """The teacher's open rooms, oldest first (whichever of their pages shows them, or none)."""
        with self._lock:
            self._sweep()
            return sorted((r for r in self._rooms.values() if r.owner == owner), key=lambda r: r.touched)

    def show_on(self, code: str, owner: str, page: str) -> Room:
        """The teacher's room, shown on their ``page`` from now on (a page closed in its grace time is forgiven);
        a room of another teacher is refused."""
        with self._lock:
            room = self._live(code)
            if room.owner != owner:
                raise PollError("That class poll is not yours.", 403)
            room.page, room.closed_at = page, None
            room.touched = self.clock()
            return room

    def page_closed(self, page: str) -> list[str]:
        """The teacher's ``page`` closed: its rooms end after the grace time, unless a page of theirs shows them
        again; the codes."""
        with self._lock:
            now = self.clock()
            held = [r for r in self._rooms.values() if page and r.page == page]
            for room in held:
                room.page, room.closed_at = "", now
            return [r.code for r in held]

    def set_state(self, code: str, state: str, notice: str | None = None) -> Room:
        """``running`` locks the round too; ``notice`` replaces the one line when given."""
        if state not in STATES:
            raise PollError(f"Unknown poll state {state!r}.")

        def moved(room: Room) -> None:
            if state in ("locked", "running", "revealed"):
                room.current.locked = True
            room.state = state
            if notice is not None:
                room.notice = notice[:200]
        return self.update(code, moved)

    def set_reveal(self, code: str, reveal: dict[str, dict[str, Any]], link: str | None = None) -> Room:
        def revealed(room: Room) -> None:
            room.current.reveal = {m: dict(reveal[m]) for m, _ in room.modes if m in reveal}
            room.current.locked = True
            room.state = "revealed"
            if link is not None:
                room.link = link
        return self.update(code, revealed)

    def end(self, code: str, why: str = "The teacher ended this poll.") -> None:
        with self._lock:
            if self._rooms.pop(code, None) is not None:
                self._forget(code, why)

    # -- the phones' side ----------------------------------------------------------------------------------------
    def find(self, code: Any, address: str) -> Room:
        """The live room of a code a phone sent; an unknown, ended or expired code is one line, and an address
        that tried too many unknown codes learns no new ones."""
        cleaned = clean_code(code)
        with self._lock:
            self._sweep()
            room = self._rooms.get(cleaned or "")
            if room is not None and room.code in self._joined.get(address, ()):
                return room
            if self._misses.count(address) >= self._misses.limit:
                raise PollError("Too many wrong codes from this network: wait a few minutes, then check the code.",
                                429)
            if room is None:
                why = self._gone.get(cleaned or "")
                if why:  # a room that was: a whole class's phones read this at once, and it is no guess
                    raise PollError(why, 410)
                self._misses.allow(address)
                raise PollError("No class poll has that code: check it on the teacher's screen.", 404)
            if len(self._joined) >= MAX_ADDRESSES:
                self._joined.clear()  # bounded: a phone that loses its place just finds its room again
            self._joined.setdefault(address, set()).add(room.code)
            return room

    def snapshot(self, room: Room) -> tuple[str, bytes]:
        """A room's phone ETag and JSON, made under the lock: a teacher's button (on Gradio's thread pool) may be
        changing the room while the loop answers a phone."""
        with self._lock:
            return room.etag, room.body()

    def view(self, room: Room) -> dict[str, Any]:
        """:meth:`Room.public` under the lock (phones vote on the loop while the teacher's handlers run in threads)."""
        with self._lock:
            return room.public()

    def get(self, code: str) -> Room | None:
        """The teacher's look at their own room (no limits), or None when it ended."""
        with self._lock:
            self._sweep()
            return self._rooms.get(code)

    def gone_why(self, code: str) -> str | None:
        with self._lock:
            return self._gone.get(code)

    def join(self, code: Any, address: str, browser: str | None = None) -> str:
        """A voter id for a phone at ``address`` in the room of ``code``: refused with one line once that address
        brought :attr:`voters_per_address` voters into the room, or joins faster than that many a minute. A
        ``browser`` (its signed cookie) that joined before gets its own id again, and is not counted again."""
        room = self.find(code, address)
        with self._lock:
            if room.code not in self._rooms:
                raise PollError("The teacher ended this poll.", 410)
            if browser and browser in room.browsers:
                return voters.issue(f"{BOOT}:{room.code}", browser)
            if room.joined.get(address, 0) >= self.voters_per_address:
                raise PollError(f"This network already has {self.voters_per_address} phones in this poll, the most "
                                "one network may bring: this phone cannot vote.", 403)
            if not self._joins.allow(address):
                raise PollError("Too many new phones from this network at once: wait a minute, then reload.", 429)
            room.joined[address] = room.joined.get(address, 0) + 1
            if browser:
                room.browsers.add(browser)
        return voters.issue(f"{BOOT}:{room.code}", browser)

    def vote(self, code: Any, voter: Any, choice: Any, address: str) -> Room:
        """Record (or change) one phone's vote in the open round, from a voter id :meth:`join` gave for this room;
        every refusal is one line, and counts nothing."""
        room = self.find(code, address)
        if (refused := voters.refusal(voter, f"{BOOT}:{room.code}")) is not None:
            raise PollError(refused, 403)
        with self._lock:
            if room.code not in self._rooms:
                raise PollError("The teacher ended this poll.", 410)
            if not isinstance(choice, str) or choice not in room.current.counts:
                raise PollError("That is not one of this poll's choices.")
            ballot = room.current
            if ballot.locked:
                raise PollError("Voting is locked: the teacher is revealing the answers.", 409)
            if not self._voter_votes.allow(f"{room.code}:{voter}"):
                raise PollError("Too many votes from this phone: wait a minute.", 429)
            if not self._votes.allow(address):
                raise PollError("Too many votes from this network: wait a minute.", 429)
            before = ballot.votes.get(voter)
            if before is None and len(ballot.votes) >= self.phones:
                raise PollError(f"This poll is full ({self.phones} phones): your vote was not counted.", 403)
            if before == choice:
                return room
            if before is not None:
                ballot.counts[before] -= 1
            ballot.votes[voter] = choice
            ballot.counts[choice] += 1
            room.changed(self.clock(), phones=before is None)  # the phones show how many voted, not the split
            return room

    # -- upkeep ------------------------------------------------------------------------------------------------
    def _live(self, code: str) -> Room:
        self._sweep()
        room = self._rooms.get(code)
        if room is None:
            raise PollError(self._gone.get(code) or "This poll has ended.", 410)
        return room

    def _sweep(self) -> float:
        """End rooms idle past ``idle_s``, and those whose teacher's page closed more than ``grace_s`` ago (looked
        at most once a second); returns now."""
        now = self.clock()
        if now - self._swept >= 1.0:
            self._swept = now
            for code in [c for c, r in self._rooms.items() if now - r.touched >= self.idle_s]:
                del self._rooms[code]
                self._forget(code, f"This poll expired after {self.idle_s / 3600:g} h without activity.")
            for code in [c for c, r in self._rooms.items() if r.closed_at is not None
                         and now - r.closed_at >= self.grace_s]:
                del self._rooms[code]
                self._forget(code, "The teacher's page closed: this poll has ended.")
        return now

    def _forget(self, code: str, why: str) -> None:
        self._gone[code] = why
        while len(self._gone) > GONE_KEPT:
            self._gone.popitem(last=False)
        for codes in self._joined.values():
            codes.discard(code)

    def __len__(self) -> int:
        with self._lock:
            return len(self._rooms)


_store: RoomStore | None = None
_store_lock = threading.Lock()


def rooms() -> RoomStore:
    """This process's one store, with the app's limits (``APP_POLL_*``, ``ui/core/settings.py``)."""
    global _store
    with _store_lock:
        if _store is None:
            limits = app_settings()
            _store = RoomStore(RoomLimits(idle_s=limits.poll_idle_s, phones=limits.poll_phones,
                                          per_teacher=limits.poll_rooms,
                                          voters_per_address=limits.poll_voters_per_address,
                                          grace_s=limits.poll_grace_s))
        return _store
