"""parse_code: what models write around a program, table-tested; never raises, stays linear."""

from __future__ import annotations

import time

import pytest

from agents.events import FinalAnswer, ParseError
from agents.parsing_code import EMPTY_CODE, NO_CODE, CodeStep, close_code, final_from_code, parse_code

TOOLS = ["calculate", "wikipedia_search"]

CASES = [
    ("tags", "Thought: add\n<code>\nprint(1 + 1)\n</code>", CodeStep("add", "print(1 + 1)")),
    ("tags-open-at-stop", "Thought: add\n<code>\nx = 1\nprint(x)\n", CodeStep("add", "x = 1\nprint(x)")),
    ("tags-upper", "Thought: a\n<CODE>print(2)</CODE>", CodeStep("a", "print(2)")),
    ("tags-with-fence-inside", "Thought: a\n<code>\n```python\nprint(3)\n```\n</code>", CodeStep("a", "print(3)")),
    ("fence-py", "Thought: b\n```py\na = 1\nprint(a)\n```", CodeStep("b", "a = 1\nprint(a)")),
    ("fence-python-end-code", "Thought: b\nCode:\n```python\nprint(4)\n```<end_code>", CodeStep("b", "print(4)")),
    ("fence-bare", "**Thought:** c\n```\nprint(5)\n```", CodeStep("c", "print(5)")),
    ("fence-unclosed", "Thought: c\n```py\nprint(6)", CodeStep("c", "print(6)")),
    ("fence-indented-body", "Thought: d\n```py\n    x = 1\n    print(x)\n```", CodeStep("d", "x = 1\nprint(x)")),
    ("two-blocks-run-as-one", "Thought: e\n```py\nx = 2\n```\nthen\n```py\nprint(x)\n```",
     CodeStep("e", "x = 2\n\nprint(x)")),
    ("bare-program", "r = calculate('1+1')\nprint(r)", CodeStep("", "r = calculate('1+1')\nprint(r)")),
    ("bare-after-thought", "Thought: compute it\nr = calculate('1+1')\nprint(r)",
     CodeStep("compute it", "r = calculate('1+1')\nprint(r)")),
    ("bare-final-answer", "final_answer(42)", CodeStep("", "final_answer(42)")),
    ("bare-prints-the-words", 'print("Final answer:", 3)', CodeStep("", 'print("Final answer:", 3)')),
    ("final-answer-line", "Thought: I know.\nFinal Answer: Paris", FinalAnswer("Paris")),
    ("final-answer-inline", "Thought: so the Final Answer: 7", FinalAnswer("7")),
    ("prose-that-parses", "Paris (France)", ParseError(NO_CODE, "Paris (France)")),
    ("prose", "I am not sure what to do.", ParseError(NO_CODE, "I am not sure what to do.")),
    ("empty-block", "Thought: x\n<code>\n</code>", ParseError(EMPTY_CODE, "Thought: x\n<code>\n</code>")),
    ("nothing", "", ParseError(NO_CODE, "")),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parse_code(text, expected):
    assert parse_code(text, TOOLS) == expected


def test_hostile_input_is_linear_and_never_raises():
    for text in ("<code>" * 20000, "```py\n" * 20000, "(" * 100000, "x = 1\n" * 20000, "\x00\ud800" * 1000, None):
        start = time.perf_counter()
        result = parse_code(text, TOOLS)  # type: ignore[arg-type]
        assert isinstance(result, CodeStep | FinalAnswer | ParseError) and time.perf_counter() - start < 2


def test_close_code_and_final_from_code():
    assert close_code("Thought: a\n<code>\nx = 1\n") == "Thought: a\n<code>\nx = 1\n</code>"
    assert close_code("Thought: a\n<code>x</code>") == "Thought: a\n<code>x</code>"
    assert final_from_code("Thought: ok\n<code>\nfinal_answer('396')\n</code>") == "396"
    assert final_from_code("<code>\nfinal_answer(x)\n</code>") is None and final_from_code("Final Answer: 3") is None
