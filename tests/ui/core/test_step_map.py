"""The step-aligned map as the page shows it (``ui/core/step_map.py``): words, marks, hover text, and nothing from a
model or a tool that could run or fetch."""

from __future__ import annotations

import re
import time

from agents.alignment import step_map
from agents.events import Action, FinalAnswer, Forked, Observation, Thought, Usage
from agents.followup import Previous
from agents.trace import Trace
from ui.core.frame import MAP_EVERY_S, PanelsView
from ui.core.step_map import EMPTY, map_html, map_markdown

QUESTION = "What is 17 * 23 + 5, in 2024?"


def trace(mode: str, *steps, answer: str | None, question: str = QUESTION) -> Trace:
    t = Trace(mode, question)
    for n, step in enumerate(steps):
        for event in step if isinstance(step, list) else [Usage(50, 10), Action(step[0], step[1]),
                                                          Observation(step[0], step[2])]:
            t.add(event, float(n + 1))
    if answer is not None:
        t.add(FinalAnswer(answer), float(len(steps) + 1))
    return t


def three() -> dict[str, Trace]:
    return {"think": trace("think", [Usage(40, 30), Thought("17 * 23 is about 400. So about 405.")],
                           answer="About 405, says Pythagoras"),
            "act": trace("act", ("calculate", "17 * 23 + 5", "396"), answer="396"),
            "react": trace("react", ("calculate", "17 * 23", "391"), ("calculate", "391 + 5", "396.0"),
                           answer="396 in 2024")}


def test_the_map_names_where_the_acting_modes_part_and_marks_each_claim():
    html = map_html(step_map(three()), three())
    assert "<strong>Row 1:</strong> Here Act-only computed (17 * 23 + 5), ReAct computed (17 * 23)." in html
    assert html.count('<tr class="sm-row') == 3 and html.count('class="sm-row sm-diverge"') == 1
    assert re.findall(r'class="claim (\w+)" tabindex="0"', html) == ["unbacked", "unbacked", "backed", "backed",
                                                                      "given"]
    # every mark has a symbol and a word besides its colour
    assert '396<span class="sm-sym" aria-hidden="true">✓</span><span class="sm-sr"> (backed)</span>' in html
    assert '2024<span class="sm-sym" aria-hidden="true">◇</span><span class="sm-sr"> (given)</span>' in html
    assert "Pythagoras" in html and "(unbacked)" in html
    assert ("not found in the question or any observation: reasoning, a calculation, or a guess") in html
    assert "Σ 60 tokens · 1 tool call · 1.0 s" in html and "Σ 120 tokens · 2 tool calls · 2.0 s" in html


def test_hovering_a_backed_claim_shows_its_observation_and_outlines_its_cell():
    html = map_html(step_map(three()), three())
    claim = re.search(r'<span class="claim backed" tabindex="0" id="(sm-c-react-\d+-0)" '
                      r'aria-describedby="(\1-why)">', html)
    tip = re.search(rf'id="{claim.group(2)}">([^<]*)</span>', html).group(1)
    assert tip == "Backed by row 2, ReAct: calculate(391 + 5) → “396.0”"
    assert f"#{claim.group(1)}:hover,#{claim.group(1)}:focus) #sm-2-react{{outline" in html
    assert 'id="sm-2-react"' in html  # the cell it outlines


def test_model_and_tool_text_is_shown_never_run():
    evil = '<img src="http://x/t.png" onerror="alert(1)">'
    traces = {"act": trace("act", ("calculate", evil, f"<script>alert(1)</script>{evil}"), answer=f'"{evil}" 396'),
              "react": trace("react", ("calculate", "1", "1"), answer="<b>1</b>")}
    html = map_html(step_map(traces), traces)
    assert "<img" not in html and "<script" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html and "&lt;img src=&quot;http://x/t.png&quot;" in html


def test_a_running_mode_says_so_and_shows_no_answer_yet():
    traces = three()
    traces["react"] = trace("react", ("calculate", "17 * 23", "391"), answer=None)
    html = map_html(step_map(traces, ended=["think", "act"]), traces, running=["react"])
    assert "<th scope=\"col\">ReAct ●</th>" in html and 'class="sm-empty" data-label="ReAct">…</td>' in html
    assert EMPTY not in html and "sm-divergence" in html  # Act-only and ReAct already differ at row 1


def test_a_map_before_any_step_says_it_will_fill():
    traces = {m: Trace(m, QUESTION) for m in ("think", "act", "react")}
    html = map_html(step_map(traces, ended=[]), traces, running=list(traces))
    assert EMPTY in html and "sm-row" not in html


def test_the_same_steps_are_said_so():
    traces = {"act": trace("act", ("calculate", "1+1", "2"), answer="2"),
              "react": trace("react", ("calculate", "1 + 1", "2"), answer="2")}
    assert "The acting modes took the same steps." in map_html(step_map(traces), traces)


def test_a_fork_column_branches_from_its_row():
    react = trace("react", ("calculate", "17 * 23", "391"), ("calculate", "391 + 5", "396"), answer="396")
    fork = trace("react@2", ("calculate", "17 * 23", "391"),
                 [Usage(50, 10), Action("calculate", "391 + 5"), Observation("calculate", "400"),
                  Forked(1, "396", "400")], answer="400")
    traces = {"react": react, "react@2": fork}
    html = map_html(step_map(traces), traces)
    assert "ReAct (fork @2)" in html and '<td class="sm-same" data-label="ReAct (fork @2)">┆ as ReAct</td>' in html
    assert "✎ edited by the teacher:</span> <span class=\"sm-line\"" in html and "→ 400" in html


def test_a_follow_up_shows_each_earlier_turn_as_a_band():
    previous = Previous(turns=({"question": "What is 17 * 23 + 5?", "answers": {"act": "396", "react": "396"}},),
                        history={})
    traces = {"act": trace("act", ("calculate", "396 - 6", "390"), answer="390", question="And minus 6?"),
              "react": trace("react", ("calculate", "396-6", "390"), answer="390", question="And minus 6?")}
    html = map_html(step_map(traces, previous=previous), traces)
    assert '<tbody class="sm-turn">' in html and "Turn 1 · What is 17 * 23 + 5?" in html
    assert "Turn 2 · And minus 6?" in html and html.index("Turn 1") < html.index("Turn 2")


def test_every_cell_names_its_mode_for_the_phone_list():
    html = map_html(step_map(three()), three())
    cells = re.findall(r"<td[^>]*>", html)
    assert cells and all('data-label="' in c for c in cells)


def test_the_markdown_report_has_the_map():
    traces = three()
    text = map_markdown(step_map(traces), {"react": [("396", "backed"), ("2024", "given")]})
    assert text.startswith("⋔ Row 1: Here Act-only computed \\(17 \\* 23 \\+ 5\\)")
    assert "| 1 ⋔ |" in text and "| Claims | — | — | 396 ✓ · 2024 ◇ |" in text


def test_the_panels_view_remakes_the_map_only_when_a_move_changes_and_not_too_often():
    view = PanelsView(QUESTION, "All", ("act", "react"))
    for event in [Usage(50, 10), Action("calculate", "17 * 23")]:
        view.add("react", event)
    first = view.frame("running").step_map
    assert view.frame("running").step_map is first  # no new move: the same string, not made again
    view.add("react", Observation("calculate", "391"))
    assert view.frame("running").step_map is first  # a step's burst: made once it is over
    time.sleep(MAP_EVERY_S)
    assert "→ 391" in view.frame("running").step_map
    view.add("react", Action("calculate", "391 + 5"))
    view.add("react", Observation("calculate", "396"))
    view.add("react", FinalAnswer("396"))
    view.add("act", FinalAnswer("I don't know"))
    view.finish()
    last = view.frame("done", final=True)  # the last frame has it all, at once
    assert "→ 396" in last.step_map and "claims: 1 backed" in last.metrics[2]
