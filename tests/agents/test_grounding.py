"""Grounding marks over hand-made answers and observations: given, backed (with the observation that backs it)
or unbacked (``agents/grounding.py``)."""

from __future__ import annotations

from agents.events import Action, FinalAnswer, Observation, Retry, Thought, Usage
from agents.grounding import (
    Observed,
    Source,
    claims_in,
    claims_of,
    counts,
    counts_text,
    earlier_observed,
    folded,
    ground,
    observed_in,
)
from agents.trace import Trace


def marks(answer: str, question: str = "", *observations: str) -> dict[str, str]:
    observed = [Observed(text, "calculate", "x", i) for i, text in enumerate(observations)]
    return {c.text: c.mark for c in ground(answer, [question], observed, "react")}


def test_396_is_backed_by_an_observation_of_396_0():
    (claim,) = ground("396", ["What is 17 * 23 + 5?"], [Observed("396.0", "calculate", "17 * 23 + 5", 0)], "react")
    assert (claim.text, claim.kind, claim.mark) == ("396", "number", "backed")
    assert claim.source == Source("react", "calculate", "17 * 23 + 5", "396.0", 0)


def test_a_year_in_the_question_is_given_even_when_an_observation_has_it_too():
    assert marks("It opened in 1889.", "What happened in Paris in 1889?", "The tower opened in 1889.") == {
        "1889": "given"}
    (claim,) = ground("It opened in 1889.", ["What happened in 1889?"], [], "react")
    assert claim.kind == "year" and claim.source is None


def test_a_name_found_nowhere_is_unbacked():
    assert marks("It was designed by Gustave Eiffel.", "Who designed the tower?", "A wrought-iron tower.") == {
        "Gustave Eiffel": "unbacked"}


def test_a_number_computed_in_a_thought_but_never_observed_is_unbacked():
    t = Trace("react", "What is 17 * 23 + 5?")
    for event in [Usage(10, 5), Thought("17 * 23 is 391, so the answer is 396."), Action("calculate", "17 * 23"),
                  Observation("calculate", "391"), Usage(10, 5), Thought("Plus 5 makes 396."), FinalAnswer("396")]:
        t.add(event)
    (claim,) = claims_of(t)
    assert (claim.text, claim.mark) == ("396", "unbacked")  # a thought is the model's own text, not an observation


def test_a_capitalised_name_in_an_observation_is_backed_with_its_row_cell_words():
    observed = [Observed("The tower was designed by the engineers of Gustave Eiffel's company in 1887.",
                         "wikipedia_search", "Eiffel Tower", 3)]
    (claim,) = ground("Gustave Eiffel", ["Who built it?"], observed, "react")
    assert claim.mark == "backed" and claim.source.index == 3 and claim.source.tool == "wikipedia_search"
    assert "Gustave Eiffel's company" in claim.source.excerpt and claim.to_dict()["source"]["input"] == "Eiffel Tower"


def test_what_a_claim_is():
    found = [(c.kind, c.text) for c in claims_in(
        'The Eiffel Tower in Paris opened on 31 March 1889, is 330 m (1,083 ft) tall and is called "La dame de fer". '
        "Approximately 7 million visit it.")]
    assert found == [("name", "Eiffel Tower"), ("name", "Paris"), ("date", "31 March 1889"), ("number", "330"),
                     ("number", "1,083"), ("quote", '"La dame de fer"'), ("number", "7")]


def test_a_name_joined_by_of_is_one_name_and_answers_opening_words_are_none():
    assert [c.text for c in claims_in("The Bank of England and Leonardo da Vinci.")] == ["Bank of England",
                                                                                        "Leonardo da Vinci"]
    assert claims_in("Yes. It is SUPPORTS, I think. Therefore roughly so.") == []


def test_dates_are_compared_by_their_parts_and_numbers_by_value():
    assert marks("on July 20, 1969", "", "Apollo 11 landed on 20 July 1969.") == {"July 20, 1969": "backed"}
    assert marks("in July 1969", "", "It landed on 1969-07-20.") == {"July 1969": "backed"}
    assert marks("12345 people", "", "There were 12,345 of them.") == {"12345": "backed"}
    assert marks("3.14", "", "pi is 3.14159") == {"3.14": "unbacked"}  # a rounded number is not the observed one


def test_a_quoted_phrase_is_matched_with_case_and_punctuation_folded():
    assert marks('It is called "the Iron Lady".', "", "Nicknamed The iron, lady by Parisians.") == {
        '"the Iron Lady"': "backed"}
    assert marks('"Iron maiden"', "", "The Iron Lady.") == {'"Iron maiden"': "unbacked"}  # a paraphrase is not


def test_the_first_observation_that_has_a_claim_backs_it_and_a_repeat_is_one_claim():
    observed = [Observed("nothing here", "duckduckgo_search", "a", 0), Observed("Paris, 396", "calculate", "b", 1),
                Observed("Paris again", "calculate", "c", 2)]
    (paris, number) = ground("Paris has 396; Paris!", [""], observed, "act")
    assert paris.source.index == 1 and paris.spans == ((0, 5), (15, 20)) and number.source.index == 1


def test_counts_and_their_words():
    claims = ground("Paris, 1889, 396 and Lyon", ["in 1889?"], [Observed("Paris: 396.0", index=0)], "react")
    assert counts(claims) == {"backed": 2, "given": 1, "unbacked": 1}
    assert counts_text(claims) == "2 backed · 1 given · 1 unbacked" and counts_text([]) == ""


def test_observed_in_reads_codeact_calls_and_only_the_last_attempt():
    t = Trace("codeact", "q")
    for event in [Action("calculate", "1 + 1"), Observation("calculate", "2"), Retry("again"),
                  Action("python", "print(calculate('2*3'))", code=True),
                  Action("calculate", {"expression": "2*3"}, nested=True),
                  Observation("calculate", "6", nested=True), Observation("python", "6"), FinalAnswer("6")]:
        t.add(event)
    assert observed_in(t) == [Observed("6", "calculate", "2*3", 1), Observed("6", "python",
                                                                             "print(calculate('2*3'))", 2)]


def test_earlier_observed_numbers_each_turn_of_a_follow_up():
    history = [{"role": "user", "content": "Question: first?"}, {"role": "user", "content": "Observation: 396"},
               {"role": "user", "content": "Question: second?"}, {"role": "tool", "content": "Paris"}]
    assert earlier_observed(history) == [Observed("396", turn=1), Observed("Paris", turn=2)]


def test_a_huge_observation_folds_without_error():
    """A printed power or a digit dump in an observation stays text: the map never fails on it."""
    assert folded("x = " + "7" * 5000 + " and 1e999999999, 2.0") == "x=" + "7" * 5000 + " and 1e999999999,2"


def test_folded_inputs():
    assert folded("17 * 23 + 5.0") == folded("17*23+5") == "17*23+5"
    assert folded("  Eiffel   TOWER height ") == "eiffel tower height" and folded("396 / 2") == folded("396/2")
    assert folded("17*23+5") != folded("17*235")
