"""Turn one model reply into the step it asks for: an Action, a Final Answer, or a ParseError.

Lenient, because small open models rarely follow the ReAct format to the letter: they bold or number the labels,
write ``Search[x]`` or ``calculate(2+2)`` or a JSON blob, fence and quote their inputs, and run past the stop
sequence. Each is a step the model plainly meant. What is really missing becomes a :class:`ParseError` whose
message can be sent back verbatim. Everything here is linear in the input (bounded regexes, JSON repair on a
capped slice), so a 100 KB reply parses in milliseconds.
"""

from __future__ import annotations

import bisect
import functools
import json
import logging
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from agents.events import Action, FinalAnswer, ParseError
from agents.parsing_text import clean_input, clean_name, drop_stray_fence, load_dict, lowered, strip_md, unquote
from tools.registry import ANSWER_WORDS, NOOP_WORDS, PAPER_WORDS, normalize_name

log = logging.getLogger(__name__)

__all__ = ["ParsedStep", "canonical_tool", "cut_observation", "format_instructions", "has_format_labels", "parse_step"]

ParsedStep = Action | FinalAnswer | ParseError

# Indentation (matched atomically via a look-ahead + back-reference, so it is never backtracked), then
# bullets, headings, bold/italics. Every later quantifier is bounded: no regex here can go quadratic.
_INDENT = r"(?=(?P<ind>[ \t]*))(?P=ind)"
_MARKS = _INDENT + r"(?:[-+>#][ \t]{0,3}){0,6}(?:[*_]{1,3}[ \t]{0,2})?"
_AFTER = r"[ \t]{0,3}(?:\d{1,4}[ \t]{0,3})?[*_]{0,3}[ \t]{0,3}"  # "Thought 3", "**Action**"
_LABEL_RE = re.compile(
    r"^" + _MARKS + r"(?P<label>(?P<fin>final[ \t_-]{0,3}answer)|action[ \t_-]{0,3}input|tool[ \t_-]{0,3}input"
    r"|action|act|thoughts?|answer)" + _AFTER + r"(?(fin)(?::|(?=\r?$))|:)(?:[*_]{1,3}(?=[ \t\r]|$))?[ \t]{0,3}",
    re.IGNORECASE | re.MULTILINE,
)
_OBS_RE = re.compile(r"^" + _MARKS + r"observation" + _AFTER + r"(?::|\r?$)", re.IGNORECASE | re.MULTILINE)
_INLINE_FINAL_RE = re.compile(r"final[ \t]{0,3}answer(?:[ \t]{1,3}is)?[ \t]{0,3}[*_]{0,3}[ \t]{0,3}:", re.IGNORECASE)
_BOXED_RE = re.compile(r"\\boxed\{([^{}\n]{1,200})\}")
_BLOB_RE = re.compile(r"\{\s{0,20}[\"']?(?:action|name|tool|tool_name|function)[\"']?\s{0,5}:", re.IGNORECASE)
_BARE_RE = re.compile(
    r"^" + _INDENT + r"[`*]{0,2}(?P<call>(?P<name>[A-Za-z_][\w.-]{0,40})(?P<open>[\[(])[^\n]*[\])])[`*]{0,2}[ \t\r]*$",
    re.M,
)
_CALL_RE = re.compile(r"(?P<name>[^\[\](){}:\n]{1,80}?)[ \t]{0,3}(?P<open>[\[(])(?P<args>.*)(?P<close>[\])])", re.S)
_COLON_RE = re.compile(r"(?P<name>[A-Za-z_][\w.-]{0,60}(?: [\w.-]{1,40}){0,2})[ \t]{0,3}:[ \t]{0,3}(?P<args>.+)", re.S)
_WRAPPER_RE = re.compile(r"```[\w+#.-]{0,20}|</?[\w-]{1,30}>")
_KWARG_RE = re.compile(r"[A-Za-z_]\w{0,40}[ \t]{0,3}=(?!=)")
_KWARG_SPLIT_RE = re.compile(r",[ \t]{0,3}(?=[A-Za-z_]\w{0,40}[ \t]{0,3}=(?!=))")

_NAME_KEYS = ("action", "name", "tool", "tool_name", "function")
_INPUT_KEYS = ("action_input", "arguments", "tool_input", "input", "parameters", "args")
_FINAL_NAMES, _NOOP_NAMES, _PAPER_NAMES = ANSWER_WORDS, NOOP_WORDS, PAPER_WORDS  # tools/registry.py declares them
_ALIASES = {"search": "wikipediasearch"}  # the paper's Search[] was a Wikipedia search


class _Seg(NamedTuple):
    """One labelled stretch of the reply: ``kind`` from ``start`` (label) / ``body`` (content) to ``end``."""

    kind: str
    start: int
    body: int
    end: int


def parse_step(text: str, tools: Iterable[str] | None = None) -> ParsedStep:
    """Read one model reply as the step it asks for. Never raises: anything unreadable is a ParseError."""
    raw = ""
    try:
        raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else "" if text is None else str(text)
        return _parse(raw, _names(tools))
    except Exception:  # a parser bug must cost the model one turn, never the run
        # ...but it must show in the log: otherwise a parser regression looks like a misbehaving model.
        log.exception("parse_step failed on a %d-character reply", len(raw))
        return _error("Your reply could not be read.", None, raw)


def canonical_tool(name: str, tools: Iterable[str] | None) -> str:
    """The registered spelling of ``name`` (case, spaces, ``_`` and ``-`` ignored), else ``name`` as written.

    An unknown name is returned unchanged on purpose: the loop answers it with an observation
    listing the real tools, which teaches the model more than a format error would.
    """
    names = _names(tools)
    return (_lookup(name, names) or name) if names else name


def format_instructions(tools: Iterable[str] | None = None) -> str:
    """The reply format, spelled out for corrective messages (and usable in prompts)."""
    names = _names(tools)
    action = f"<one of: {', '.join(names)}>" if names else "<tool name>"
    return (
        f"Thought: <your reasoning>\nAction: {action}\nAction Input: <the input for that tool>\n"
        "or\nThought: <your reasoning>\nFinal Answer: <your answer>"
    )


def cut_observation(text: str, *, partial: bool = True) -> str:
    """Drop a hallucinated continuation: everything from the first line that starts an Observation.

    Models often keep writing past the stop sequence and invent the tool's result. Returns
    ``text`` itself when nothing is cut, so ``len(cut) < len(text)`` means "the model began an
    Observation". With ``partial`` a last line that is a bare prefix of it (``Obs``, ``Observ``,
    as a stop sequence leaves it) is cut too; streaming callers may pass ``partial=False`` since
    more tokens could still turn ``Obs`` into ``Obscure``.
    """
    if not isinstance(text, str):
        return ""
    match = _OBS_RE.search(text)
    if match:
        return text[: match.start()]
    if partial:
        start = text.rfind("\n") + 1
        word = text[start:].strip().strip("*_`#>- \t\r").lower()
        if len(word) >= 3 and "observation".startswith(word):
            return text[:start]
    return text


def has_format_labels(text: str) -> bool:
    """True when ``text`` holds a line of the step format other than the answer's own label (``Thought:``,
    ``Action:``, ``Action Input:``, ``Observation:``): a raw reply, not an answer."""
    if not isinstance(text, str):
        return False
    return bool(_OBS_RE.search(text)) or any(_kind(m.group("label")) != "final" for m in _LABEL_RE.finditer(text))


def _parse(raw: str, names: list[str] | None) -> ParsedStep:
    """Find the first action-like and the first answer-like thing; whichever comes first wins."""
    body = cut_observation(raw.replace("\r\n", "\n").replace("\r", "\n"))
    if not body.strip():
        return _error("Your reply was empty.", names, raw)
    segs = _segments(body, fence_aware=True)
    if not any(s.kind in ("action", "final") for s in segs):
        segs = _segments(body, fence_aware=False)  # the whole reply may sit inside one code fence
    act = next((s for s in segs if s.kind == "action" and not _is_noop(body, s)), None)
    fin = next((s for s in segs if s.kind == "final"), None)
    limit = min([s.start for s in (act, fin) if s is not None] + [len(body)])
    blob = _find_blob(body, limit)
    bare = _find_bare(body, blob[0] if blob else limit, names)
    if bare:  # found before the blob, the labels and everything else
        return _spec_step(bare[1], None, "", _thought(body, segs, bare[0]), names, raw)
    if blob:
        return _blob_step(blob[1], _thought(body, segs, blob[0]), names, raw)
    if act is not None and (fin is None or act.start < fin.start):
        content = body[act.body : act.end].strip()
        given = _given_input(body, segs, segs.index(act))
        return _action_step(content, given, _thought(body, segs, act.start), names, raw)
    if fin is not None:
        return _answer_step(body[fin.body : fin.end], names, raw)
    inline = _INLINE_FINAL_RE.search(body)
    if inline:
        return _answer_step(body[inline.end() :], names, raw)
    boxed = list(_BOXED_RE.finditer(body))  # math-tuned models answer in \boxed{...}: the last one counts
    if boxed:
        return _answer_step(boxed[-1].group(1), names, raw)
    return _error("Your reply had no Action or Final Answer.", names, raw)


def _segments(body: str, *, fence_aware: bool) -> list[_Seg]:
    """Split the reply at its labels; labels inside a ``` fence are content (e.g. ``answer: int = 1``)."""
    fences = [m.start() for m in re.finditer("```", body)] if fence_aware else []
    labels = [m for m in _LABEL_RE.finditer(body) if bisect.bisect_left(fences, m.start()) % 2 == 0]
    segs = [_Seg("text", 0, 0, labels[0].start() if labels else len(body))]
    for i, m in enumerate(labels):
        end = labels[i + 1].start() if i + 1 < len(labels) else len(body)
        segs.append(_Seg(_kind(m.group("label")), m.start(), m.end(), end))
    return segs


@functools.lru_cache(maxsize=256)
def _kind(label: str) -> str:
    """Map a label as written (``Final_Answer``, ``Act``, ``Thoughts``…) to one of four kinds."""
    key = normalize_name(label)
    if key in ("finalanswer", "answer"):
        return "final"
    if key.endswith("input"):
        return "input"
    return "action" if key.startswith("act") else "thought"


def _is_noop(body: str, seg: _Seg) -> bool:
    """``Action: None`` before a Final Answer means "no action", not a tool called None."""
    return normalize_name(clean_name(body[seg.body : seg.end].strip().partition("\n")[0])) in _NOOP_NAMES


def _given_input(body: str, segs: list[_Seg], i: int) -> str | None:
    """The Action Input after action ``segs[i]`` (before the next action or answer), if one was written."""
    for seg in segs[i + 1 :]:
        if seg.kind == "input":
            return body[seg.body : seg.end].strip()
        if seg.kind in ("action", "final"):
            break
    return None


def _thought(body: str, segs: list[_Seg], pos: int) -> str:
    """The reasoning before ``pos``: Thought sections plus unlabelled prose (prompts often end in "Thought:")."""
    parts = [body[s.body : min(s.end, pos)].strip() for s in segs if s.kind in ("thought", "text") and s.start < pos]
    lines = "\n".join(p for p in parts if p).strip().split("\n")
    while lines and _WRAPPER_RE.fullmatch(lines[-1].strip()):  # the opener of a fenced JSON action, <tool_call>
        lines.pop()
    while lines and _WRAPPER_RE.fullmatch(lines[0].strip()):  # a reply wrapped whole in a fence
        lines.pop(0)
    return strip_md("\n".join(lines))


def _action_step(content: str, given: str | None, thought: str, names: list[str] | None, raw: str) -> ParsedStep:
    """An ``Action:`` section: a JSON blob, or a spec line (name, call, bracket, ``name: input``) plus input."""
    if content.startswith(("{", "```")):
        blob = _find_blob(content, len(content))
        if blob:
            return _blob_step(blob[1], thought, names, raw)
    spec, _, rest = content.partition("\n")  # the spec may sit on the line after "Action 3:"
    return _spec_step(spec, given, rest.strip(), thought, names, raw)


def _spec_step(spec: str, given: str | None, rest: str, thought: str, names: list[str] | None, raw: str) -> ParsedStep:
    """Resolve one action spec; ``given`` is the Action Input, ``rest`` any unlabelled lines below the spec."""
    name, args, form = _split_spec(strip_md(spec).strip("`"))
    tool = canonical_tool(clean_name(name), names)
    if not tool:
        return _error("Your Action did not name a tool.", names, raw)
    if form == "bracket" and not args.strip() and given is None:
        empty = f"Your action {clean_name(name)}[] had an empty input."
        return _error("Your Final Answer was empty." if _is_final(tool, names) else empty, names, raw)
    value: str | dict | None
    if form == "bracket" and args.strip():
        value = args
    elif given is not None:
        value = given  # a parenthesis next to the name was a description, a colon part a note
    elif form in ("paren", "colon", "bracket"):
        value = _call_args(args) if form == "paren" else args
    else:
        value = rest or None
    if _is_final(tool, names):
        return _answer_step(value or "", names, raw)
    if value is None:
        return _error(f"Your Action '{tool}' had no Action Input.", names, raw)
    return Action(tool=tool, input=clean_input(value) if isinstance(value, str) else value, thought=thought)


def _split_spec(spec: str) -> tuple[str, str, str]:
    """``Search[x]`` → bracket, ``calculate(2+2)`` → paren, ``wikipedia: England`` → colon, else plain."""
    call = _CALL_RE.fullmatch(spec.strip())
    if call and {"[": "]", "(": ")"}[call.group("open")] == call.group("close"):
        return call.group("name"), call.group("args"), "bracket" if call.group("open") == "[" else "paren"
    colon = _COLON_RE.fullmatch(spec.strip())
    if colon:
        return colon.group("name"), colon.group("args"), "colon"
    return spec, "", "plain"


def _call_args(args: str) -> str | dict:
    """Arguments written like code: ``"2+2"`` → ``2+2``, ``query="Paris", n=3`` → ``{"query": "Paris", "n": 3}``."""
    args = args.strip()
    if not _KWARG_RE.match(args):
        return args
    pairs = (part.partition("=") for part in _KWARG_SPLIT_RE.split(args))
    return {key.strip(): _scalar(value.strip()) for key, _, value in pairs}


def _scalar(text: str) -> Any:
    """A keyword argument's value: JSON when it is JSON (numbers, "strings"), else the text unquoted."""
    try:
        return json.loads(text)
    except ValueError:
        return unquote(text)


def _find_blob(text: str, limit: int) -> tuple[int, dict] | None:
    """The first JSON object (starting before ``limit``) that names a tool and carries its input."""
    for tries, match in enumerate(_BLOB_RE.finditer(text, 0, limit)):
        data = lowered(load_dict(text, match.start()))
        if data and isinstance(data.get("function"), dict):
            data = lowered(data["function"])
        if data and any(isinstance(data.get(k), str) for k in _NAME_KEYS) and any(k in data for k in _INPUT_KEYS):
            return match.start(), data
        if tries >= 3:
            break
    return None


def _blob_step(data: dict, thought: str, names: list[str] | None, raw: str) -> ParsedStep:
    """``{"action": ..., "action_input": ...}`` and its spellings (``name``/``arguments``, ``tool``/``tool_input``)."""
    name = next(data[k] for k in _NAME_KEYS if isinstance(data.get(k), str))
    value = data[next(k for k in _INPUT_KEYS if k in data)]
    tool = canonical_tool(clean_name(name), names)
    if _is_final(tool, names):
        return _answer_step(value, names, raw)
    if not tool:
        return _error("Your Action did not name a tool.", names, raw)
    if isinstance(value, str):
        value = clean_input(value)
    elif not isinstance(value, dict):
        value = "" if value is None else json.dumps(value, ensure_ascii=False)
    return Action(tool=tool, input=value, thought=thought)


def _find_bare(body: str, limit: int, names: list[str] | None) -> tuple[int, str] | None:
    """A line that is only a call: the paper's ``Search[x]``, or ``tool(args)`` for a known tool.

    Without a tool list any ``name(args)`` line counts; with one, the name must resolve, so prose
    such as ``f(x)`` in a thought is not mistaken for an action.
    """
    known = {normalize_name(n) for n in names or ()}
    for match in _BARE_RE.finditer(body, 0, limit):
        key, paren = normalize_name(match.group("name")), match.group("open") == "("
        allowed = (key in _PAPER_NAMES and not paren) or (names is None and paren)
        if allowed or key in known or _ALIASES.get(key) in known:
            return match.start(), match.group("call")
    return None


def _answer_step(value: Any, names: list[str] | None, raw: str) -> ParsedStep:
    """A Final Answer, trimmed of whitespace and the bold models put around it; empty is an error."""
    if isinstance(value, dict):
        value = next(iter(value.values())) if len(value) == 1 else json.dumps(value, ensure_ascii=False)
    text = unquote(strip_md(drop_stray_fence(str(value).strip()))) if value is not None else ""
    if not text:
        return _error("Your Final Answer was empty.", names, raw)
    return FinalAnswer(text=text)


def _is_final(tool: str, names: list[str] | None) -> bool:
    """``final_answer``/``Finish``/``Final Answer`` as a tool means "answer", unless really registered."""
    return normalize_name(tool) in _FINAL_NAMES and not (names and tool in names)


def _lookup(name: str, names: list[str]) -> str | None:
    """The registered name matching ``name`` loosely, or via the paper alias (Search → wikipedia_search)."""
    key = normalize_name(name)
    by_key = {normalize_name(n): n for n in names}
    return by_key.get(key) or by_key.get(_ALIASES.get(key, "\0"))


def _names(tools: Iterable[Any] | None) -> list[str] | None:
    """Tool names from names, Tool objects or a registry; ``None`` when no tool list was given."""
    if tools is None:
        return None
    if isinstance(tools, str):
        return [tools]
    return [str(getattr(t, "name", t)) for t in tools]


def _error(problem: str, names: list[str] | None, raw: str) -> ParseError:
    """A ParseError whose message says what was wrong and the exact format, ready to send back."""
    return ParseError(message=f"{problem} Reply in exactly this format:\n{format_instructions(names)}", text=raw)
