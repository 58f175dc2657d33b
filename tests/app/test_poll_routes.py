"""The class poll's phone routes through the real app (its own ASGI stack, no Gradio event): the page at
``/?room=``, the room's JSON with a cheap ``304``, votes, and one line (status + JSON) for each refusal."""

from __future__ import annotations

import httpx
import pytest

from ui.poll import rooms as poll_rooms
from ui.poll.rooms import BOOT, RoomLimits, RoomStore

MODES = [("think", "Think-only"), ("act", "Act-only"), ("react", "ReAct")]


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def app_url(kit):
    with kit.app_on_stub() as url:
        yield url.rstrip("/")


@pytest.fixture
def store():
    """A fresh store in place of the process's one (small caps, a clock the test moves)."""
    saved = poll_rooms._store
    poll_rooms._store = RoomStore(RoomLimits(phones=3, votes_per_voter=6, guesses=50), clock=Clock())
    try:
        yield poll_rooms._store
    finally:
        poll_rooms._store = saved


_voters: dict[tuple[str, str], str] = {}


def voter(url: str, code: str, phone: str) -> str:
    """The voter id ``phone`` got when it joined the room (``POST /poll/CODE/join``, once per phone)."""
    if (code, phone) not in _voters:
        joined = httpx.post(f"{url}/poll/{code}/join", timeout=10)
        assert joined.status_code == 200, joined.text
        _voters[code, phone] = joined.json()["voter"]
    return _voters[code, phone]


def vote(url: str, code: str, phone: str, choice: str, **kw) -> httpx.Response:
    """``phone`` votes (a made-up name: its voter id is the one it joined with)."""
    return httpx.post(f"{url}/poll/{code}/vote", json={"voter": voter(url, code, phone), "choice": choice},
                      timeout=10, **kw)


def test_the_join_link_serves_the_phone_page_and_the_app_stays_the_app(app_url, store):
    phone = httpx.get(f"{app_url}/?room=ABCDEF", timeout=10)
    assert phone.status_code == 200 and "Which mode will get it right?" in phone.text
    assert "gradio" not in phone.text.lower()  # a small page of its own, no Gradio
    assert "default-src 'none'" in phone.headers["content-security-policy"]
    assert httpx.get(f"{app_url}/join", timeout=10).text == phone.text
    page = httpx.get(f"{app_url}/", timeout=10)
    assert page.status_code == 200 and "Which mode will get it right?" not in page.text
    assert httpx.get(f"{app_url}/?run=abc&x=room", timeout=10).text != phone.text


def test_a_phone_reads_the_room_and_its_refresh_is_a_304(app_url, store):
    room = store.create("teacher", "What is 6 * 7?", MODES)
    first = httpx.get(f"{app_url}/poll/{room.code}", timeout=10)
    assert first.status_code == 200, first.text
    data = first.json()
    assert data["question"] == "What is 6 * 7?" and data["boot"] == BOOT and data["state"] == "open"
    assert [m["title"] for m in data["modes"]] == ["Think-only", "Act-only", "ReAct"]
    again = httpx.get(f"{app_url}/poll/{room.code.lower()}", headers={"If-None-Match": first.headers["etag"]},
                      timeout=10)
    assert again.status_code == 304 and again.content == b""
    voted = vote(app_url, room.code, "phone-one-000000001", "act")
    assert voted.status_code == 200
    assert voted.json()["rounds"][0]["tally"] is None and voted.json()["rounds"][0]["total"] == 1  # no split yet
    changed = vote(app_url, room.code, "phone-one-000000001", "react")
    assert changed.headers["etag"] == voted.headers["etag"]  # a changed vote changes nothing a phone shows
    same = httpx.get(f"{app_url}/poll/{room.code}", headers={"If-None-Match": voted.headers["etag"]}, timeout=10)
    assert same.status_code == 304
    store.lock(room.code)
    moved = httpx.get(f"{app_url}/poll/{room.code}", headers={"If-None-Match": voted.headers["etag"]}, timeout=10)
    assert moved.status_code == 200 and moved.json()["rounds"][0]["tally"]["react"] == 1


def test_votes_change_and_count_once(app_url, store):
    room = store.create("teacher", "Q?", MODES)
    for choice in ("think", "act", "react", "react"):
        answer = vote(app_url, room.code, "phone-one-000000001", choice)
        assert answer.status_code == 200, answer.text
    vote(app_url, room.code, "phone-two-000000002", "none")
    store.lock(room.code)
    tally = httpx.get(f"{app_url}/poll/{room.code}", timeout=10).json()["rounds"][0]
    assert tally["tally"] == {"think": 0, "act": 0, "react": 1, "none": 1} and tally["total"] == 2
    assert "phone-one" not in httpx.get(f"{app_url}/poll/{room.code}", timeout=10).text


def refusal(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "boot"} and "\n" not in body["error"] and "Traceback" not in body["error"]
    return body["error"]


def test_each_refusal_is_one_line(app_url, store):
    room = store.create("teacher", "Q?", MODES)
    assert "No class poll has that code" in refusal(httpx.get(f"{app_url}/poll/ZZZZZZ", timeout=10), 404)
    assert "route" in refusal(httpx.get(f"{app_url}/poll/..%2F..%2Fetc", timeout=10), 404)
    assert "choices" in refusal(vote(app_url, room.code, "phone-one-000000001", "gpt"), 400)
    made_up = httpx.post(f"{app_url}/poll/{room.code}/vote", json={"voter": "me" * 10, "choice": "act"}, timeout=10)
    assert "has not joined" in refusal(made_up, 403)
    bad_json = httpx.post(f"{app_url}/poll/{room.code}/vote", content=b"{nope", timeout=10)
    assert "JSON object" in refusal(bad_json, 400)
    for odd in (b"[" * 1000, b'"text"', b"\xff\xfe", b"null"):
        assert refusal(httpx.post(f"{app_url}/poll/{room.code}/vote", content=odd, timeout=10), 400)
    odd_voter = httpx.post(f"{app_url}/poll/{room.code}/vote", content=b'{"voter": ["x"], "choice": {"a": 1}}',
                           timeout=10)
    assert "has not joined" in refusal(odd_voter, 403)
    for code in ("", "%00", "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9", "A" * 40):
        assert refusal(httpx.get(f"{app_url}/poll/{code}", timeout=10), 404)
    huge = httpx.post(f"{app_url}/poll/{room.code}/vote", content=b"x" * 5000, timeout=10)
    assert "too large" in refusal(huge, 413)
    assert "route" in refusal(httpx.delete(f"{app_url}/poll/{room.code}", timeout=10), 405)
    for i in range(3):
        vote(app_url, room.code, f"phone-{i:014d}", "act")
    assert "full (3 phones)" in refusal(vote(app_url, room.code, "phone-99999999999999", "act"), 403)
    store.lock(room.code)
    assert "locked" in refusal(vote(app_url, room.code, "phone-00000000000000", "think"), 409)
    assert store.get(room.code).current.counts["act"] == 3 and store.get(room.code).current.counts["think"] == 0
    store.end(room.code)
    assert "ended" in refusal(httpx.get(f"{app_url}/poll/{room.code}", timeout=10), 410)


def test_an_idle_room_expires(app_url, store):
    room = store.create("teacher", "Q?", MODES)
    store.clock.now += 7201
    assert "expired after 2 h" in refusal(httpx.get(f"{app_url}/poll/{room.code}", timeout=10), 410)


def test_a_flood_from_one_phone_is_refused_and_counted_once(app_url, store):
    room = store.create("teacher", "Q?", MODES)
    statuses = [vote(app_url, room.code, "phone-flood-0000001", ["act", "think"][i % 2]).status_code
                for i in range(12)]
    assert statuses[:6] == [200] * 6 and set(statuses[6:]) == {429}
    tally = store.get(room.code).current.public()
    assert tally["total"] == 1 and sum(tally["tally"].values()) == 1


def test_guessing_codes_is_limited_per_address(app_url):
    saved = poll_rooms._store
    poll_rooms._store = RoomStore(RoomLimits(guesses=5))
    try:
        room = poll_rooms._store.create("teacher", "Q?", MODES)
        statuses = [httpx.get(f"{app_url}/poll/ZZZZZ{c}", timeout=10).status_code for c in "23456789"]
        assert statuses == [404] * 5 + [429] * 3
        assert "Too many wrong codes" in refusal(httpx.get(f"{app_url}/poll/{room.code}", timeout=10), 429)
    finally:
        poll_rooms._store = saved


def test_a_head_request_gets_headers_only(app_url, store):
    room = store.create("teacher", "Q?", MODES)
    for path in (f"/poll/{room.code}", f"/?room={room.code}"):
        head = httpx.head(f"{app_url}{path}", timeout=10)
        assert head.status_code == 200 and head.content == b""


def test_a_phone_from_before_a_restart_is_told_so_without_a_lookup(app_url):
    saved = poll_rooms._store
    poll_rooms._store = RoomStore(RoomLimits(guesses=2))
    try:
        room = poll_rooms._store.create("teacher", "Q?", MODES)
        for _ in range(5):  # a class's phones after a restart: one line each, no wrong code counted
            line = refusal(httpx.get(f"{app_url}/poll/{room.code}?boot=0ldb00t", timeout=10), 410)
            assert "restarted" in line
        stale = httpx.post(f"{app_url}/poll/{room.code}/vote?boot=0ldb00t",
                           json={"voter": "phone-one-000000001", "choice": "act"}, timeout=10)
        assert "restarted" in refusal(stale, 410) and poll_rooms._store.get(room.code).current.votes == {}
        assert httpx.get(f"{app_url}/poll/{room.code}?boot={BOOT}", timeout=10).status_code == 200
    finally:
        poll_rooms._store = saved


@pytest.fixture
def hall():
    """A store with the app's per-address bounds (60 voters a room, 60 new ones a minute) and room for 300."""
    saved = poll_rooms._store
    poll_rooms._store = RoomStore(RoomLimits(phones=300), clock=Clock())
    try:
        yield poll_rooms._store
    finally:
        poll_rooms._store = saved


def test_made_up_voter_ids_count_nothing(app_url, hall):
    """500 votes from one address, each with a voter id the app did not issue (random, or shaped like a real one
    with a seal of its own): every one refused with one line, and the tally stays at zero."""
    import secrets

    room = hall.create("teacher", "Q?", MODES)
    made_up = [secrets.token_hex(18) for _ in range(250)] + \
        [f"{secrets.token_hex(12)}.{secrets.token_hex(16)}" for _ in range(250)]
    with httpx.Client(timeout=10) as client:
        answers = [client.post(f"{app_url}/poll/{room.code}/vote", json={"voter": v, "choice": "act"})
                   for v in made_up]
    assert {a.status_code for a in answers} == {403}
    assert {a.json()["error"] for a in answers} <= {"This phone has not joined this poll: reload the page.",
                                                    "This phone's vote token is not this poll's: reload the page."}
    assert hall.get(room.code).current.public()["total"] == 0


def test_a_flood_of_joins_from_one_address_votes_at_most_its_bound(app_url, hall):
    """500 joins from one address, as a script sends them: half without a cookie, half each with a fresh browser
    identity fetched from the app (the cookie's layer gives a script nothing: the address's bound holds)."""
    room = hall.create("teacher", "Q?", MODES)

    def join(client: httpx.Client, i: int) -> httpx.Response:
        client.cookies.clear()
        if i % 2:
            client.get(f"{app_url}/?room={room.code}")  # a new identity, as the phone page hands it out
        return client.post(f"{app_url}/poll/{room.code}/join")

    with httpx.Client(timeout=10) as client:
        joins = [join(client, i) for i in range(500)]
        voters = [j.json()["voter"] for j in joins if j.status_code == 200]
        refused = [j for j in joins if j.status_code != 200]
        for voter_id in voters:
            client.post(f"{app_url}/poll/{room.code}/vote", json={"voter": voter_id, "choice": "act"})
    assert len(voters) == hall.voters_per_address == 60
    assert {j.status_code for j in refused} == {403}
    assert all("already has 60 phones in this poll" in j.json()["error"] for j in refused)
    assert hall.get(room.code).current.public()["total"] == 60


def test_a_class_of_40_phones_behind_one_address_all_vote(app_url, hall):
    """Each phone joins and votes at the same moment as the others, as a class does when the teacher says "vote"."""
    from concurrent.futures import ThreadPoolExecutor

    room = hall.create("teacher", "Q?", MODES)
    choices = ["think", "act", "react", "none"]

    def phone(i: int) -> int:
        with httpx.Client(timeout=30) as client:
            joined = client.post(f"{app_url}/poll/{room.code}/join")
            assert joined.status_code == 200, joined.text
            return client.post(f"{app_url}/poll/{room.code}/vote",
                               json={"voter": joined.json()["voter"], "choice": choices[i % 4]}).status_code

    with ThreadPoolExecutor(40) as pool:
        statuses = list(pool.map(phone, range(40)))
    assert statuses == [200] * 40
    tally = hall.get(room.code).current.public()
    assert tally["total"] == 40 and tally["tally"] == {"think": 10, "act": 10, "react": 10, "none": 10}


def test_a_phone_that_opens_the_poll_twice_still_votes_once(app_url, hall):
    """The phone page gives the phone's browser the app's signed cookie; a second tab (or a cleared page) joins
    again and gets the same voter id, so the phone's votes stay one vote and one of its network's phones. A forged
    cookie is no browser: each of its joins is a new phone of its network."""
    room = hall.create("teacher", "Q?", MODES)
    with httpx.Client(timeout=10) as phone:
        page = phone.get(f"{app_url}/?room={room.code}")
        assert page.status_code == 200 and "tar_browser" in phone.cookies
        tabs = [phone.post(f"{app_url}/poll/{room.code}/join").json()["voter"] for _ in range(3)]
        assert len(set(tabs)) == 1
        for choice in ("act", "think"):
            assert phone.post(f"{app_url}/poll/{room.code}/vote", json={"voter": tabs[-1], "choice": choice}) \
                .status_code == 200
    forged = {"cookie": "tar_browser=" + "a" * 32 + "." + "0" * 32}
    with httpx.Client(timeout=10, headers=forged) as script:
        ids = {script.post(f"{app_url}/poll/{room.code}/join").json()["voter"] for _ in range(3)}
    assert len(ids) == 3
    assert hall.get(room.code).current.public()["tally"]["think"] == 1
    assert hall.get(room.code).current.public()["total"] == 1 and room.joined == {"127.0.0.1": 4}
