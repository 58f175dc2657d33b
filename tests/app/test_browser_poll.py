"""The class poll in headless Chromium: a teacher at 1366×768 and three phones at 390×844 join by the link, vote,
see the tally move, the lock and the reveal; a second round shows beside the first; the share link reaches the
phones. Screenshots of both screens go to artifacts/ (docs/app.md shows them)."""

from __future__ import annotations

import re
import time
from contextlib import ExitStack

import pytest

pytestmark = pytest.mark.browser

QUESTION, EXPECTED = "What is 17 * 23 + 5?", "396"  # the stub: Think-only ✗, Act-only ✓, ReAct ✓


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.05, token_delay=0.005) as local_url:
        yield local_url


def board_has(teacher, text: str, timeout: float = 15_000) -> None:
    teacher.wait_for_function("(t) => (document.querySelector('#poll-board')?.innerText || '').includes(t)",
                              arg=text, timeout=timeout)


def tap(page, title: str) -> None:
    page.get_by_role("button", name=title, exact=True).click()
    page.wait_for_function("(t) => document.querySelector('#mine').innerText.includes(t)", arg=title)


@pytest.mark.timeout(300)  # two rounds, two runs, three phones and four pages
def test_a_class_predicts_votes_and_sees_the_reveal(browser, url, kit):
    kit.artifacts.mkdir(exist_ok=True)
    with kit.open_page(browser, url) as teacher, ExitStack() as phones:
        teacher.fill("#question textarea", QUESTION)
        teacher.fill("#expected textarea, #expected input", EXPECTED)
        teacher.click("#poll button:has-text('Class poll')")
        teacher.click("#poll-start")
        teacher.wait_for_selector("#poll-code")
        code = teacher.inner_text("#poll-code").strip()
        link = teacher.get_attribute("#poll-link", "href")
        assert re.fullmatch(r"[2-9A-HJKMNP-Z]{6}", code) and link.endswith(f"/?room={code}")
        qr = teacher.locator("#poll-join svg").bounding_box()
        assert qr["height"] >= 768 / 4 and qr["width"] >= 4 * 29  # a quarter of the viewport, >= 4 px a module
        shown = teacher.locator("#poll-code").bounding_box()
        for box in (qr, shown):  # after Start, the QR code and the code are on the first screen, near Run
            assert box["y"] >= 0 and box["y"] + box["height"] <= 768 and box["x"] + box["width"] <= 1366, box
        assert teacher.locator("#poll").bounding_box()["y"] < teacher.locator("#panels").bounding_box()["y"]  # near Run
        assert teacher.is_visible("#poll-loopback")  # a link on 127.0.0.1: phones cannot open it, and what to set
        assert "APP_PUBLIC_URL" in teacher.inner_text("#poll-loopback")

        devices = []
        for _ in range(3):
            context, page = kit.open_phone(browser, link)
            phones.callback(context.close)
            devices.append(page)
        one, two, three = devices
        assert one.inner_text("#question") == QUESTION
        assert [b.inner_text() for b in one.locator("#choices .choice").all()] == \
            ["Think-only", "Act-only", "ReAct", "None of them"]
        tap(one, "Think-only")
        tap(two, "ReAct")
        tap(three, "Act-only")
        board_has(teacher, "3 voted")
        one.wait_for_function("() => document.querySelector('#mine').innerText.includes('3 voted so far')",
                              timeout=5_000)  # the phones see how many voted, not the split
        assert one.is_hidden("#tally")
        tap(three, "ReAct")  # a changed vote is still one vote
        board = teacher.inner_text("#poll-board")  # nor does the projector show the split while voting is open
        assert "3 voted" in board and "%" not in board and teacher.locator("#poll-board .poll-n").count() == 0, board
        teacher.check("#poll-split input")  # the teacher's switch shows it
        board_has(teacher, "67 % predicted ReAct")
        teacher.uncheck("#poll-split input")
        teacher.wait_for_function("() => !(document.querySelector('#poll-board')?.innerText || '').includes('%')")
        three.screenshot(path=str(kit.artifacts / "poll-phone-vote-390x844.png"))
        teacher.locator("#poll").scroll_into_view_if_needed()
        teacher.screenshot(path=str(kit.artifacts / "poll-teacher-open-1366x768.png"))

        teacher.click("#run-btn")  # Run locks the votes
        for page in devices:
            page.wait_for_function("() => document.querySelector('#choices .choice').disabled", timeout=15_000)
        late = one.evaluate("""async (code) => { const r = await fetch(`poll/${code}/vote`, {method: 'POST',
            headers: {'Content-Type': 'application/json'}, body: JSON.stringify({
            voter: sessionStorage.getItem(`poll-voter-${code}`), choice: 'act'})});
            return [r.status, (await r.json()).error]; }""", code)
        assert late[0] == 409 and "locked" in late[1]

        board_has(teacher, "33 % predicted Think-only — ✗ wrong", timeout=60_000)
        board_has(teacher, "67 % predicted ReAct — ✓ right")
        board_has(teacher, "0 % predicted None of them — ✗ wrong")
        for page, said in ((one, "wrong."), (two, "right!"), (three, "right!")):
            page.wait_for_function("(t) => document.querySelector('#reveal').innerText.includes(t)", arg=said,
                                   timeout=15_000)
        reveal = one.inner_text("#reveal")
        assert "Think-only:" in reveal and "✗ wrong" in reveal and "ReAct: 396" in reveal and "✓ right" in reveal

        teacher.click("#share-btn")  # the share link reaches the phones: "open the full run"
        one.wait_for_selector("#full:not([hidden])", timeout=15_000)
        shared = one.get_attribute("#link", "href")
        assert "?run=" in shared
        one.screenshot(path=str(kit.artifacts / "poll-phone-reveal-390x844.png"))
        with kit.open_page(browser, teacher.url.split("?")[0] + "?" + shared.split("?")[1]) as visitor:
            kit.wait_text(visitor, "#poll-record", "The class voted 1/0/2/0 (Think-only/Act-only/ReAct/none); "
                                                   "right: Act-only, ReAct.")  # the tallies travel with the run
            assert visitor.is_visible("#poll-record")

        teacher.click("#poll-again")  # a second round after discussion
        for page in devices:
            page.wait_for_function("() => !document.querySelector('#choices .choice').disabled", timeout=15_000)
        tap(one, "ReAct")
        tap(two, "ReAct")
        board_has(teacher, "Round 2 · 2 voted")
        rounds = teacher.locator("#poll-board .poll-round")
        assert rounds.count() == 2
        first, second = rounds.nth(0).bounding_box(), rounds.nth(1).bounding_box()
        assert abs(first["y"] - second["y"]) < 5 and second["x"] > first["x"]  # side by side
        assert "Round 1 · 3 voted" in teacher.inner_text("#poll-board")
        teacher.locator("#poll-board").scroll_into_view_if_needed()
        teacher.screenshot(path=str(kit.artifacts / "poll-teacher-rounds-1366x768.png"))
        teacher.check("#presentation input")  # on a projector the board reads from the back row, as the panels do
        smallest = """() => Math.min(...[...document.querySelectorAll('#poll-board *, #poll-join *')]
            .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
            .filter(e => e.tagName !== 'STYLE' && !e.closest('.poll-warn'))  // the teacher's own line may be smaller
            .map(e => parseFloat(getComputedStyle(e).fontSize)))"""
        # the switch's class lands after its event's round trip: wait for the board's smallest text to read 20 px
        teacher.wait_for_function(f"() => ({smallest})() >= 20", timeout=15_000)
        teacher.uncheck("#presentation input")

        teacher.click("#run-btn")  # the run again after the discussion: round 2 revealed, both rounds in its export
        board_has(teacher, "100 % predicted ReAct — ✓ right", timeout=60_000)
        two.wait_for_function("() => document.querySelector('#reveal').innerText.includes('right!')", timeout=15_000)
        teacher.click("#share-btn")
        teacher.wait_for_function("(old) => { const a = document.querySelector('#share-link a'); "
                                  "return a && !a.href.endsWith(old); }", arg=shared, timeout=15_000)
        again = teacher.get_attribute("#share-link a", "href")
        with kit.open_page(browser, again) as visitor:  # the share link of the run shows both rounds
            kit.wait_text(visitor, "#poll-record", "The class voted 1/0/2/0 (Think-only/Act-only/ReAct/none); "
                                                   "after discussion, round 2: 0/0/2/0; right: Act-only, ReAct.")

        teacher.click("#poll-end")
        one.wait_for_function("() => document.querySelector('#msg').innerText.includes('ended')", timeout=15_000)


def test_a_phone_reads_one_line_for_a_bad_code_and_for_a_restart(browser, url, monkeypatch):
    from ui.poll import room as poll_room
    from ui.poll import rooms as poll_rooms
    from ui.poll import routes as poll_routes

    base = url.rstrip("/")
    context, page = browser.new_context(viewport={"width": 390, "height": 844}), None
    try:
        page = context.new_page()
        page.goto(f"{base}/?room=ZZZZZZ")
        page.wait_for_function("() => document.querySelector('#msg').innerText.includes('No class poll has that code')")
        assert page.is_visible("#join") and not page.is_visible("#vote")
        page.goto(f"{base}/?room=hello")
        assert "not a room code" in page.inner_text("#msg") and page.is_visible("#join")

        room = poll_rooms.rooms().create("teacher", "Which is larger, 9.11 or 9.9?", [("react", "ReAct")])
        page.goto(f"{base}/?room={room.code}")
        page.wait_for_selector("#choices .choice")
        monkeypatch.setattr(poll_rooms, "_store", poll_rooms.RoomStore())  # the app restarted: no rooms, a new boot
        for module in (poll_room, poll_rooms, poll_routes):
            monkeypatch.setattr(module, "BOOT", "n3wb00t0")
        page.wait_for_function("() => document.querySelector('#msg').innerText.includes('The app restarted')",
                               timeout=10_000)
        assert not page.is_visible("#vote")
    finally:
        context.close()


def serious(page, source: str, context: str = "document") -> list[str]:
    """axe-core's serious and critical violations inside ``context`` (as tests/app/test_browser_a11y.py runs it)."""
    page.add_script_tag(content=source)
    return page.evaluate("""async (context) => {
        const result = await axe.run(context === 'document' ? document : context, {resultTypes: ['violations']});
        return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .flatMap(v => v.nodes.map(n => `${v.impact} ${v.id}: ${n.target.join(' ')}`));
    }""", context)


def test_the_phone_page_and_the_poll_box_pass_an_accessibility_audit(browser, url, kit, axe_source):
    with kit.open_page(browser, url) as teacher:
        teacher.fill("#question textarea", QUESTION)
        teacher.click("#poll button:has-text('Class poll')")
        teacher.click("#poll-start")
        teacher.wait_for_selector("#poll-code")
        link = teacher.get_attribute("#poll-link", "href")
        assert serious(teacher, axe_source, "#poll") == []
        context, page = kit.open_phone(browser, link)
        try:
            tap(page, "ReAct")
            assert serious(page, axe_source) == []
            teacher.click("#poll-lock")
            page.wait_for_selector("#tally:not([hidden])")
            assert serious(page, axe_source) == []
        finally:
            context.close()


def test_a_visitor_who_is_not_polling_makes_no_poll_call(browser, url, kit):
    """Run, Stop and the run's end reach the poll's handlers only on a page that holds a room."""
    with kit.open_page(browser, url) as page:
        page.evaluate("""() => { window.pollSignals = 0; document.querySelectorAll('[id^=poll-signal-]')
            .forEach(b => b.addEventListener('click', () => window.pollSignals++)); }""")
        assert page.evaluate("() => document.querySelectorAll('[id^=poll-signal-]').length") == 9
        page.fill("#question textarea", QUESTION)
        page.click("#run-btn")
        kit.wait_text(page, "#run-status", "Done", timeout=60_000)
        page.click("#stop-btn")
        page.click("#share-btn")
        page.wait_for_function("() => (document.querySelector('#share-link')?.innerText || '').includes('run=')")
        assert page.evaluate("() => window.pollSignals") == 0


def test_the_teachers_screen_says_a_restart_ended_the_poll(browser, url, kit, monkeypatch):
    from ui.poll import room as poll_room
    from ui.poll import rooms as poll_rooms

    with kit.open_page(browser, url) as teacher:
        teacher.fill("#question textarea", QUESTION)
        teacher.click("#poll button:has-text('Class poll')")
        teacher.click("#poll-start")
        teacher.wait_for_selector("#poll-code")
        monkeypatch.setattr(poll_rooms, "_store", poll_rooms.RoomStore())  # the app restarted: no rooms, a new boot
        for module in (poll_room, poll_rooms):
            monkeypatch.setattr(module, "BOOT", "n3wb00t0")
        board_has(teacher, "The app restarted: that class poll has ended. Start a new one.")


def until(page, state, timeout_s: float = 30.0) -> None:
    """Until the app's ``state()`` holds (the store of this in-process app), looking every tenth of a second."""
    deadline = time.monotonic() + timeout_s
    while not state():
        assert time.monotonic() < deadline, "the state never came"
        page.wait_for_timeout(100)


def start_poll(page, question: str = QUESTION) -> str:
    """Start a class poll on ``page``: its code."""
    page.fill("#question textarea", question)
    if not page.is_visible("#poll-start"):
        page.click("#poll button:has-text('Class poll')")
    page.click("#poll-start")
    page.wait_for_selector("#poll-code")
    return page.inner_text("#poll-code").strip()


def listed(page) -> list[str]:
    """The codes of this teacher's rooms the page lists (other pages', or closed pages' in their grace time)."""
    return page.evaluate("() => [...document.querySelectorAll('#poll-mine-list label')].map(l => l.innerText"
                         ".split(' ')[0].trim())")


@pytest.mark.timeout(300)
def test_closed_pages_leave_their_rooms_to_a_fourth_page_then_end_after_the_grace_time(browser, url, kit,
                                                                                       monkeypatch):
    """Three pages of one teacher start a poll each and close without End poll: a fourth page lists the three,
    ends one, and once the grace time has passed starts a poll of its own (the cap counts rooms still in use).
    The store's clock is the test's: the grace time passes when the test says, whatever the machine's load."""
    from ui.poll import rooms as poll_rooms

    skew = [0.0]
    limits = poll_rooms.RoomLimits(per_teacher=3, grace_s=60.0)
    store = poll_rooms.RoomStore(limits, clock=lambda: time.monotonic() + skew[0])
    monkeypatch.setattr(poll_rooms, "_store", store)
    monkeypatch.setenv("GRADIO_HEARTBEAT_INTERVAL", "0.5")  # a closed page is noticed within a second
    context = browser.new_context(viewport={"width": 1366, "height": 768})  # one browser: one teacher
    try:
        pages, codes = [], []
        for n in range(3):
            page = context.new_page()
            page.goto(url)
            page.wait_for_selector("#run-btn")
            codes.append(start_poll(page, f"Question {n + 1}?"))
            pages.append(page)
        for page in pages:  # closed without End poll
            page.close()
        fourth = context.new_page()
        fourth.goto(url)
        fourth.wait_for_selector("#run-btn")
        until(fourth, lambda: all(store.get(c).closed_at is not None for c in codes))  # each page's heartbeat ends
        fourth.click("#poll button:has-text('Class poll')")
        fourth.wait_for_function("(n) => document.querySelectorAll('#poll-mine-list label').length === n", arg=3)
        assert sorted(listed(fourth)) == sorted(codes) and "page closed" in fourth.inner_text("#poll-mine")
        fourth.fill("#question textarea", "A fourth question?")
        fourth.click("#poll-start")  # three rooms still count: refused in one line, on screen
        board_has(fourth, "open class polls")
        assert fourth.locator("#poll-board").bounding_box()["y"] < 768
        fourth.get_by_label(re.compile(codes[0])).check()
        fourth.click("#poll-end-mine")  # the list's End
        fourth.wait_for_function("(n) => document.querySelectorAll('#poll-mine-list label').length === n", arg=2)
        assert store.get(codes[0]) is None
        skew[0] += 60.0  # the grace time passes
        until(fourth, lambda: store.get(codes[1]) is None and store.get(codes[2]) is None)
        assert "page closed" in store.gone_why(codes[1])
        code = start_poll(fourth, "A fourth question?")
        assert code not in codes and store.get(code) is not None
    finally:
        context.close()


def test_two_teachers_behind_one_address_see_only_their_own_rooms(browser, url, kit):
    with kit.open_page(browser, url) as first, kit.open_page(browser, url) as second:  # two browsers, one address
        mine = start_poll(first, "Teacher one's question?")
        second.click("#poll button:has-text('Class poll')")
        second.wait_for_selector("#poll-start")
        assert not second.is_visible("#poll-mine")  # nothing of the other teacher's
        theirs = start_poll(second, "Teacher two's question?")
        again = first.context.new_page()  # another page of the first teacher lists their room, and only theirs
        try:
            again.goto(url)
            again.click("#poll button:has-text('Class poll')")
            again.wait_for_function("() => document.querySelectorAll('#poll-mine-list label').length === 1")
            assert listed(again) == [mine] and theirs != mine
            again.click("#poll-show-here")  # shown on this page now: its code and QR code
            again.wait_for_function("(c) => document.querySelector('#poll-code')?.innerText.includes(c)", arg=mine)
        finally:
            again.close()


@pytest.mark.timeout(180)
def test_a_background_tab_keeps_its_room_and_closing_it_ends_the_room(browser, url, kit, monkeypatch):
    """The teacher's poll page goes to the background and is frozen (what a browser does to a tab hidden long
    enough; throttling is milder): its room stays, however long past the grace time. Closed, the room ends."""
    from ui.poll import rooms as poll_rooms

    store = poll_rooms.RoomStore(poll_rooms.RoomLimits(grace_s=1.0))
    monkeypatch.setattr(poll_rooms, "_store", store)
    monkeypatch.setenv("GRADIO_HEARTBEAT_INTERVAL", "0.5")  # a closed page is noticed within a second
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    try:
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector("#run-btn")
        code = start_poll(page)
        front = context.new_page()  # the teacher's other tab, in front
        front.goto(url)
        front.wait_for_selector("#run-btn")
        frozen = context.new_cdp_session(page)
        frozen.send("Page.setWebLifecycleState", {"state": "frozen"})  # its timers and scripts stop
        front.wait_for_timeout(5_000)  # ten heartbeats, five grace times
        room = store.get(code)
        assert room is not None and room.closed_at is None
        frozen.send("Page.setWebLifecycleState", {"state": "active"})
        page.close()
        until(front, lambda: store.get(code) is None)  # closed: it ends after the grace time
        assert "page closed" in store.gone_why(code)
    finally:
        context.close()
