"""A CodeAct reply → the program it asks to run (:class:`CodeStep`), its answer, or a :class:`ParseError`.

Lenient like :mod:`agents.parsing`: the prompt asks for ``Thought:`` and a program between ``<code>``
and ``</code>`` (smolagents' format since 1.19), but models also write Markdown fences (```` ```py ````,
```` ```python ````, a bare ```` ``` ````), the older ``<end_code>`` marker, a code block left open
(a server that honours the ``</code>`` stop sequence ends the reply just before it), or a bare program
with no markup at all. All of them run. Several blocks in one reply run as one program, in order.
A reply with no program but a ``Final Answer:`` line is an answer. Anything else is a ParseError whose
message tells the model the format again. Never raises.
"""

from __future__ import annotations

import ast
import logging
import re
from dataclasses import dataclass

from agents.events import FinalAnswer, ParseError

log = logging.getLogger(__name__)

OPEN, CLOSE = "<code>", "</code>"
NO_CODE = ("Your reply had no program. Write a Thought, then one Python program between <code> and </code>; "
           "call final_answer(...) in it when you know the answer.")
EMPTY_CODE = "Your code block was empty. Write the program between <code> and </code>."
_TAG = re.compile(r"<code>(.*?)(?:</code>|\Z)", re.I | re.S)
_FENCE = re.compile(r"^[ \t]{0,3}(?P<tick>`{3,}|~{3,})[ \t]{0,3}(?:py|python3?|py3)?[ \t]*\n(?P<body>.*?)"
                    r"(?:^[ \t]{0,3}(?P=tick)[`~]*[ \t]*(?:<end_code>)?[ \t]*$|\Z)", re.I | re.S | re.M)
_END_CODE = re.compile(r"<end_code>|<end_of_code>", re.I)
_THOUGHT = re.compile(r"^\W{0,6}(?:thought|code)\s{0,3}\d{0,3}\s{0,3}\W{0,3}:\W{0,3}", re.I | re.M)
_FINAL_LINE = re.compile(r"^[ \t>*_#-]{0,6}final[ \t_]{0,3}answer[ \t]{0,3}\**[ \t]{0,3}:", re.I | re.M)
_FINAL = re.compile(r"final[ \t_]{0,3}answer[ \t]{0,3}\**[ \t]{0,3}:", re.I)
_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.For, ast.While,
               ast.FunctionDef, ast.With, ast.Try)
MAX_BARE_START = 12  # a bare program may start after this many lines of prose at most


@dataclass(frozen=True)
class CodeStep:
    """The program a reply asks to run, and the thought written before it."""

    thought: str
    code: str


def parse_code(text: str, tools: list[str] | tuple[str, ...] = ()) -> CodeStep | FinalAnswer | ParseError:
    """Read one CodeAct reply. ``tools`` (the callable tool names) help tell a bare program from prose."""
    raw = "" if text is None else str(text)
    try:
        return _parse(raw.replace("\r\n", "\n"), tools)
    except Exception:  # a parser bug must not end the run: the model is asked again, and the log shows it
        log.exception("parse_code failed on %r", raw[:200])
        return ParseError(NO_CODE, raw)


def _parse(text: str, tools: list[str] | tuple[str, ...]) -> CodeStep | FinalAnswer | ParseError:
    blocks = _blocks(text)
    if blocks is not None:
        start, bodies = blocks
        code = "\n\n".join(b for b in bodies if b.strip())
        if not code.strip():
            return ParseError(EMPTY_CODE, text)
        return CodeStep(_thought(text[:start]), code)
    # A "Final Answer:" line, then a bare program, then "Final Answer:" anywhere (a program may print the words).
    for step in (_answer(text, _FINAL_LINE), _bare_program(text, tools), _answer(text, _FINAL)):
        if step is not None:
            return step
    return ParseError(NO_CODE, text)


def _answer(text: str, label: re.Pattern[str]) -> FinalAnswer | None:
    matches = list(label.finditer(text))
    answer = text[matches[-1].end():].strip().strip("*").strip() if matches else ""
    return FinalAnswer(answer) if answer else None


def _blocks(text: str) -> tuple[int, list[str]] | None:
    """Where the first code block starts, and every block's code: ``<code>`` tags if any, else fences."""
    tags = list(_TAG.finditer(text))
    if tags:
        return tags[0].start(), [_unfence(m.group(1)) for m in tags]
    fences = list(_FENCE.finditer(text))
    if fences:
        return fences[0].start(), [_dedent(_END_CODE.sub("", m.group("body"))) for m in fences]
    return None


def _unfence(body: str) -> str:
    """The code inside a ``<code>`` tag, which some models fence as well."""
    inner = _FENCE.search(body)
    if inner and not body[: inner.start()].strip():
        body = inner.group("body")
    return _dedent(_END_CODE.sub("", body))


def _dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code.strip("\n")).rstrip()


def _thought(before: str) -> str:
    """The reasoning before the code, without its ``Thought:`` / ``Code:`` labels and Markdown emphasis."""
    return _THOUGHT.sub("", before).strip().strip("*").strip()


def _bare_program(text: str, tools: list[str] | tuple[str, ...]) -> CodeStep | None:
    """A reply that is a program with no markup (perhaps after a few lines of prose), or None."""
    lines = text.split("\n")
    known = {*tools, "print", "final_answer"}
    for i in range(min(len(lines), MAX_BARE_START)):
        candidate = "\n".join(lines[i:]).strip()
        if not candidate:
            return None
        if not _THOUGHT.match(lines[i]) and _is_program(candidate, known):  # "Thought: x" parses as Python
            return CodeStep(_thought("\n".join(lines[:i])), candidate)
    return None


def _is_program(code: str, known: set[str]) -> bool:
    """Valid Python that does something a program does: a statement, or a call of a tool, print or final_answer.

    "Paris (France)" parses as a call too; a call counts only when it names a known function."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, _STATEMENTS):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in known:
            return True
    return False


def close_code(text: str) -> str:
    """The reply as it goes back into the conversation: a block left open at the stop sequence is closed."""
    low = text.lower()
    opened = low.rfind(OPEN)
    if opened >= 0 and low.find(CLOSE, opened) < 0:
        return text.rstrip() + "\n" + CLOSE
    return text


def final_from_code(text: str) -> str | None:
    """The answer of a ``final_answer(<literal>)`` in a reply, read without running anything; None if none."""
    step = parse_code(text)
    if not isinstance(step, CodeStep):
        return None
    try:
        tree = ast.parse(step.code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "final_answer"
                and node.args and isinstance(node.args[0], ast.Constant)):
            return str(node.args[0].value).strip()
    return None
