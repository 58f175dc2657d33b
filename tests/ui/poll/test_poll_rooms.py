"""The class poll's room store: codes, votes that change and never count twice, lock, rounds, caps, expiry and
rate limits, on an injected clock."""

from __future__ import annotations

import json

import pytest

from ui.poll import rooms
from ui.poll.room import NONE
from ui.poll.rooms import ALPHABET, PollError, RoomLimits, RoomStore, clean_code, new_code

MODES = [("think", "Think-only"), ("act", "Act-only"), ("react", "ReAct")]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


_joined: dict[tuple[int, str, int], str] = {}


def voter(store: RoomStore, code: str, i: int = 0, address: str = "1.2.3.4") -> str:
    """Phone ``i``'s voter id in the room of ``code``, as the store issued it when the phone joined (once)."""
    key = (id(store), code.upper(), i)
    if key not in _joined:
        _joined[key] = store.join(code, address)
    return _joined[key]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(clock: Clock) -> RoomStore:
    return RoomStore(RoomLimits(phones=5, per_teacher=2, idle_s=7200), clock=clock)


def test_codes_are_long_enough_and_have_no_look_alikes():
    codes = {new_code() for _ in range(500)}
    assert len(codes) == 500  # random, not a counter
    assert all(len(c) >= 6 and set(c) <= set(ALPHABET) for c in codes)
    assert not set("01OIL") & set(ALPHABET)
    assert clean_code("AB1CDE") is None  # 1 is not in the alphabet
    assert clean_code("abc-234") == "ABC234"
    assert clean_code("AB0CDE") is None and clean_code("ABC") is None and clean_code(None) is None


def test_a_vote_changes_and_never_counts_twice(store: RoomStore):
    room = store.create("teacher", "What is 2+2?", MODES)
    store.vote(room.code, voter(store, room.code), "think", "1.2.3.4")
    store.vote(room.code.lower(), voter(store, room.code), "react", "1.2.3.4")  # a code typed in lower case
    store.vote(room.code, voter(store, room.code), "react", "1.2.3.4")
    store.vote(room.code, voter(store, room.code, 2), NONE, "1.2.3.4")
    tally = store.get(room.code).current.public()
    assert tally == {"tally": {"think": 0, "act": 0, "react": 1, NONE: 1}, "total": 2, "locked": False, "reveal": {}}


def test_the_phones_see_counts_only(store: RoomStore):
    room = store.create("teacher", "Q?", MODES)
    store.vote(room.code, voter(store, room.code), "act", "1.2.3.4")
    body = store.get(room.code).body().decode()
    assert voter(store, room.code) not in body and "teacher" not in body and "1.2.3.4" not in body
    data = json.loads(body)
    assert data["choices"] == ["think", "act", "react", NONE] and data["boot"] == rooms.BOOT
    assert data["rounds"][0]["tally"] is None and data["rounds"][0]["total"] == 1  # how many, not who chose what
    store.lock(room.code)
    data = json.loads(store.get(room.code).body())
    assert data["rounds"][0]["tally"]["act"] == 1 and data["rounds"][0]["total"] == 1


def test_a_vote_after_the_lock_is_one_line_and_not_counted(store: RoomStore):
    room = store.create("teacher", "Q?", MODES)
    store.vote(room.code, voter(store, room.code), "act", "1.2.3.4")
    store.lock(room.code)
    with pytest.raises(PollError, match="locked") as refused:
        store.vote(room.code, voter(store, room.code), "think", "1.2.3.4")
    assert refused.value.status == 409
    assert store.get(room.code).current.counts == {"think": 0, "act": 1, "react": 0, NONE: 0}
    assert store.get(room.code).state == "locked"


def test_vote_again_opens_a_second_round_beside_the_first(store: RoomStore):
    room = store.create("teacher", "Q?", MODES)
    store.vote(room.code, voter(store, room.code), "act", "1.2.3.4")
    store.set_reveal(room.code, {"act": {"answer": "5", "correct": False}, "other": {"answer": "x"}})
    assert store.get(room.code).reveal == {"act": {"answer": "5", "correct": False}}
    store.again(room.code)
    store.vote(room.code, voter(store, room.code), "react", "1.2.3.4")
    data = store.get(room.code).public()
    assert data["round"] == 2 and data["state"] == "open" and data["reveal"] == {}
    assert [r["tally"]["act"] for r in data["rounds"]] == [1, 0]
    assert [r["tally"]["react"] for r in data["rounds"]] == [0, 1]
    assert data["rounds"][0]["locked"] and not data["rounds"][1]["locked"]


def test_bad_votes_are_one_line(store: RoomStore):
    room = store.create("teacher", "Q?", MODES)
    mine = voter(store, room.code)
    for bad_voter, choice, status in [("short", "act", 403), (None, "act", 403), ("x" * 100, "act", 403),
                                      (mine, "nope", 400), (mine, 3, 400)]:
        with pytest.raises(PollError) as refused:
            store.vote(room.code, bad_voter, choice, "1.2.3.4")
        assert refused.value.status == status and "\n" not in refused.value.line
    assert store.get(room.code).current.public()["total"] == 0


def test_unknown_ended_and_expired_codes(store: RoomStore, clock: Clock):
    with pytest.raises(PollError, match="No class poll has that code") as unknown:
        store.find("ZZZZZZ", "1.2.3.4")
    assert unknown.value.status == 404
    ended = store.create("teacher", "Q?", MODES)
    store.end(ended.code)
    with pytest.raises(PollError, match="ended") as gone:
        store.find(ended.code, "1.2.3.4")
    assert gone.value.status == 410
    idle = store.create("teacher", "Q?", MODES)
    clock.now += 7199
    assert store.find(idle.code, "1.2.3.4") is not None  # not yet idle for 2 h
    store.vote(idle.code, voter(store, idle.code), "act", "1.2.3.4")  # activity: the idle time starts again
    clock.now += 7199
    assert store.get(idle.code) is not None
    clock.now += 2
    with pytest.raises(PollError, match="expired after 2 h") as expired:
        store.find(idle.code, "1.2.3.4")
    assert expired.value.status == 410 and store.get(idle.code) is None


def test_a_room_holds_at_most_its_phones(store: RoomStore):
    room = store.create("teacher", "Q?", MODES)
    for i in range(5):
        store.vote(room.code, voter(store, room.code, i), "act", "1.2.3.4")
    with pytest.raises(PollError, match="full") as full:
        store.vote(room.code, voter(store, room.code, 99), "act", "1.2.3.4")
    assert full.value.status == 403
    store.vote(room.code, voter(store, room.code, 0), "think", "1.2.3.4")  # a phone already in may change its vote
    assert store.get(room.code).current.public()["total"] == 5


def test_a_teacher_holds_at_most_a_few_rooms(store: RoomStore):
    first = store.create("teacher", "Q?", MODES)
    store.create("teacher", "Q?", MODES)
    with pytest.raises(PollError, match="already hold 2") as refused:
        store.create("teacher", "Q?", MODES)
    assert refused.value.status == 429
    store.create("another teacher", "Q?", MODES)
    store.end(first.code)
    store.create("teacher", "Q?", MODES)


def test_a_room_needs_a_question_and_modes(store: RoomStore):
    with pytest.raises(PollError, match="question"):
        store.create("teacher", "  ", MODES)
    with pytest.raises(PollError, match="mode"):
        store.create("teacher", "Q?", [])


def test_guesses_of_codes_are_limited_per_address(clock: Clock):
    store = RoomStore(RoomLimits(guesses=3, guess_span_s=600), clock=clock)
    room = store.create("teacher", "Q?", MODES)
    store.find(room.code, "5.5.5.5")  # found before the guessing: this address keeps its room
    for _ in range(3):
        with pytest.raises(PollError) as miss:
            store.find("ZZZZZZ", "5.5.5.5")
        assert miss.value.status == 404
    with pytest.raises(PollError, match="Too many wrong codes") as blocked:
        store.find("ZZZZZZ", "5.5.5.5")
    assert blocked.value.status == 429
    other = store.create("teacher", "Q?", MODES)
    with pytest.raises(PollError, match="Too many wrong codes"):
        store.find(other.code, "5.5.5.5")  # a right guess now teaches nothing
    assert store.find(room.code, "5.5.5.5").code == room.code  # the room it had joined still answers
    assert store.find(other.code, "6.6.6.6").code == other.code  # another address is not affected
    clock.now += 601
    assert store.find(other.code, "5.5.5.5").code == other.code


def test_a_flood_of_votes_from_one_phone_is_refused_and_counted_once(clock: Clock):
    store = RoomStore(RoomLimits(votes_per_voter=5, votes_per_address=8, vote_span_s=60), clock=clock)
    room = store.create("teacher", "Q?", MODES)
    lines = []
    for i in range(20):
        try:
            store.vote(room.code, voter(store, room.code), ["act", "think"][i % 2], "1.2.3.4")
        except PollError as exc:
            lines.append((exc.status, exc.line))
    assert len(lines) == 15 and set(lines) == {(429, "Too many votes from this phone: wait a minute.")}
    assert store.get(room.code).current.public()["total"] == 1
    for i in range(1, 4):  # three other phones (phone 0 flooded above)
        store.vote(room.code, voter(store, room.code, i), "act", "1.2.3.4")
    with pytest.raises(PollError, match="from this network"):
        store.vote(room.code, voter(store, room.code, 9), "act", "1.2.3.4")
    clock.now += 61
    store.vote(room.code, voter(store, room.code, 9), "act", "1.2.3.4")


def test_the_store_is_safe_across_threads():
    import threading

    store = RoomStore(RoomLimits(phones=1000, votes_per_address=100_000))
    room = store.create("teacher", "Q?", MODES)

    def phone(i: int) -> None:
        for choice in ("act", "think", "react"):
            store.vote(room.code, voter(store, room.code, i, f"10.0.0.{i % 250}"), choice, f"10.0.0.{i % 250}")

    threads = [threading.Thread(target=phone, args=(i,)) for i in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ballot = store.get(room.code).current
    assert ballot.counts == {"think": 0, "act": 0, "react": 200, NONE: 0} and len(ballot.votes) == 200


def test_the_phones_copy_changes_with_new_voters_and_the_teachers_acts_only(store: RoomStore):
    room = store.create("teacher", "Q?", MODES)
    versions, tags = [room.version], [room.etag]
    for choice in ("act", "act", "think"):  # a first vote, the same again (nothing), a change
        store.vote(room.code, voter(store, room.code), choice, "1.2.3.4")
        versions.append(room.version)
        tags.append(room.etag)
    store.set_state(room.code, "running", "The teacher is stepping through the run.")
    versions.append(room.version)
    tags.append(room.etag)
    assert versions[0] < versions[1] == versions[2] < versions[3] < versions[4]  # the teacher's screen redraws
    assert tags[0] != tags[1] == tags[2] == tags[3] != tags[4]  # a changed vote costs the other phones nothing
    assert store.get(room.code).current.locked


def test_a_browser_that_joins_again_keeps_its_one_vote_and_is_counted_once(clock: Clock):
    """A phone's browser (its signed cookie) gets one voter id per room however often it joins (a second tab, a
    cleared page): one vote, and one of its network's phones; a client without the cookie is a new phone each time."""
    store = RoomStore(RoomLimits(voters_per_address=2), clock=clock)
    room, other = store.create("teacher", "Q?", MODES), store.create("teacher", "Q2?", MODES)
    ids = {store.join(room.code, "10.0.0.1", "browser:a") for _ in range(5)}
    assert len(ids) == 1
    mine = ids.pop()
    store.vote(room.code, mine, "act", "10.0.0.1")
    store.vote(room.code, store.join(room.code, "10.0.0.1", "browser:a"), "think", "10.0.0.1")  # a second tab
    assert store.get(room.code).current.public()["total"] == 1
    assert store.join(room.code, "10.0.0.1") != store.join(room.code, "10.0.0.1", "browser:a")  # no cookie: new
    with pytest.raises(PollError, match="already has 2 phones") as full:
        store.join(room.code, "10.0.0.1", "browser:b")  # the cookieless one was this network's second
    assert full.value.status == 403
    assert store.join(room.code, "10.0.0.1", "browser:a") == mine  # a phone already in still gets its id
    clock.now += 61
    assert store.join(other.code, "10.0.0.1", "browser:a") != mine  # per room: no id votes in another


def test_each_bound_on_new_phones_holds_without_the_other(clock: Clock):
    """Per address: at most 60 voters a room, and 60 new ones a minute over every room; each attacked with the
    other out of the way (the rate spread over rooms, the room's bound over minutes)."""
    store = RoomStore(RoomLimits(per_teacher=3), clock=clock)
    rooms_ = [store.create("teacher", f"Q{i}?", MODES) for i in range(3)]
    for room in rooms_[:2]:
        for _ in range(30):
            store.join(room.code, "10.0.0.1")
    with pytest.raises(PollError, match="Too many new phones") as fast:  # no room is near its 60
        store.join(rooms_[2].code, "10.0.0.1")
    assert fast.value.status == 429 and "\n" not in fast.value.line
    assert store.join(rooms_[2].code, "10.0.0.2")  # another network is not held up
    clock.now += 61
    for _ in range(30):  # a minute later: the rate has room again, the first room fills to its 60
        store.join(rooms_[0].code, "10.0.0.1")
    with pytest.raises(PollError, match="already has 60 phones") as full:
        store.join(rooms_[0].code, "10.0.0.1")
    assert full.value.status == 403
    clock.now += 3600  # however long after
    with pytest.raises(PollError, match="already has 60 phones"):
        store.join(rooms_[0].code, "10.0.0.1")
    assert store.join(rooms_[2].code, "10.0.0.1")  # its other rooms still take its phones
