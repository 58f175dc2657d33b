"""What the three modes share: run settings, one streamed model call, tool calls, the forced answer.

Each helper is a generator that yields events and *returns* its result, so a mode's loop
reads ``reply = yield from complete(...)`` and stays one screen long.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field, replace

import json_repair

from agents import prompts
from agents.events import Action, Event, FinalAnswer, LLMError, Observation, TokenDelta, Truncated, Usage, Waited
from agents.llm.base import ChatModel, Chunk, LLMFailure, Message, ToolCall, ToolCallDelta, assemble_tool_calls
from agents.parsing import cut_observation, has_format_labels, parse_step
from agents.settings import DEFAULT_MAX_STEPS, DEFAULT_TEMPERATURE, MAX_STEPS_RANGE, PROTOCOLS
from agents.stepping import StepGate, Stopped
from tools.registry import ToolRegistry, normalize_name, truncate

STOP = ["Observation:"]
_LABEL_REACH = 40  # an Observation label ends this many characters into its line at most (agents/parsing._OBS_RE)
_FINAL = re.compile(r"final\s*answer\s*\**\s*:", re.I)


@dataclass(frozen=True)
class RunConfig:
    """Per-run settings shared by all modes (the UI's settings panel maps onto this)."""

    protocol: str = "text"  # "text": the paper's Thought/Action format; "tools": native function calling
    max_steps: int = DEFAULT_MAX_STEPS
    temperature: float | None = DEFAULT_TEMPERATURE
    max_tokens: int | None = None  # per reply; None: the model's default (LLM_MAX_TOKENS)
    observation_chars: int = 1500
    cancel: threading.Event = field(default_factory=threading.Event, compare=False)
    stepper: StepGate | None = field(default=None, compare=False)  # set per mode when the run goes step by step

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {tuple(PROTOCOLS)}, not {self.protocol!r}")
        low, high = MAX_STEPS_RANGE
        if not low <= self.max_steps <= high:
            raise ValueError(f"max_steps must be between {low} and {high}")


def opening(system: str, question: str, notes: Sequence[str] = ()) -> list[Message]:
    """A tool loop's first messages: the system prompt, the question, then each note as one user message.

    Notes are the one way a mode adds to a loop's conversation without a copy of the loop (Reflexion
    gives its next trial the reflections of the failed ones). They come right after the question, so
    without notes the request is the plain mode's, byte for byte; blank notes are left out. A fork
    rebuilds a conversation by running the mode again (``agents/fork.py``): a forkable mode (one whose
    spec offers ``runner``) must pass the same notes again when it is called with the same options.
    """
    messages: list[Message] = [{"role": "system", "content": system},
                               {"role": "user", "content": prompts.question_message(question)}]
    messages.extend({"role": "user", "content": note} for note in notes if note.strip())
    return messages


@dataclass
class Reply:
    """A finished model call: visible text (cut at any hallucinated Observation), reasoning, tool calls."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


def complete(
    model: ChatModel,
    messages: list[Message],
    config: RunConfig,
    *,
    stop: list[str] | None = None,
    tools: list[dict] | None = None,
    answer_only: bool = False,
) -> Generator[Event, None, Reply | None]:
    """Stream one model call as token events; return the :class:`Reply`, or None after an LLMError.

    The text is cut client-side at the first ``Observation`` line even when the server
    honoured ``stop`` (many ignore it), and the stream is abandoned there. A call that fails
    midway returns None, so a reply the server cut off is never parsed into an action or an
    answer; what it streamed is still counted (estimated) in its :class:`Usage`.
    """
    if config.cancel.is_set():
        raise Stopped
    if config.stepper is not None:
        yield from config.stepper.before_call()  # a stepping run waits here, with nothing in flight
    call = _Call(answer_only=answer_only)
    stream = model.stream(messages, stop=stop, max_tokens=config.max_tokens, temperature=config.temperature,
                          tools=tools)
    try:
        yield from _receive(stream, call, stop)
    except LLMFailure as exc:
        if call.text or call.reasoning or call.deltas:  # the call ended early, but what it streamed was paid for
            yield _usage((None, exc.tokens or None), messages, call.output, call.elapsed)
        yield LLMError(str(exc), exc.reason)
        return None
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()  # now, not when garbage-collected: a slot under LLM_MAX_CONCURRENT is freed at once
    return (yield from _finish(call, messages, config, stop))


def _receive(stream: Iterable[Chunk], call: _Call, stop: list[str] | None) -> Generator[Event, None, None]:
    """Take in one call's chunks as events, until the stream ends or the text reaches a hallucinated Observation."""
    for chunk in stream:
        if chunk.news is not None:  # the client waits (its gate, the server's turn, a back-off), or waited
            if chunk.waiting:
                call.restart()  # a reply under way is asked for again: what it streamed is not the reply
            yield chunk.news
            if isinstance(chunk.news, Waited):
                call.start = time.perf_counter()  # the call's own time starts when its wait ends
            continue
        if chunk.reasoning:
            call.reasoning += chunk.reasoning
            yield TokenDelta(chunk.reasoning, "reasoning")
        if chunk.text and (yield from call.add_text(chunk.text, stop)):
            break  # a hallucinated Observation: the rest of the reply is not the model's to write
        call.deltas.extend(chunk.tool_calls)
        call.finish = chunk.finish_reason or call.finish
        if chunk.has_usage:
            call.usage = (chunk.prompt_tokens, chunk.completion_tokens)


def _finish(call: _Call, messages: list[Message], config: RunConfig,
            stop: list[str] | None) -> Generator[Event, None, Reply | None]:
    """A fully received call as its Usage (and Truncated / LLMError when it was cut or empty), then the Reply."""
    reply = Reply(text=cut_observation(call.text) if stop else call.text, reasoning=call.reasoning,
                  tool_calls=assemble_tool_calls(call.deltas))
    empty = not reply.text.strip() and not reply.tool_calls
    usage = _usage(call.usage, messages, call.output, call.elapsed)
    if not empty:  # what the loop sends back, so a fork can rebuild the conversation exactly
        calls = tuple((c.id, c.name, c.arguments) for c in reply.tool_calls)
        usage = replace(usage, reply=reply.text, tool_calls=calls)
    yield usage
    if call.finish == "length":
        limit = f" of {config.max_tokens} tokens" if config.max_tokens else ""
        yield Truncated(f"the reply hit the token limit{limit} and may be cut short")
    if empty:
        why = " (reasoning used the whole token budget)" if call.reasoning else ""
        if call.finish == "length" and not why:
            why = " (it hit the token limit)"
        yield LLMError(f"the model returned an empty answer{why}")
        return None
    return reply


@dataclass
class _Call:
    """What one streamed call has received so far."""

    answer_only: bool = False
    start: float = field(default_factory=time.perf_counter)
    text: str = ""
    reasoning: str = ""
    shown: int = 0
    deltas: list[ToolCallDelta] = field(default_factory=list)
    usage: tuple[int | None, int | None] = (None, None)
    finish: str | None = None
    line: int = 0  # where the line being written starts: every earlier line was checked for an Observation
    settled: bool = False  # the line being written is too long to start an Observation any more
    asked: bool = field(default=False, init=False)  # answer_only as asked (a restart starts from it again)

    def __post_init__(self) -> None:
        self.asked = self.answer_only

    def restart(self) -> None:
        """Forget what was received: the reply is asked for again from its start."""
        fresh = _Call(answer_only=self.asked, start=self.start)
        self.__dict__.update(fresh.__dict__)

    @property
    def output(self) -> str:
        return self.text + self.reasoning

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def add_text(self, piece: str, stop: list[str] | None) -> Generator[Event, None, bool]:
        """Show new text as a token event; True when an ``Observation`` line ends the reply here.

        Only the line being written is looked at (a line cannot start an Observation once it is
        long), so a token costs the same early in a reply and late in a long one."""
        start = len(self.text)
        self.text += piece
        end, cut = len(self.text), None
        if stop:
            cut = self._observation_at(start)
            if cut is not None:
                self.text, end = self.text[:cut], cut
            elif not self.settled:  # a trailing "Obs" may yet become "Obsidian": held back, not an end
                end = self.line + len(cut_observation(self.text[self.line :]))
        if end > self.shown:
            # Once the answer began it stays the answer; before that only new text (and a short
            # overlap for a label split across chunks) can hold "Final Answer:".
            self.answer_only = self.answer_only or bool(_FINAL.search(self.text, max(0, self.shown - 64), end))
            yield TokenDelta(self.text[self.shown : end], "answer" if self.answer_only else "thought")
            self.shown = end
        return cut is not None

    def _observation_at(self, start: int) -> int | None:
        """Where a line that begins an Observation starts, if the text from ``start`` on made one; else None."""
        text = self.text
        while True:
            newline = text.find("\n", max(start, self.line))
            end = len(text) if newline < 0 else newline + 1
            if not self.settled:
                line = text[self.line : end]
                if len(cut_observation(line, partial=False)) < len(line):
                    return self.line
                self.settled = len(line.lstrip(" \t-+>#*_")) > _LABEL_REACH
            if newline < 0:
                return None
            self.line, self.settled = newline + 1, False


def _usage(usage: tuple[int | None, int | None], messages: list[Message], output: str, elapsed: float) -> Usage:
    """Server-reported counts when present; otherwise ~4 characters per token, marked estimated."""
    prompt, completion = usage
    if prompt is not None and completion is not None:
        return Usage(prompt, completion, elapsed)
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    return Usage(prompt if prompt is not None else chars // 4,
                 completion if completion is not None else len(output) // 4, elapsed, estimated=True)


class ToolRunner:
    """Runs actions for one run: repeats are answered from memory, and a third repeat asks to stop.

    :meth:`start` books a call in the reply's order and returns what runs it, so the calls of one native
    reply can run at once (``agents/modes/tool_protocol.py``); :meth:`run` is one call, run now."""

    def __init__(self, registry: ToolRegistry, config: RunConfig) -> None:
        self.registry, self.config = registry, config
        self.seen: Counter[str] = Counter()
        self.results: dict[str, str] = {}
        self._done: dict[str, threading.Event] = {}  # set when the first call of a key has its result

    def key(self, action: Action) -> str:
        value = json.dumps(action.input, sort_keys=True) if isinstance(action.input, dict) else action.input
        return f"{normalize_name(action.tool)}\x00{' '.join(str(value).split()).lower()}"

    def repeats(self, action: Action) -> int:
        """How many times this exact call was made before (0 for a new one)."""
        return self.seen[self.key(action)]

    def replayed(self, action: Action) -> Observation | None:
        """The observation a replay recorded for ``action`` (a fork's :class:`~agents.fork.ReplayRunner`); None:
        run it live. CodeAct asks this of its programs, which no registry tool runs."""
        return None

    def run(self, action: Action) -> Observation:
        return self.start(action)()

    def start(self, action: Action) -> Callable[[], Observation]:
        """Book ``action`` now and return what runs it (in any thread). A repeat runs no tool: it waits for the
        first call's result (one still running, earlier in the same reply) and answers from memory."""
        key = self.key(action)
        self.seen[key] += 1
        tool = self.registry.resolve(action.tool)
        name = tool.name if tool else action.tool
        if self.seen[key] > 1:
            return lambda: self._repeat(key, name)
        done = self._done[key] = threading.Event()
        return lambda: self._call(action, key, name, done)

    def _call(self, action: Action, key: str, name: str, done: threading.Event) -> Observation:
        try:
            result = self.registry.call(action.tool, action.input, stop=self.config.cancel)
            output = self.results[key] = truncate(result.output, self.config.observation_chars)
        finally:
            done.set()
        return Observation(name, output, result.is_error, result.elapsed_s, result.cached)

    def _repeat(self, key: str, name: str) -> Observation:
        done = self._done.get(key)
        while done is not None and not done.wait(0.05) and not self.config.cancel.is_set():
            pass
        return Observation(name, prompts.repeat_call_message(name, self.results.get(key, "")), is_error=True)


def parse_arguments(arguments: str) -> dict | str:
    """Native tool-call arguments: JSON (repaired if sloppy) → dict; anything else stays text."""
    text = (arguments or "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = json_repair.repair_json(text, return_objects=True)
    return value if isinstance(value, dict) else text


Extract = Callable[[str], str | None]  # a mode's own reading of an answer in a reply (None: not found)


def forced_answer(
    model: ChatModel, messages: list[Message], config: RunConfig, *, extract: Extract | None = None, why: str = ""
) -> Generator[Event, None, None]:
    """One last call without tools asking for the best answer now; the answer is marked ``forced`` (``why``: what
    forced it, when not the step budget)."""
    yield from answer_now(model, messages, config, prompts.forced_answer_message(), forced=True, extract=extract,
                          why=why)


REPEATED_FAILURE = "the model wrote the same unreadable reply twice, so it was asked for its answer"


class FormatFailures:
    """A loop's replies that fit no format: one identical to the failed reply before it is not re-prompted again
    (a small model repeats itself for the whole budget); the loop forces its answer instead, saying why."""

    def __init__(self) -> None:
        self._last: str | None = None

    def repeated(self, reply: str) -> bool:
        """Note a failed reply; True when it is the previous failed one again (spacing aside)."""
        text = " ".join(reply.split())
        again, self._last = text == self._last, text
        return again

    def passed(self) -> None:
        """A reply that parsed: the next failure starts afresh."""
        self._last = None


def answer_now(
    model: ChatModel, messages: list[Message], config: RunConfig, prompt: str, *, forced: bool,
    extract: Extract | None = None, why: str = "",
) -> Generator[Event, None, None]:
    """Send ``prompt`` after ``messages`` and turn the reply into the run's :class:`FinalAnswer`.

    ``extract`` reads the answer first where a mode's replies have a form of their own (CodeAct's
    ``final_answer("...")``); otherwise :func:`answer_in` reads it ("" when the reply holds none)."""
    messages = [*messages, {"role": "user", "content": prompt}]
    reply = yield from complete(model, messages, config, stop=STOP, answer_only=True)
    if reply is None:
        return
    text = extract(reply.text) if extract is not None else None
    yield FinalAnswer(text if text is not None else answer_in(reply.text, whole=not forced), forced=forced,
                      why=why if forced else "")


PLAIN_ANSWER_CHARS = 300  # a forced answer longer than this is a paragraph of musing, not an answer


def answer_in(text: str, *, whole: bool = False) -> str:
    """The answer a reply contains: its ``Final Answer:``, else the reply itself; "" when there is none.

    Never the raw step format (a ``Thought:`` / ``Action:`` reply) nor code. Unless ``whole`` (an answer
    asked for again, where any reply is the answer), only a short first paragraph counts: a forced answer
    is asked for as one line, and a paragraph of musing is not an answer the model gave.
    """
    parsed = parse_step(text)
    if isinstance(parsed, Action):
        return ""
    answer = parsed.text.strip() if isinstance(parsed, FinalAnswer) else (text or "").strip()
    if not whole:
        first = answer.split("\n\n")[0].strip()  # a labelled answer's first paragraph; an unlabelled reply whole
        several = first != answer and not isinstance(parsed, FinalAnswer)
        if several or len(first) > PLAIN_ANSWER_CHARS or first.count("\n") > 2:
            return ""
        answer = first
    return "" if has_format_labels(answer) or "```" in answer else answer


_THOUGHT_LABEL = re.compile(r"^\W*thought\s*\d*\s*\W*:\W*", re.I | re.M)


def split_final_answer(text: str) -> tuple[str, str | None]:
    """Split a reply at its last ``Final Answer:`` label → (reasoning before it, answer or None).

    The reasoning loses its ``Thought:`` labels and markdown; the answer loses surrounding bold.
    """
    matches = list(_FINAL.finditer(text or ""))
    if not matches:
        return (text or "").strip(), None
    last = matches[-1]
    before = _THOUGHT_LABEL.sub("", text[: last.start()]).strip().rstrip("*").strip()
    answer = text[last.end() :].strip().strip("*").strip()
    return before, answer
