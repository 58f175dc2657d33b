"""Table-driven tests for agents.parsing: the formats real models write, and the ones they get wrong."""

from __future__ import annotations

import random
import time
from types import SimpleNamespace

import pytest

from agents.events import Action, FinalAnswer, ParseError
from agents.parsing import canonical_tool, cut_observation, format_instructions, parse_step

TOOLS = ["calculate", "wikipedia_search", "web_search"]
FENCE = "`" * 3


def err(fragment: str) -> tuple[str, str]:
    """Expected ParseError whose message contains ``fragment``."""
    return ("error", fragment)


# fmt: off
CASES = [
    # --- canonical ReAct and answers ------------------------------------------------------
    ("canonical", "Thought: I need math\nAction: calculate\nAction Input: 2+2", None,
     Action("calculate", "2+2", "I need math")),
    ("no-thought", "Action: calculate\nAction Input: 2+2", None, Action("calculate", "2+2", "")),
    ("unlabelled-thought", "I should compute this.\nAction: calculate\nAction Input: 2+2", None,
     Action("calculate", "2+2", "I should compute this.")),
    ("final", "Final Answer: 42", None, FinalAnswer("42")),
    ("answer-label", "Answer: 42", None, FinalAnswer("42")),
    ("final-bold-label", "**Final Answer:** 42", None, FinalAnswer("42")),
    ("final-bold-all", "**Final Answer: 42**", None, FinalAnswer("42")),
    ("final-bold-value", "Final Answer: **Paris**", None, FinalAnswer("Paris")),
    ("final-spaces", "Final Answer:    42   \n\n", None, FinalAnswer("42")),
    ("final-multiline", "Final Answer: first line\nsecond line\n\nthird", None,
     FinalAnswer("first line\nsecond line\n\nthird")),
    ("thought-then-final", "Thought: I know it.\nFinal Answer: Paris", TOOLS, FinalAnswer("Paris")),
    ("think-cot", "Paris is the capital of France.\nSo the answer is Paris.\n\nFinal Answer: Paris", None,
     FinalAnswer("Paris")),
    ("final-heading-no-colon", "Reasoning here.\n### Final Answer\n42", None, FinalAnswer("42")),
    ("final-inline", "After all that, the final answer is: 42", None, FinalAnswer("42")),
    ("boxed", "So the result is \\boxed{42}.", None, FinalAnswer("42")),
    ("final-lowercase", "final answer: yes", None, FinalAnswer("yes")),
    # --- the ReAct paper's numbered labels and bracket actions -----------------------------
    ("paper-numbered", "Thought 3: I should search Paris.\nAction 3: Search[Paris]", None,
     Action("Search", "Paris", "I should search Paris.")),
    ("paper-numbered-tools", "Thought 3: look it up\nAction 3: Search[Paris]", TOOLS,
     Action("wikipedia_search", "Paris", "look it up")),
    ("paper-bracket-next-line", "Thought 2: search it\nAction 2:\nSearch[Colorado orogeny]", None,
     Action("Search", "Colorado orogeny", "search it")),
    ("paper-bracket-next-line-tools", "Thought 2: search it\nAction 2:\n  Search[Colorado orogeny]", TOOLS,
     Action("wikipedia_search", "Colorado orogeny", "search it")),
    ("paper-lookup-stays", "Action 4: Lookup[eastern sector]", TOOLS, Action("Lookup", "eastern sector", "")),
    ("paper-finish", "Thought 5: done\nAction 5: Finish[1,800 to 7,000 ft]", None, FinalAnswer("1,800 to 7,000 ft")),
    ("paper-finish-bare", "Finish[Paris]", TOOLS, FinalAnswer("Paris")),
    ("paper-bare-search", "Thought: I need to search.\nSearch[Milhouse]", None,
     Action("Search", "Milhouse", "I need to search.")),
    ("paper-act-label", "Act 1: Search[Paris]", None, Action("Search", "Paris", "")),
    ("paper-empty-search", "Action 1: Search[]", None, err("Search[] had an empty input")),
    ("paper-empty-finish", "Action 1: Finish[]", None, err("Final Answer was empty")),
    # --- other action spellings -----------------------------------------------------------
    ("colon-form", "Action: wikipedia: England", None, Action("wikipedia", "England", "")),
    ("colon-form-tools", "Action: wikipedia_search: England", TOOLS, Action("wikipedia_search", "England", "")),
    ("call-bare", "calculate(2+2)", None, Action("calculate", "2+2", "")),
    ("call-bare-tools", "Let me compute.\ncalculate(2 * 21)", TOOLS, Action("calculate", "2 * 21", "Let me compute.")),
    ("call-labelled", "Action: calculate(2+2)", None, Action("calculate", "2+2", "")),
    ("call-double-quoted", 'Action: calculate("2+2")', TOOLS, Action("calculate", "2+2", "")),
    ("call-single-quoted", "Action: wikipedia_search('Eiffel Tower')", TOOLS,
     Action("wikipedia_search", "Eiffel Tower", "")),
    ("call-kwargs", 'Action: web_search(query="Paris, France", max_results=3)', TOOLS,
     Action("web_search", {"query": "Paris, France", "max_results": 3}, "")),
    ("call-prose-not-action", "f(x) grows fast.\nFinal Answer: f(x)", TOOLS, FinalAnswer("f(x)")),
    ("json-fenced", f'Thought: compute\n{FENCE}json\n{{"action": "calculate", "action_input": "2+2"}}\n{FENCE}', None,
     Action("calculate", "2+2", "compute")),
    ("json-bare", '{"action": "calculate", "action_input": "2+2"}', TOOLS, Action("calculate", "2+2", "")),
    ("json-name-arguments", '{"name": "calculate", "arguments": {"expression": "2+2"}}', TOOLS,
     Action("calculate", {"expression": "2+2"}, "")),
    ("json-tool-input", '{"tool": "Wikipedia Search", "tool_input": "Paris"}', TOOLS,
     Action("wikipedia_search", "Paris", "")),
    ("json-openai-function", '{"function": {"name": "calculate", "arguments": "{\\"expression\\": \\"1+1\\"}"}}', TOOLS,
     Action("calculate", {"expression": "1+1"}, "")),
    ("json-hermes-tool-call", '<tool_call>\n{"name": "calculate", "arguments": {"expression": "3*3"}}\n</tool_call>',
     TOOLS, Action("calculate", {"expression": "3*3"}, "")),
    ("json-sloppy-blob", "{'action': 'calculate', 'action_input': '2+2',}", TOOLS, Action("calculate", "2+2", "")),
    ("json-after-action-label", f'Action:\n{FENCE}\n{{"action": "web_search", "action_input": "news"}}\n{FENCE}', TOOLS,
     Action("web_search", "news", "")),
    ("json-final-answer", '{"action": "Final Answer", "action_input": "Paris"}', TOOLS, FinalAnswer("Paris")),
    ("json-final-answer-snake", '```json\n{"action": "final_answer", "action_input": "42"}\n```', None,
     FinalAnswer("42")),
    ("action-final-answer-tool", "Action: final_answer\nAction Input: Paris", TOOLS, FinalAnswer("Paris")),
    ("action-final-answer-spaced", "Thought: done\nAction: Final Answer\nAction Input: 7", None, FinalAnswer("7")),
    ("action-none-then-final", "Thought: I know.\nAction: None\nFinal Answer: 4", TOOLS, FinalAnswer("4")),
    # --- labels as models decorate them ---------------------------------------------------
    ("upper-labels", "THOUGHT: hmm\nACTION: calculate\nACTION INPUT: 2+2", None, Action("calculate", "2+2", "hmm")),
    ("lower-labels", "thought: hmm\naction: calculate\naction input: 2+2", None, Action("calculate", "2+2", "hmm")),
    ("snake-input-label", "Action: calculate\nAction_Input: 2+2", None, Action("calculate", "2+2", "")),
    ("bold-inside", "**Thought:** hmm\n**Action:** calculate\n**Action Input:** 2+2", None,
     Action("calculate", "2+2", "hmm")),
    ("bold-outside", "**Thought**: hmm\n**Action**: calculate\n**Action Input**: 2+2", None,
     Action("calculate", "2+2", "hmm")),
    ("italic-and-underscore", "*Thought:* hmm\n__Action__: calculate\n_Action Input:_ 2+2", None,
     Action("calculate", "2+2", "hmm")),
    ("bold-numbered", "**Thought 2:** hmm\n**Action 2:** Search[Paris]", None, Action("Search", "Paris", "hmm")),
    ("indented", "   Thought: hmm\n\tAction: calculate\n    Action Input: 2+2", None,
     Action("calculate", "2+2", "hmm")),
    ("bulleted", "- Thought: hmm\n- Action: calculate\n- Action Input: 2+2", None, Action("calculate", "2+2", "hmm")),
    ("crlf", "Thought: hmm\r\nAction: calculate\r\nAction Input: 2+2\r\n", None, Action("calculate", "2+2", "hmm")),
    # --- tool names -----------------------------------------------------------------------
    ("name-parenthetical", "Action: calculate (evaluate math)\nAction Input: 2+2", TOOLS,
     Action("calculate", "2+2", "")),
    ("name-backticks", "Action: `calculate`\nAction Input: 2+2", TOOLS, Action("calculate", "2+2", "")),
    ("name-quotes", 'Action: "calculate"\nAction Input: 2+2', TOOLS, Action("calculate", "2+2", "")),
    ("name-placeholder-echo", "Action: <calculate>\nAction Input: 2+2", TOOLS, Action("calculate", "2+2", "")),
    ("name-bold", "Action: **calculate**\nAction Input: 2+2", TOOLS, Action("calculate", "2+2", "")),
    ("fuzzy-spaces", "Action: Wikipedia Search\nAction Input: Paris", TOOLS, Action("wikipedia_search", "Paris", "")),
    ("fuzzy-hyphen-case", "Action: WIKIPEDIA-SEARCH\nAction Input: Paris", TOOLS,
     Action("wikipedia_search", "Paris", "")),
    ("fuzzy-camel", "Action: WebSearch\nAction Input: news", TOOLS, Action("web_search", "news", "")),
    ("unknown-tool-as-written", "Action: Frobnicate Tool\nAction Input: x", TOOLS, Action("Frobnicate Tool", "x", "")),
    ("no-tools-as-written", "Action: Wikipedia Search\nAction Input: Paris", None,
     Action("Wikipedia Search", "Paris", "")),
    # --- inputs ---------------------------------------------------------------------------
    ("input-multiline", "Action: python\nAction Input: x = 1\nprint(x)\n", None,
     Action("python", "x = 1\nprint(x)", "")),
    ("input-next-line", "Action: calculate\nAction Input:\n2+2", None, Action("calculate", "2+2", "")),
    ("input-fenced-python", f"Action: python\nAction Input: {FENCE}python\nprint(1)\n{FENCE}", None,
     Action("python", "print(1)", "")),
    ("input-fenced-plain", f"Action: calculate\nAction Input:\n{FENCE}\n2+2\n{FENCE}", None,
     Action("calculate", "2+2", "")),
    ("input-fenced-inline", f"Action: calculate\nAction Input: {FENCE}2+2{FENCE}", None,
     Action("calculate", "2+2", "")),
    ("input-fence-hides-labels",
     f"Action: python\nAction Input: {FENCE}python\nanswer: int = 2\nprint(answer)\n{FENCE}", None,
     Action("python", "answer: int = 2\nprint(answer)", "")),
    ("input-double-quoted", 'Action: wikipedia_search\nAction Input: "Eiffel Tower"', TOOLS,
     Action("wikipedia_search", "Eiffel Tower", "")),
    ("input-single-quoted", "Action: wikipedia_search\nAction Input: 'Eiffel Tower'", TOOLS,
     Action("wikipedia_search", "Eiffel Tower", "")),
    ("input-inner-quotes-kept", 'Action: web_search\nAction Input: "a" and "b"', TOOLS,
     Action("web_search", '"a" and "b"', "")),
    ("input-json", 'Action: calculate\nAction Input: {"expression": "2+2"}', TOOLS,
     Action("calculate", {"expression": "2+2"}, "")),
    ("input-json-single-quotes", "Action: calculate\nAction Input: {'expression': '2+2'}", TOOLS,
     Action("calculate", {"expression": "2+2"}, "")),
    ("input-json-trailing-comma", 'Action: calculate\nAction Input: {"expression": "2+2",}', TOOLS,
     Action("calculate", {"expression": "2+2"}, "")),
    ("input-json-missing-brace", 'Action: calculate\nAction Input: {"expression": "2+2"', TOOLS,
     Action("calculate", {"expression": "2+2"}, "")),
    ("input-json-fenced", f'Action: calculate\nAction Input:\n{FENCE}json\n{{"expression": "2+2"}}\n{FENCE}', TOOLS,
     Action("calculate", {"expression": "2+2"}, "")),
    ("input-braces-not-dict", "Action: calculate\nAction Input: {x | x > 2}", TOOLS,
     Action("calculate", "{x | x > 2}", "")),
    ("input-explicitly-empty", "Action: calculate\nAction Input:", TOOLS, Action("calculate", "", "")),
    ("input-unlabelled-continuation", "Action: calculate\n2+2", None, Action("calculate", "2+2", "")),
    ("call-empty-parens", "Action: get_time()", None, Action("get_time", "", "")),
    ("json-capitalised-keys", '{"Action": "calculate", "Action_Input": "1+1"}', TOOLS, Action("calculate", "1+1", "")),
    ("final-keeps-code-fence", f"Final Answer:\n{FENCE}python\nprint(1)\n{FENCE}", None,
     FinalAnswer(f"{FENCE}python\nprint(1)\n{FENCE}")),
    ("whole-reply-fenced", f"{FENCE}\nThought: hmm\nAction: calculate\nAction Input: 2+2\n{FENCE}", None,
     Action("calculate", "2+2", "hmm")),
    # --- hallucinated observations --------------------------------------------------------
    ("obs-full", "Thought: t\nAction: calculate\nAction Input: 2+2\nObservation: 4\nThought: so\nFinal Answer: 4", None,
     Action("calculate", "2+2", "t")),
    ("obs-numbered", "Thought 1: t\nAction 1: Search[Paris]\nObservation 1: Paris is...\nAction 2: Finish[Paris]", None,
     Action("Search", "Paris", "t")),
    ("obs-markdown", "Action: calculate\nAction Input: 2+2\n**Observation:** 4\nFinal Answer: 4", None,
     Action("calculate", "2+2", "")),
    ("obs-lowercase", "Action: calculate\nAction Input: 2+2\nobservation: 4", None, Action("calculate", "2+2", "")),
    ("obs-partial-obs", "Thought: t\nAction: calculate\nAction Input: 2+2\nObs", None, Action("calculate", "2+2", "t")),
    ("obs-partial-observ", "Action: calculate\nAction Input: 2+2\nObserv", None, Action("calculate", "2+2", "")),
    ("obs-before-final", "Action: calculate\nAction Input: 2+2\nObservation: 4\nFinal Answer: 4", None,
     Action("calculate", "2+2", "")),
    # --- both an action and an answer: the first wins -------------------------------------
    ("action-then-final", "Thought: t\nAction: calculate\nAction Input: 2+2\nFinal Answer: 4", None,
     Action("calculate", "2+2", "t")),
    ("final-then-action", "Thought: t\nFinal Answer: 4\nmore text\nAction: calculate\nAction Input: 2+2", None,
     FinalAnswer("4\nmore text")),
    ("final-then-bracket", "Final Answer: Paris\nAction: Finish[Paris]", None, FinalAnswer("Paris")),
    # --- errors ---------------------------------------------------------------------------
    ("missing-input", "Thought: t\nAction: calculate", TOOLS, err("had no Action Input")),
    ("missing-input-bold", "**Action:** calculate\n", TOOLS, err("had no Action Input")),
    ("missing-tool-name", "Action:\nAction Input: 2+2", TOOLS, err("did not name a tool")),
    ("neither", "I think the answer is probably 42.", TOOLS, err("had no Action or Final Answer")),
    ("only-thought", "Thought: I need to think more.", None, err("had no Action or Final Answer")),
    ("input-without-action", "Action Input: 2+2", None, err("had no Action or Final Answer")),
    ("empty-final", "Final Answer:   ", None, err("Final Answer was empty")),
    ("empty-string", "", None, err("reply was empty")),
    ("whitespace", " \n\t ", TOOLS, err("reply was empty")),
    ("only-observation", "Observation: 4", None, err("reply was empty")),
]
# fmt: on


@pytest.mark.parametrize(("text", "tools", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parse_step(text: str, tools: list[str] | None, expected: object) -> None:
    result = parse_step(text, tools)
    if isinstance(expected, tuple):
        assert isinstance(result, ParseError), result
        assert expected[1] in result.message
        assert result.text == text
        assert "Reply in exactly this format:" in result.message
    else:
        assert result == expected


def test_case_ids_unique_and_table_large() -> None:
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 60


def test_parse_error_message_lists_tools_and_format() -> None:
    result = parse_step("no idea", TOOLS)
    assert isinstance(result, ParseError)
    assert result.message.startswith("Your reply had no Action or Final Answer. Reply in exactly this format:\n")
    assert "Action: <one of: calculate, wikipedia_search, web_search>" in result.message
    assert "Action Input:" in result.message and "Final Answer:" in result.message


def test_none_and_bytes_never_raise() -> None:
    assert isinstance(parse_step(None), ParseError)  # type: ignore[arg-type]
    assert parse_step(None).text == ""  # type: ignore[arg-type]
    assert parse_step(b"Final Answer: 1") == FinalAnswer("1")  # type: ignore[arg-type]
    assert isinstance(parse_step(12345), ParseError)  # type: ignore[arg-type]
    assert isinstance(parse_step("Final Answer: 1", 5), ParseError)  # type: ignore[arg-type]


def test_tools_may_be_a_generator_or_tool_objects() -> None:
    objects = [SimpleNamespace(name="calculate"), SimpleNamespace(name="wikipedia_search")]
    assert parse_step("Search[Paris]", objects) == Action("wikipedia_search", "Paris", "")
    assert parse_step("Action: Calculate\nAction Input: 1", (t for t in TOOLS)) == Action("calculate", "1", "")


def test_search_alias_prefers_a_real_search_tool() -> None:
    assert parse_step("Search[Paris]", ["search", "wikipedia_search"]) == Action("search", "Paris", "")
    assert parse_step("Search[Paris]", ["calculate"]) == Action("Search", "Paris", "")


@pytest.mark.parametrize(
    ("name", "tools", "expected"),
    [
        ("Wikipedia Search", TOOLS, "wikipedia_search"),
        ("wikipedia-search", TOOLS, "wikipedia_search"),
        ("CALCULATE", TOOLS, "calculate"),
        ("search", TOOLS, "wikipedia_search"),
        ("lookup", TOOLS, "lookup"),
        ("Frobnicate", TOOLS, "Frobnicate"),
        ("Wikipedia Search", None, "Wikipedia Search"),
        ("calculate", [], "calculate"),
    ],
)
def test_canonical_tool(name: str, tools: list[str] | None, expected: str) -> None:
    assert canonical_tool(name, tools) == expected


def test_format_instructions() -> None:
    text = format_instructions(["calculate", "web_search"])
    assert "Action: <one of: calculate, web_search>" in text
    assert text.splitlines()[0].startswith("Thought:")
    assert "Final Answer:" in format_instructions(None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Action: a\nAction Input: b\nObservation: c\nmore", "Action: a\nAction Input: b\n"),
        ("Action: a\nObservation 2: c", "Action: a\n"),
        ("Action: a\n  **Observation**: c", "Action: a\n"),
        ("Action: a\nOBSERVATION", "Action: a\n"),
        ("Action: a\nObs", "Action: a\n"),
        ("Action: a\nObserv", "Action: a\n"),
        ("Action: a\nObscure facts follow", "Action: a\nObscure facts follow"),
        ("Final Answer: Observations show it", "Final Answer: Observations show it"),
        ("Thought: the observation: none", "Thought: the observation: none"),
        ("", ""),
    ],
)
def test_cut_observation(text: str, expected: str) -> None:
    assert cut_observation(text) == expected


def test_cut_observation_is_identity_when_nothing_cut_and_partial_optional() -> None:
    text = "Thought: x\nAction: y\n"
    assert cut_observation(text) is text
    assert cut_observation("Action: a\nObs", partial=False) == "Action: a\nObs"
    assert cut_observation("Action: a\nObservation: 1", partial=False) == "Action: a\n"


# fmt: off
FUZZ_PIECES = [
    "Thought:", "Action:", "Action Input:", "Final Answer:", "Answer:", "Observation:", "Obs", "Search[", "]",
    "Finish[", "calculate(", ")", "{", "}", '"action":', "'", '"', FENCE, "**", "__", "*", "_", "\n", "\r\n", " ",
    "\t", "#", "- ", "3", ":", ",", "\\boxed{", "<tool_call>", "\x00", "\udcff", "é", "☃", "Action 2:", "json",
]
# fmt: on


def _fuzz_strings(count: int) -> list[str]:
    rng = random.Random(1234)
    out = []
    for _ in range(count):
        if rng.random() < 0.5:
            out.append("".join(rng.choice(FUZZ_PIECES) for _ in range(rng.randint(0, 30))))
        else:
            out.append("".join(chr(rng.randint(0, 0x2FF)) for _ in range(rng.randint(0, 80))))
    return out


def test_never_raises_on_fuzz() -> None:
    for text in [*_fuzz_strings(2000), None]:
        for tools in (None, TOOLS):
            result = parse_step(text, tools)  # type: ignore[arg-type]
            assert isinstance(result, (Action, FinalAnswer, ParseError))
            if isinstance(result, Action):
                assert isinstance(result.tool, str) and result.tool
                assert isinstance(result.input, (str, dict))
            elif isinstance(result, FinalAnswer):
                assert isinstance(result.text, str) and result.text


HUGE = {
    "prose": "word " * 20_000,
    "spaces": " " * 100_000,
    "newlines": "\n" * 100_000,
    "indented-label": " " * 100_000 + "Action",
    "braces": "{" * 100_000,
    "nested-blob": '{"action": ' * 10_000,
    "open-bracket": "Search[" + "a" * 100_000,
    "parens": ("f(" + ")x" * 500 + "\n") * 100,
    "labels": "Thought: x\n" * 9_000 + "Action: calculate\nAction Input: 1",
    "bare-calls": "foo(bar)\n" * 10_000,
    "fence": FENCE + "\n" + " " * 100_000,
    "sloppy-input": "Action: calculate\nAction Input: {'a': " + "1," * 50_000,
    "final": "Final Answer: " + "x" * 100_000,
    "stars": "*" * 100_000,
}


@pytest.mark.parametrize("name", list(HUGE))
def test_huge_input_is_fast(name: str) -> None:
    text = HUGE[name]
    for tools in (None, TOOLS):
        start = time.perf_counter()
        result = parse_step(text, tools)
        assert time.perf_counter() - start < 0.5, name
        assert isinstance(result, (Action, FinalAnswer, ParseError))


def test_an_unexpected_parser_exception_is_a_parse_error_and_is_logged(monkeypatch, caplog):
    """A parser bug costs the model one turn, but shows in the log with its traceback: a regression must not
    look like a misbehaving model."""
    import logging

    import agents.parsing

    def broken(raw, names):
        raise KeyError("regression")

    monkeypatch.setattr(agents.parsing, "_parse", broken)
    with caplog.at_level(logging.ERROR, logger="agents.parsing"):
        step = parse_step("Action: calculate\nAction Input: 2+2", ["calculate"])
    assert isinstance(step, ParseError) and step.message.startswith("Your reply could not be read.")
    (record,) = [r for r in caplog.records if r.name == "agents.parsing"]
    assert record.levelno == logging.ERROR and record.exc_info and record.exc_info[0] is KeyError


@pytest.mark.parametrize("space", ["\u00a0", "\u202f", "\u2007", "\u3000", "\u200b", "\ufeff", "\t"])
def test_the_parser_and_the_registry_read_a_tool_name_the_same_way(space):
    """One spelling-blind key (tools.registry.normalize_name): a name the registry dispatches, the parser finds."""
    from tools.calculator import calculate
    from tools.registry import ToolRegistry, normalize_name

    written = f"Calculate{space}"
    assert ToolRegistry([calculate]).resolve(written) is not None
    assert canonical_tool(written, ["calculate"]) == "calculate"
    step = parse_step(f"Action: {written}\nAction Input: 2+2", ["calculate"])
    assert isinstance(step, Action) and step.tool == "calculate"
    assert normalize_name(f"wiki{space}pedia_search") == "wikipediasearch"
