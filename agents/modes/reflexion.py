"""Reflexion (Shinn et al., 2023): ReAct, judged after each trial; a failed trial is reflected upon, and the
reflections are given to the next trial.

Each trial is the ``react`` mode itself, the reflections added through the loops' one hook (``notes``), so
Reflexion adds no loop of its own. The evaluator, the events and the trace it leaves are described in
docs/modes.md ("Adding messages to a loop, and Reflexion"); what it shows a learner in docs/modes.md.
A run has several conversations, so it cannot be forked (its spec offers no ``runner``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace

from agents import prompts
from agents.correctness import clean_expected, judge
from agents.events import (
    GRADED,
    SELF_CHECK,
    Action,
    Evaluation,
    Event,
    FinalAnswer,
    LLMError,
    Observation,
    ParseError,
    Reflection,
    Thought,
    Trial,
)
from agents.llm.base import ChatModel, Message
from agents.modes.acting import react
from agents.modes.base import RunConfig, complete
from agents.modes.registry import ModeSpec, RunOption, register
from tools.registry import ToolRegistry

DEFAULT_TRIALS = 3
MAX_TRIALS = 10
TRIALS = RunOption("trials", "Reflexion trials", 1, MAX_TRIALS, DEFAULT_TRIALS, "Attempts Reflexion may make")
MEMORY = 3  # reflections kept for the next trial (the paper bounds its memory to 1-3)
LESSON = "Lesson learned: "  # a reflection carried to a follow-up (not "Reflection:", which an answer must not echo)
OBSERVATION_CHARS = 300  # an observation as the evaluator and the reflection see it
TRIAL_CHARS = 6000  # a whole trial as they see it (its start and its end are kept)
REFLECTION_CHARS = 800
_VERDICT = re.compile(r"\bcorrect\W{0,3}\s*(yes|no)\b", re.I)
_YES_NO = re.compile(r"\b(yes|no)\b", re.I)
_WHY = re.compile(r"^\W*why\W*:[\s*_]*", re.I)
_REFLECTION_LABEL = re.compile(r"^\W*reflection\s*\W*:\s*", re.I)
_MEMORY_LABEL = re.compile(r"\breflections?\s{0,3}:", re.I)
ECHO_CHARS = 60  # an answer holding this much of a reflection's opening echoes the memory


@dataclass
class Attempt:
    """One trial as the evaluator and the reflection see it: its transcript, answer and error."""

    lines: list[str] = field(default_factory=list)
    answer: FinalAnswer | None = None
    error: LLMError | None = None

    def note(self, event: Event) -> None:
        """Add what the model wrote or was told in this trial to its transcript."""
        if isinstance(event, Thought):
            self.lines.append(f"Thought: {event.text}")
        elif isinstance(event, Action):
            value = json.dumps(event.input, ensure_ascii=False) if isinstance(event.input, dict) else event.input
            self.lines.append(f"Action: {event.tool}[{value}]")
        elif isinstance(event, Observation):
            self.lines.append(f"Observation: {_cut(event.output, OBSERVATION_CHARS)}")
        elif isinstance(event, ParseError):
            self.lines.append("(a reply in the wrong format; the model was asked again)")

    @property
    def given(self) -> str | None:
        """The trial's answer, None when it gave none (an empty forced answer is none)."""
        return self.answer.text if self.answer is not None and self.answer.text.strip() else None

    @property
    def transcript(self) -> str:
        lines = [*self.lines]
        forced = " (forced: the step budget ran out)" if self.answer is not None and self.answer.forced else ""
        lines.append(f"Final Answer{forced}: {self.given}" if self.given is not None else f"(no final answer{forced})")
        text = "\n".join(lines)
        if len(text) <= TRIAL_CHARS:
            return text
        head = TRIAL_CHARS // 3
        return f"{text[:head]}\n[… the middle of the attempt is left out …]\n{text[-(TRIAL_CHARS - head):]}"


def reflexion(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig, *,
              trials: int = DEFAULT_TRIALS, expected: str | None = None) -> Iterator[Event]:
    """Up to ``trials`` ReAct trials, each judged (against ``expected`` when given, else by the model), the
    failed ones reflected upon; ends with the last trial's answer."""
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_TRIALS:
        raise ValueError(f"the number of Reflexion trials must be a whole number from 1 to {MAX_TRIALS}")
    expected = clean_expected(expected)
    memory: list[str] = carried(getattr(model, "earlier", ()))[-MEMORY:]  # a follow-up keeps what it learned
    attempt = Attempt()
    for n in range(1, trials + 1):
        yield Trial(n, trials)
        notes = [memory_note(memory)] if memory else []
        attempt = yield from _run_trial(react(question, model, registry, config, notes=notes), memory)
        if attempt.error is not None:
            return
        verdict = yield from evaluate(question, attempt, expected, model, config)
        if verdict is None:
            return
        yield verdict
        if verdict.correct or n == trials:
            break
        reflection = yield from reflect(question, attempt, verdict, model, config)
        if reflection is None:
            return
        yield Reflection(reflection)
        memory = [*memory, reflection][-MEMORY:]
    yield attempt.answer if attempt.answer is not None else LLMError("the last trial gave no answer")


def _run_trial(events: Iterator[Event], memory: list[str]) -> Generator[Event, None, Attempt]:
    """Pass a trial's events on, holding back its answer (the run gives one, at its end); return the trial.

    An "answer" that echoes the reflections it was given is the model musing over its memory, not an
    answer: the trial gave none (its text is emptied, its ``forced`` flag kept)."""
    attempt = Attempt()
    for event in events:
        if isinstance(event, FinalAnswer):
            attempt.answer = replace(event, text="") if _echoes(event.text, memory) else event
            continue
        if isinstance(event, LLMError):
            attempt.error = event
        attempt.note(event)
        yield event
    return attempt


def evaluate(question: str, attempt: Attempt, expected: str | None, model: ChatModel,
             config: RunConfig) -> Generator[Event, None, Evaluation | None]:
    """The trial's verdict: exact match against ``expected``, else the model's own check (None: that call failed)."""
    answer = attempt.given
    if expected is not None:
        verdict = judge(answer, expected, question)
        same = "the same number as" if verdict.method == "number" else "an exact match with"
        reason = (f"{same} the expected answer" if verdict.correct else
                  "no answer to grade" if answer is None else f"not {same} the expected answer")
        return Evaluation(verdict.correct, GRADED, reason, answer)
    if answer is None:
        return Evaluation(False, SELF_CHECK, "the trial gave no answer to check", answer)
    text = prompts.template("reflexion_check").safe_substitute(
        question=question.strip(), trial=attempt.transcript, answer=answer)
    reply = yield from complete(model, [{"role": "user", "content": text}], config)
    if reply is None:
        return None
    correct, why = read_check(reply.text)
    return Evaluation(correct, SELF_CHECK, why, answer)


def read_check(text: str) -> tuple[bool, str]:
    """The model's check → (correct, why). Only a clear "yes" confirms the answer; anything unclear does not."""
    match = _VERDICT.search(text) or _YES_NO.search(text)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    why = next((_WHY.sub("", line) for line in lines if _WHY.match(line)), "")
    if match is None:
        return False, f"its check gave no clear yes or no: {_cut(lines[0] if lines else '', 200)}"
    correct = match.group(1).lower() == "yes"
    return correct, _cut(why or ("it says the answer is right" if correct else "it says the answer is wrong"), 300)


def reflect(question: str, attempt: Attempt, verdict: Evaluation, model: ChatModel,
            config: RunConfig) -> Generator[Event, None, str | None]:
    """One self-reflection call on a failed trial → the reflection, tidied (None: the call failed)."""
    text = prompts.template("reflexion").safe_substitute(
        question=question.strip(), trial=attempt.transcript, outcome=_outcome(attempt, verdict))
    reply = yield from complete(model, [{"role": "user", "content": text}], config)
    if reply is None:
        return None
    reflection = _REFLECTION_LABEL.sub("", " ".join(reply.text.split()))
    return _cut(reflection, REFLECTION_CHARS)


def _outcome(attempt: Attempt, verdict: Evaluation) -> str:
    """What the reflection is told about the failure: never the expected answer itself (the paper's
    "Answer is INCORRECT")."""
    if attempt.answer is None:
        return "It gave no answer."
    if attempt.given is None:
        return "It gave no answer" + (" before it ran out of steps." if attempt.answer.forced else ".")
    ran_out = " It ran out of steps, so its answer was forced." if attempt.answer.forced else ""
    if verdict.by == GRADED:
        return f"Its answer was graded against the expected answer and is INCORRECT.{ran_out}"
    return f"Its own check judged the answer wrong: {verdict.reason}{ran_out}"


def lessons(reflections: list[str]) -> str:
    """How a turn's reflections travel to the next turn, after its answer (``agents/followup.shared_turn``)."""
    return "".join(f"\n{LESSON}{r}" for r in reflections)


def carried(earlier: list[Message] | tuple[Message, ...]) -> list[str]:
    """The reflections of a follow-up's earlier turns (:func:`lessons`), oldest first."""
    return [line[len(LESSON):].strip() for m in earlier if m.get("role") == "assistant"
            for line in str(m.get("content") or "").splitlines() if line.startswith(LESSON)]


def memory_note(reflections: list[str]) -> str:
    """The note the next trial gets after its question: the reflections of the failed trials, oldest first."""
    listed = "\n".join(f"- {r}" for r in reflections)
    return prompts.template("reflexion_memory").safe_substitute(reflections=listed)


def _echoes(answer: str, memory: list[str]) -> bool:
    """True when ``answer`` repeats the memory it was given: a "Reflections:" label or a reflection's opening."""
    return bool(_MEMORY_LABEL.search(answer)) or any(r[:ECHO_CHARS] in answer for r in memory if len(r) >= 20)


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


REFLEXION = register(ModeSpec("reflexion", "Reflexion", reflexion, placement="more", table_title="ReAct + Reflexion",
                              prompt="react", other_prompts=("reflexion_memory", "reflexion_check", "reflexion"),
                              paper_row="ReAct + Reflexion", uses_tools=True, options=("expected",),
                              run_options=(TRIALS,),
                              order=50))
