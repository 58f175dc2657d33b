"""A lesson that holds together, in headless Chromium (issue 45): the page walked through pairs of its actions — Run,
Step, Fork (new panel and in place), a follow-up, Replay, Share and opening a share, a benchmark item opened in
Compare, a poll round — over the real app and the stub model server. After each step every panel shows this turn's
question and an answer to it, a fork's panel its edited observation, the table one row per mode (and per earlier
turn), the Expected answer box this turn's own value, and no word written for API callers is on the page.

Every wait is for a state of the page (a turn's header in a panel, the status line, a table row), never for a time.
"""

from __future__ import annotations

import re
from contextlib import ExitStack
from dataclasses import dataclass

import httpx
import pytest

from agents.llm.toy_model import estimate

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]  # a lesson is many runs long

RUN = "What is 17 * 23 + 5?"  # the stub's toy: Act-only and ReAct 396 (the calculator), Think-only an estimate
API_WORDS = re.compile(r"\bJSON\b|\bMCP\b|\b[Pp]revious\b|\b[Ee]xports?\b")  # a file's name (run-….json) is no word
EXPECTED_BOX = "#expected textarea, #expected input"


@pytest.fixture(scope="module")
def url(kit):
    with kit.app_on_stub(latency=0.02, token_delay=0.001) as local_url:
        yield local_url


@dataclass(frozen=True)
class Turn:
    """What the page must show for the turn on screen."""

    number: int
    question: str
    answers: dict[str, str]  # panel id → what its answer to this turn holds ("800", or Think's "400 * 2")
    expected: str = ""
    edited: tuple[str, ...] = ()  # panels whose text shows a teacher's edit ("✎ … edited by the teacher")
    rows: int = 0  # this turn's table rows, when not one per panel (a fork in place: the original keeps its row)


def answers(value: int, expression: str, *, fork: str | None = None) -> dict[str, str]:
    """Each base panel's answer to an arithmetic question: the calculator's value, Think-only's estimate of it (the
    toy model's own, ``agents/llm/toy_model.estimate``)."""
    out = {"think": f"about {estimate(expression)}", "act": str(value), "react": str(value)}
    if fork is not None:
        out["beside"] = fork
    return out


def panel_text(page, panel: str) -> str:
    return page.inner_text(f"#panel-{panel}")


def this_turn(page, panel: str, turn: Turn) -> str:
    """The panel's text from this turn's header on (a follow-up's thread shows the earlier turns above)."""
    text = panel_text(page, panel)
    return text.split(f"Turn {turn.number} ·")[-1] if turn.number > 1 else text


def wait_turn(page, turn: Turn, status: str = "Done", timeout: float = 60_000) -> None:
    """Until every panel of ``turn`` shows its header and a final answer, and the status line says ``status``."""
    panels = list(turn.answers)
    page.wait_for_function(
        """([panels, n, status]) => {
            const ok = panels.every(p => {
                const text = document.querySelector(`#panel-${p}`)?.innerText || '';
                const mine = n > 1 ? text.split(`Turn ${n} ·`) : [text, text];
                return mine.length > 1 && /Final answer/.test(mine[mine.length - 1]);
            });
            return ok && (document.querySelector('#run-status')?.innerText || '').includes(status);
        }""", arg=[panels, turn.number, status], timeout=timeout)


def table_rows(page) -> list[list[str]]:
    """Each table of the comparison (earlier turns first), as the text of its body rows' first cells."""
    return page.evaluate("""() => [...document.querySelectorAll('#comparison table')].map(t =>
        [...t.querySelectorAll('tbody tr')].map(r => r.querySelector('td')?.innerText.trim() || ''))""")


def check(page, turn: Turn) -> None:
    """What every step must leave on the page (the module docstring)."""
    for panel, answer in turn.answers.items():
        mine = this_turn(page, panel, turn)
        if turn.number > 1:
            assert turn.question in panel_text(page, panel).split(f"Turn {turn.number} ·")[-1][:200], panel
        assert "Final answer" in mine and answer in mine.split("Final answer")[-1], (panel, mine[-300:])
    for panel in turn.edited:
        assert "edited by the teacher" in panel_text(page, panel), panel
    tables = table_rows(page)
    assert len(tables) == (2 if turn.number > 1 else 1), tables
    if turn.number > 1:
        assert tables[0] == [str(n) for n in range(1, turn.number)], tables  # a row per earlier turn
    assert len(tables[-1]) == (turn.rows or len(turn.answers)), tables  # a row per panel (and fork) of this turn
    assert page.input_value(EXPECTED_BOX) == turn.expected
    shown = page.evaluate("() => [...document.querySelectorAll('#compare-tab, #header')].map(e => e.innerText)"
                          ".join('\\n')")  # the tab and the header; Gradio's footer links to its API page
    words = API_WORDS.findall(shown)
    assert not words, f"words for API callers on the page: {words}"


def ask(page, question: str, expected: str | None = None, *, button: str = "#followup-btn") -> None:
    """Type a question (and, when given, its own expected answer) and press ``button``."""
    page.fill("#question textarea", question)
    if expected is not None:
        page.fill(EXPECTED_BOX, expected)
    page.locator(button).wait_for(state="visible", timeout=30_000)
    page.click(button)


def fork(page, panel: str, original: str, edited: str, where: str = "In a new panel") -> None:
    """Fork ``panel`` at its first observation, edited from ``original`` to ``edited``."""
    accordion = page.locator("#fork-mode")
    if not accordion.is_visible():
        page.click("#fork > button")
    page.wait_for_function("v => document.querySelector('#fork-text textarea')?.value === v", arg=original,
                           timeout=30_000)
    page.click("#fork-mode input")
    page.get_by_role("option", name=panel, exact=True).click()
    page.wait_for_function("v => document.querySelector('#fork-text textarea')?.value === v", arg=original,
                           timeout=30_000)
    for _ in range(5):  # the box may be filled once more as the run's end settles: type until the edit holds
        page.fill("#fork-text textarea", edited)
        page.wait_for_function("v => document.querySelector('#fork-text textarea')?.value === v", arg=edited)
        if page.input_value("#fork-text textarea") == edited:
            break
    page.get_by_label(where).check()
    page.click("#fork-btn")


def test_fork_then_follow_up_then_fork_in_place_then_follow_up(browser, url, kit):
    """fork → follow-up (new panel), follow-up → fork (in place), fork in place → follow-up."""
    with kit.open_page(browser, url) as page:
        ask(page, RUN, "396", button="#run-btn")
        first = Turn(1, RUN, answers(396, "17 * 23 + 5"), "396")
        wait_turn(page, first)
        check(page, first)

        fork(page, "ReAct", "396", "400")
        kit.wait_text(page, "#run-status", "fork: ReAct (fork @1)")
        forked = Turn(1, RUN, {**answers(396, "17 * 23 + 5"), "beside": "400"}, "396", edited=("beside",))
        wait_turn(page, forked, "fork:")
        check(page, forked)
        assert "edited by the teacher" not in panel_text(page, "react")

        ask(page, "What is 400 * 2?", "800")
        second = Turn(2, "What is 400 * 2?", answers(800, "400 * 2", fork="800"), "800", edited=("beside",))
        wait_turn(page, second)
        check(page, second)  # the fork's panel went on from the fork, the edit in its thread
        assert "400" in panel_text(page, "beside").split("Turn 2 ·")[0]  # its turn 1 answered with the edit
        assert "396" in panel_text(page, "react").split("Turn 2 ·")[0]

        fork(page, "ReAct", "800", "801", where="In place")
        kit.wait_text(page, "#run-status", "fork: ReAct (fork @1)")
        in_place = Turn(2, "What is 400 * 2?", {**answers(800, "400 * 2"), "react": "801"}, "800", edited=("react",),
                        rows=4)  # the original ReAct keeps its row beside its fork in place
        wait_turn(page, in_place, "fork:")
        check(page, in_place)
        assert not page.locator("#col-beside").is_visible()  # one fork on screen at a time

        ask(page, "What is 3 * 3?")  # no expected answer typed: the box starts empty
        third = Turn(3, "What is 3 * 3?", answers(9, "3 * 3"), "", edited=("react",))
        wait_turn(page, third)
        check(page, third)
        assert "801" in panel_text(page, "react").split("Turn 3 ·")[0]  # ReAct went on from its fork in place
        kit.artifacts.mkdir(exist_ok=True)
        page.screenshot(path=str(kit.artifacts / "browser-lesson-fork-followup-1366x768.png"), full_page=True)


def test_a_follow_up_asked_from_an_example_is_marked_against_the_examples_answer(browser, url, kit):
    """An example clicked after a run gives the follow-up its own expected answer (the box keeps it, the table
    marks against it); clicking nothing for the next one leaves it empty."""
    with kit.open_page(browser, url) as page:
        page.get_by_role("tab", name="Arithmetic traps").click()
        page.get_by_role("button", name="17 × 23 + 5").click()
        page.click("#run-btn")
        first = Turn(1, RUN, answers(396, "17 * 23 + 5"), "396")
        wait_turn(page, first)
        check(page, first)

        page.get_by_role("button", name="Seconds in 13 weeks").click()
        weeks = "How many seconds are there in 13 weeks?"
        assert page.input_value("#question textarea") == weeks and page.input_value(EXPECTED_BOX) == "7862400"
        page.locator("#followup-btn").click()
        second = Turn(2, weeks, {"act": "7862400", "react": "7862400"}, "7862400", rows=3)
        wait_turn(page, second)
        check(page, second)
        table = page.locator("#comparison table").last
        marks = {r.locator("td").nth(0).inner_text().strip(): r.locator("td").nth(2).inner_text().strip()
                 for r in table.locator("tbody tr").all()}
        assert marks == {"Think-only": "✗", "Act-only": "✓", "ReAct": "✓"}
        assert "Expected answer: 7862400" in page.inner_text("#comparison")

        ask(page, "What is 3 * 3?")  # typed, no example: its box starts empty, though 7862400 is still in it
        third = Turn(3, "What is 3 * 3?", answers(9, "3 * 3"), "")
        wait_turn(page, third)
        check(page, third)


def test_step_then_fork_then_follow_up(browser, url, kit):
    with kit.open_page(browser, url) as page:
        ask(page, RUN, "396", button="#step-btn")
        kit.wait_text(page, "#run-status", "Paused after step 1")
        fork(page, "ReAct", "396", "400")  # the paused run stops, the fork goes on from its step
        kit.wait_text(page, "#run-status", "fork: ReAct (fork @1)", timeout=60_000)
        page.locator("#followup-btn").wait_for(state="visible", timeout=30_000)
        assert "edited by the teacher" in panel_text(page, "beside") and page.input_value(EXPECTED_BOX) == "396"
        ask(page, "What is 400 * 2?", "800")
        second = Turn(2, "What is 400 * 2?", answers(800, "400 * 2", fork="800"), "800", edited=("beside",))
        wait_turn(page, second)
        check(page, second)


def download(url: str, page) -> bytes:
    href = page.locator("#exports a[href*='.json']").first.get_attribute("href")
    return httpx.get(href if href.startswith("http") else url.rstrip("/") + href, timeout=30).content


def test_replay_then_follow_up_then_share_then_follow_up(browser, url, kit, tmp_path):
    with kit.open_page(browser, url) as page:
        ask(page, RUN, "396", button="#run-btn")
        wait_turn(page, Turn(1, RUN, answers(396, "17 * 23 + 5"), "396"))
        saved = tmp_path / "run.json"
        saved.write_bytes(download(url, page))
    with kit.open_page(browser, url) as page:
        page.set_input_files("#replay-file input[type=file]", str(saved))
        page.get_by_label("instant").check()
        page.click("#replay-btn")
        replayed = Turn(1, RUN, answers(396, "17 * 23 + 5"), "396")
        wait_turn(page, replayed, "Replay finished")
        page.locator("#followup-btn").wait_for(state="visible", timeout=30_000)
        check(page, replayed)  # the box holds the recording's expected answer again

        ask(page, "What is 396 * 2?", "792")
        second = Turn(2, "What is 396 * 2?", answers(792, "396 * 2"), "792")
        wait_turn(page, second)
        check(page, second)
        marks = {r.locator("td").nth(0).inner_text().strip(): r.locator("td").nth(2).inner_text().strip()
                 for r in page.locator("#comparison table").last.locator("tbody tr").all()}
        assert marks == {"Think-only": "✗", "Act-only": "✓", "ReAct": "✓"}  # each turn against its own answer
        page.click("#share-btn")
        kit.wait_text(page, "#share-link", "?run=", timeout=30_000)
        link = re.search(r"http://\S+\?run=[A-Za-z0-9_-]+", page.inner_text("#share-link")).group(0)
    with kit.open_page(browser, link) as page:
        kit.wait_text(page, "#run-status", "Shared run", timeout=30_000)
        page.locator("#followup-btn").wait_for(state="visible", timeout=30_000)
        check(page, second)
        ask(page, "What is 10 * 10?")
        third = Turn(3, "What is 10 * 10?", answers(100, "10 * 10"))
        wait_turn(page, third)
        check(page, third)


def test_open_in_compare_then_follow_up(browser, url, kit):
    with kit.open_page(browser, url) as page:
        kit.benchmark_all_items(page, 1, timeout=120_000)
        page.click("#bench-open")
        kit.wait_text(page, "#run-status", "Benchmark item", timeout=30_000)
        page.locator("#followup-btn").wait_for(state="visible", timeout=30_000)
        gold = page.input_value(EXPECTED_BOX)
        item = Turn(1, page.input_value("#question textarea"), {"think": "", "act": "", "react": ""}, gold)
        check(page, item)  # the item's panels, a row per mode, its own expected answer in the box
        ask(page, "What is 6 * 7?", "42")
        second = Turn(2, "What is 6 * 7?", answers(42, "6 * 7"), "42")
        wait_turn(page, second)
        check(page, second)
        assert gold in page.inner_text("#comparison table") or not gold  # the item's own expected answer, turn 1


def vote(page, title: str) -> None:
    page.get_by_role("button", name=title, exact=True).click()
    page.wait_for_function("(t) => document.querySelector('#mine').innerText.includes(t)", arg=title)


def test_a_poll_round_then_a_follow_up_then_vote_again(browser, url, kit):
    with kit.open_page(browser, url) as teacher, ExitStack() as phones:
        teacher.fill("#question textarea", RUN)
        teacher.fill(EXPECTED_BOX, "396")
        teacher.click("#poll > button")
        teacher.click("#poll-start")
        teacher.wait_for_selector("#poll-code")
        link = teacher.get_attribute("#poll-link", "href")
        devices = []
        for title in ("Think-only", "ReAct", "Act-only"):
            context, device = kit.open_phone(browser, link)
            phones.callback(context.close)
            vote(device, title)
            devices.append(device)
        teacher.wait_for_function("() => (document.querySelector('#poll-board')?.innerText || '')"
                                  ".includes('3 voted')", timeout=15_000)
        assert "%" not in teacher.inner_text("#poll-board")
        teacher.click("#run-btn")
        first = Turn(1, RUN, answers(396, "17 * 23 + 5"), "396")
        wait_turn(teacher, first)
        teacher.wait_for_function("() => (document.querySelector('#poll-board')?.innerText || '')"
                                  ".includes('✓ right')", timeout=30_000)
        check(teacher, first)

        ask(teacher, "What is 396 * 2?", "792")
        second = Turn(2, "What is 396 * 2?", answers(792, "396 * 2"), "792")
        wait_turn(teacher, second)
        check(teacher, second)

        teacher.click("#poll-again")  # a new round, on the question on screen now
        for device in devices:
            device.wait_for_function("(q) => document.querySelector('#question').innerText.includes(q)",
                                     arg="396 * 2", timeout=15_000)
        for device, title in zip(devices, ("ReAct", "ReAct", "Act-only"), strict=True):
            vote(device, title)
        teacher.wait_for_function("() => (document.querySelector('#poll-board')?.innerText || '')"
                                  ".includes('Round 2 · 3 voted')", timeout=15_000)
        board = teacher.inner_text("#poll-board")
        assert "Round 1 · 3 voted" in board and "%" in board.split("Round 2")[0]  # round 1's split, locked
        assert "%" not in board.split("Round 2")[1].split("Voting")[0]  # round 2's split hidden while open
        check(teacher, second)
