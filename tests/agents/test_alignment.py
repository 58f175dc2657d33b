"""The step-aligned map over hand-made traces: which steps share a row, which get one of their own, and where the
acting modes first part ways (``agents/alignment.py``)."""

from __future__ import annotations

from agents.alignment import Divergence, step_map
from agents.events import (
    Action,
    Evaluation,
    FinalAnswer,
    Forked,
    Observation,
    Reflection,
    Retry,
    Thought,
    Trial,
    Usage,
)
from agents.followup import Previous
from agents.moves import moves_of, reasoning_steps
from agents.trace import Trace

QUESTION = "How tall is the Eiffel Tower in feet?"
SEARCH = ("duckduckgo_search", "Eiffel Tower height", "The Eiffel Tower is 330 m tall.")


def trace(mode: str, *steps, answer: str | None = "x", question: str = QUESTION) -> Trace:
    """A trace of ``steps`` (each ``(tool, input, output)``, an event, or a list of events), one second apart,
    each step after a model call of 100 tokens, ending with ``answer``."""
    t = Trace(mode, question)
    clock = 0.0
    for step in steps:
        events = step if isinstance(step, list) else [step] if not isinstance(step, tuple) else [
            Usage(80, 20, 0.5), Action(step[0], step[1]), Observation(step[0], step[2], elapsed_s=0.1)]
        for event in events:
            clock += 1.0
            t.add(event, clock)
    if answer is not None:
        t.add(Usage(80, 20, 0.5), clock + 1)
        t.add(FinalAnswer(answer), clock + 1)
    return t


def rows_of(sm) -> list[dict[str, str]]:
    """Each row as {mode: its cell's line}."""
    return [{m: sm.moves[m][i].line for m, i in row.cells.items()} for row in sm.rows]


def test_two_modes_with_the_same_first_search_and_different_second_steps():
    react = trace("react", SEARCH, ("calculate", "330 * 3.28084", "1082.68"), answer="1082.68 feet")
    act = trace("act", ("duckduckgo_search", "eiffel  tower HEIGHT", "The Eiffel Tower is 330 m tall."),
                ("duckduckgo_search", "Eiffel Tower height in feet", "1,083 ft"), answer="1,083 ft")
    sm = step_map({"act": act, "react": react})
    rows = rows_of(sm)
    assert len(rows) == 3 and set(rows[0]) == {"act", "react"}  # case and whitespace folded: one search
    assert set(rows[1]) == {"react"} and set(rows[2]) == {"act"}  # a step only one mode took: a row of its own
    assert sm.divergence == Divergence(1, (("act", "searched the web (Eiffel Tower height in feet)"),
                                           ("react", "computed (330 * 3.28084)")))
    assert sm.divergence.text == ("Here Act-only searched the web (Eiffel Tower height in feet), ReAct computed "
                                  "(330 * 3.28084).")


def test_numbers_are_compared_by_value_and_every_mode_keeps_its_order():
    react = trace("react", ("calculate", "17 * 23 + 5", "396"), ("calculate", "396 / 2", "198"))
    act = trace("act", ("calculate", "17*23+5.0", "396"), ("calculate", "198 * 2", "396"),
                ("calculate", "396/2", "198"))
    sm = step_map({"act": act, "react": react})
    assert [set(r) for r in rows_of(sm)] == [{"act", "react"}, {"act"}, {"act", "react"}]
    assert [sm.row_of("act", i) for i in range(3)] == [0, 1, 2] and [sm.row_of("react", i) for i in range(2)] == [0, 2]
    assert sm.divergence is not None and sm.divergence.row == 1
    assert dict(sm.divergence.doing) == {"act": "computed (198 * 2)", "react": "computed (396 / 2)"}


def test_one_mode_with_an_extra_step_parts_where_the_other_answered():
    react = trace("react", SEARCH, ("calculate", "330 * 3.28084", "1082.68"), answer="1082.68 feet")
    act = trace("act", SEARCH, answer="330 m")
    sm = step_map({"act": act, "react": react})
    assert [set(r) for r in rows_of(sm)] == [{"act", "react"}, {"react"}]
    assert sm.divergence == Divergence(1, (("act", "answered"), ("react", "computed (330 * 3.28084)")))


def test_a_mode_still_running_makes_no_divergence_yet():
    react = trace("react", SEARCH, ("calculate", "330 * 3.28084", "1082.68"), answer=None)
    act = trace("act", SEARCH, answer=None)
    assert step_map({"act": act, "react": react}).divergence is None  # Act-only may still compute the same
    assert step_map({"act": act, "react": react}, ended=["act", "react"]).divergence.row == 1


def test_modes_that_took_the_same_steps_never_part():
    sm = step_map({"act": trace("act", SEARCH), "react": trace("react", SEARCH)})
    assert len(sm.rows) == 1 and sm.divergence is None


def test_a_codeact_program_calling_two_tools_makes_two_steps_aligned_with_reacts():
    code = "h = duckduckgo_search('Eiffel Tower height')\nprint(calculate('330 * 3.28084'))"
    codeact = trace("codeact", [Usage(90, 40, 0.5), Thought("Look it up, then convert."),
                                Action("python", code, code=True),
                                Action("duckduckgo_search", {"query": "Eiffel Tower height"}, nested=True),
                                Observation("duckduckgo_search", "The Eiffel Tower is 330 m tall.", nested=True),
                                Action("calculate", {"expression": "330*3.28084"}, nested=True),
                                Observation("calculate", "1082.68", nested=True),
                                Observation("python", "1082.68")], answer="1082.68 feet")
    react = trace("react", SEARCH, ("calculate", "330 * 3.28084", "1082.68"), answer="1082.68 feet")
    act = trace("act", SEARCH, ("wikipedia_search", "Eiffel Tower", "The tower is 330 metres (1,083 ft) tall."))
    sm = step_map({"act": act, "react": react, "codeact": codeact})
    moves = sm.moves["codeact"]
    assert [(m.tool, m.input) for m in moves] == [("duckduckgo_search", "Eiffel Tower height"),
                                                  ("calculate", "330*3.28084")]
    assert moves[1].observations == (1, 2)  # its call's result, then what the program printed
    assert moves[1].cost.tool_calls == 2 and moves[1].cost.tokens == 130  # the program is a step, not a call
    assert [set(r) for r in rows_of(sm)] == [{"act", "react", "codeact"}, {"react", "codeact"}, {"act"}]
    assert sm.divergence == Divergence(1, (("act", "looked it up on Wikipedia (Eiffel Tower)"),
                                           ("react", "computed (330 * 3.28084)"),
                                           ("codeact", "computed (330*3.28084)")))


def test_a_program_without_tool_calls_is_its_own_action():
    codeact = trace("codeact", [Usage(90, 40, 0.5), Action("python", "print(17 * 23 + 5)", code=True),
                                Observation("python", "396")], answer="396")
    (move,) = moves_of(codeact)
    assert move.tool == "python" and move.line == "python(print(17 * 23 + 5)) → 396" and move.cost.tool_calls == 0


def test_a_fork_branches_from_the_row_of_its_edited_observation():
    react = trace("react", SEARCH, ("calculate", "330 * 3.28084", "1082.68"), answer="1082.68 feet")
    fork = trace("react@1", [Usage(80, 20, 0.5), Action(*SEARCH[:2]),
                             Observation(SEARCH[0], "The Eiffel Tower is 300 m tall."),
                             Forked(0, SEARCH[2], "The Eiffel Tower is 300 m tall.")],
                 ("calculate", "300 * 3.28084", "984.25"), answer="984.25 feet")
    act = trace("act", SEARCH, ("calculate", "330 * 3.28084", "1082.68"))
    sm = step_map({"react@1": fork, "act": act, "react": react})
    assert sm.modes == ("act", "react", "react@1")  # a fork's column comes after its mode's
    assert sm.branches == {"react@1": 0} and sm.moves["react@1"][0].edited
    assert [set(r) for r in rows_of(sm)] == [{"act", "react", "react@1"}, {"act", "react"}, {"react@1"}]
    assert sm.acting == ("act", "react") and sm.divergence is None  # a fork is no mode of its own to part from


def test_a_think_only_fork_edits_its_reasoning_row_by_row():
    think = trace("think", [Usage(50, 30, 1.0), Thought("17 * 23 is about 400. Plus 5 is 405.")], answer="405")
    fork = trace("think@1", [Usage(50, 30, 1.0), Thought("17 * 23 is 391. Plus 5 is 396."),
                             Forked(0, "17 * 23 is about 400. Plus 5 is 405.", "17 * 23 is 391. Plus 5 is 396.")],
                 answer="396")
    sm = step_map({"think": think, "think@1": fork})
    assert sm.branches == {"think@1": 0} and [sm.cell(r, "think@1").line for r in range(2)] == [
        "17 * 23 is 391.", "Plus 5 is 396."]
    assert sm.acting == () and sm.divergence is None


def test_a_follow_up_has_a_band_per_earlier_turn_and_counts_their_observations():
    previous = Previous(
        turns=({"question": "What is 17 * 23 + 5?", "answers": {"think": "400", "react": "396"}},),
        history={"react": ({"role": "user", "content": "Question: What is 17 * 23 + 5?"},
                           {"role": "assistant", "content": "Action: calculate[17 * 23 + 5]"},
                           {"role": "user", "content": "Observation: 396"},
                           {"role": "assistant", "content": "Final Answer: 396"})})
    react = trace("react", ("calculate", "396 - 6", "390"), answer="396 minus 6 is 390", question="And minus 6?")
    act = trace("act", ("calculate", "396-6", "390"), ("calculate", "390 / 3", "130"), answer="130",
                question="And minus 6?")
    think = trace("think", [Usage(40, 10, 0.4), Thought("400 minus 6 is 394.")], answer="394", question="And minus 6?")
    sm = step_map({"think": think, "act": act, "react": react}, previous=previous)
    assert sm.turn == 2 and [t.question for t in sm.turns] == ["What is 17 * 23 + 5?"]
    assert sm.turns[0].answers == {"think": "400", "react": "396"}
    assert [set(r) for r in rows_of(sm)] == [{"think", "act", "react"}, {"act"}] and sm.divergence.row == 1
    marks = {c.text: (c.mark, c.source.turn if c.source else None) for c in sm.claims["react"]}
    assert marks == {"396": ("backed", 1), "6": ("given", None), "390": ("backed", None)}  # 396: turn 1's observation
    assert {c.text: c.mark for c in sm.claims["think"]} == {"394": "unbacked"}  # Think-only carries no observations


def test_reflexion_trials_are_bands_and_its_verdicts_rows_of_their_own():
    reflexion = trace("reflexion", Trial(1, 3), SEARCH,
                      [Evaluation(False, "expected", "wrong", "330 m"), Reflection("Convert to feet next time.")],
                      Trial(2, 3), SEARCH, ("calculate", "330 * 3.28084", "1082.68"),
                      [Evaluation(True, "expected", "right", "1082.68 feet")], answer="1082.68 feet")
    react = trace("react", SEARCH, ("calculate", "330 * 3.28084", "1082.68"))
    moves = moves_of(reflexion)
    assert [m.band for m in moves] == ["Trial 1 of 3", "", "Trial 2 of 3", "", ""]
    assert moves[1].kind == "verdict" and "✗ wrong" in moves[1].line and "Convert to feet" in moves[1].line
    sm = step_map({"react": react, "reflexion": reflexion})
    assert [set(r) for r in rows_of(sm)] == [{"react", "reflexion"}, {"reflexion"}, {"reflexion"},
                                             {"react", "reflexion"}, {"reflexion"}]  # both computed, in trial 2
    assert sm.divergence == Divergence(2, (("react", "computed (330 * 3.28084)"),
                                           ("reflexion", "searched the web (Eiffel Tower height)")))


def test_cot_sc_samples_are_one_row_of_votes():
    hybrid = trace("cot_sc_react", [Usage(50, 20, 0.5), Thought("Sample 1/3 answers: 1083 ft"),
                                    Usage(50, 20, 0.5), Thought("Sample 2/3 answers: 1,000 ft"),
                                    Thought("CoT-SC votes over 3 samples: '1083 ft' ×2, '1,000 ft' ×1. "
                                            "Majority: '1083 ft' with 2/3.")], answer="1083 ft")
    (votes,) = moves_of(hybrid)
    assert votes.kind == "votes" and votes.line.startswith("votes: '1083 ft' ×2") and votes.cost.tokens == 140
    sm = step_map({"react": trace("react", SEARCH), "cot_sc_react": hybrid})
    assert sm.divergence.doing == (("react", "searched the web (Eiffel Tower height)"),
                                   ("cot_sc_react", "voted over its CoT-SC samples"))


def test_think_only_lists_its_reasoning_steps_beside_the_actions_and_defines_no_divergence():
    think = trace("think", [Usage(50, 80, 2.0), Thought("The tower is about 300 m.\nA metre is 3.28 feet. So about "
                                                        "1000 feet.")], answer="About 1000 feet")
    sm = step_map({"think": think, "react": trace("react", SEARCH)})
    assert [sm.cell(r, "think").line for r in range(3)] == ["The tower is about 300 m.", "A metre is 3.28 feet.",
                                                            "So about 1000 feet."]
    assert sm.cell(0, "react") is not None and sm.acting == ("react",) and sm.divergence is None
    assert sm.moves["think"][-1].cost.tokens == 130


def test_a_mode_run_again_after_a_failure_shows_its_last_attempt():
    act = trace("act", SEARCH, [Retry("the server cut the reply")], ("calculate", "330 * 3.28084", "1082.68"))
    assert [m.tool for m in moves_of(act)] == ["calculate"]


def test_reasoning_steps_stay_few():
    steps = reasoning_steps(" ".join(f"Step {n} holds." for n in range(30)))
    assert len(steps) == 12 and steps[-1].startswith("Step 11 holds.") and steps[-1].endswith("Step 29 holds.")


def test_each_move_carries_the_cost_so_far():
    react = trace("react", SEARCH, ("calculate", "330 * 3.28084", "1082.68"))
    first, second = moves_of(react)
    assert (first.cost.tokens, first.cost.tool_calls, first.cost.seconds) == (100, 1, 3.0)
    assert (second.cost.tokens, second.cost.tool_calls, second.cost.seconds) == (200, 2, 6.0)
