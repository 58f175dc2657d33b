"""The class poll's phone routes through the real app (its own ASGI stack, no Gradio event): the page at
``/?room=``, the room's JSON with a cheap ``304``, votes, and one line (status + JSON) for each refusal."""

from __future__ import annotations

import httpx
import pytest

from ui.poll import rooms as poll_rooms
from ui.poll.rooms import BOOT, RoomStore

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
    poll_rooms._store = RoomStore(clock=Clock(), phones=3, votes_per_voter=6, guesses=50)
    try:
        yield poll_rooms._store
    finally:
        poll_rooms._store = saved


def vote(url: str, code: str, voter: str, choice: str, **kw) -> httpx.Response:
    return httpx.post(f"{url}/poll/{code}/vote", json={"voter": voter, "choice": choice}, timeout=10, **kw)


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
    assert "token" in refusal(vote(app_url, room.code, "me", "act"), 400)
    bad_json = httpx.post(f"{app_url}/poll/{room.code}/vote", content=b"{nope", timeout=10)
    assert "JSON object" in refusal(bad_json, 400)
    for odd in (b"[" * 1000, b'{"voter": ["x"], "choice": {"a": 1}}', b'"text"', b"\xff\xfe", b"null"):
        assert refusal(httpx.post(f"{app_url}/poll/{room.code}/vote", content=odd, timeout=10), 400)
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
    poll_rooms._store = RoomStore(guesses=5)
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
    poll_rooms._store = RoomStore(guesses=2)
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
