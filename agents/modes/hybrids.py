"""The paper's hybrids, ReAct → CoT-SC and CoT-SC → ReAct, built from the base modes (and CoT-SC alone).

Each is registered as a mode (docs/modes.md, "The paper's hybrids"), so the runner, the comparison and the app
treat them like any other. A hybrid ends with exactly one :class:`FinalAnswer`: answers and errors of the
sub-runs it recovered from are re-emitted as :class:`Thought` lines, so ``Trace.answer`` / ``.forced`` /
``.error`` describe the hybrid's outcome, while tokens and steps still count every call.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace

from agents.agreement import gave_answer
from agents.answers import normalize_answer
from agents.events import Event, FinalAnswer, LLMError, Thought
from agents.llm.base import ChatModel
from agents.modes.acting import react
from agents.modes.base import RunConfig
from agents.modes.registry import ModeFn, ModeSpec, register
from agents.modes.think import think_only
from tools.registry import ToolRegistry

DEFAULT_SC_SAMPLES = 5  # the paper uses 21; 5 keeps a benchmark affordable
SC_TEMPERATURE = 0.7  # the paper's CoT-SC sampling temperature
VoteKey = Callable[[str], str]
VOTES = "CoT-SC votes over"  # opens the Thought that tallies the samples (the step-aligned map shows it as one row)


@dataclass(frozen=True)
class Vote:
    """The outcome of self-consistency: the winning answer, its votes, and how many samples answered."""

    answer: str | None
    votes: int
    answered: int
    samples: int
    said: str | None = None  # what a sample said instead of an answer ("I don't know"), when none answered


def _sub_run(events: Iterator[Event]) -> Generator[Event, None, tuple[FinalAnswer | None, str | None]]:
    """Pass a sub-run's events through, holding back its answer and error; return them."""
    answer, error = None, None
    for event in events:
        if isinstance(event, FinalAnswer):
            answer = event
        elif isinstance(event, LLMError):
            error = event.message
        else:
            yield event
    return answer, error


def self_consistency(
    question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig,
    *, n: int = DEFAULT_SC_SAMPLES, key: VoteKey = normalize_answer,
) -> Generator[Event, None, Vote]:
    """Sample ``n`` think-only chains at temperature 0.7, one after another, and vote on ``key(answer)``.

    Ties go to the answer seen first. A failed sample, or one that gives no real answer ("I don't know"), is a
    missing vote, reported in a Thought; each sample's Thought is a step (``Thought.sample``).
    """
    sample_config = replace(config, temperature=SC_TEMPERATURE)
    answers: list[str] = []
    failed, said = 0, None
    for i in range(1, n + 1):
        answer, error = yield from _sub_run(think_only(question, model, registry, sample_config))
        if answer is not None and gave_answer(answer.text):
            answers.append(answer.text.strip())
            yield Thought(f"Sample {i}/{n} answers: {answer.text.strip()}", sample=i)
        else:
            failed += 1
            text = answer.text.strip() if answer is not None else ""
            said = said or text or None
            why = f" ({error})" if error else f" (it said {text!r})" if text else ""
            yield Thought(f"Sample {i}/{n} gave no answer{why}.", sample=i)
    if not answers:
        return Vote(None, 0, 0, n, said)
    counts = Counter(key(a) for a in answers)
    winner, votes = counts.most_common(1)[0]
    text = next(a for a in answers if key(a) == winner)
    tally = ", ".join(f"{next(a for a in answers if key(a) == k)!r} ×{c}" for k, c in counts.most_common())
    yield Thought(f"{VOTES} {n} samples: {tally}{f'; {failed} gave no answer' if failed else ''}. "
                  f"Majority: {text!r} with {votes}/{n}.")
    return Vote(text, votes, len(answers), n)


def cot_sc(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig,
           *, n: int = DEFAULT_SC_SAMPLES, key: VoteKey = normalize_answer) -> Iterator[Event]:
    """CoT-SC alone: the majority answer of ``n`` chains of thought."""
    vote = yield from self_consistency(question, model, registry, config, n=n, key=key)
    if vote.answer is not None or vote.said is not None:
        yield FinalAnswer(vote.answer or vote.said or "")  # "I don't know", when every sample said so
    else:
        yield LLMError(f"none of the {n} chain-of-thought samples gave an answer")


def react_cot_sc(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig,
                 *, n: int = DEFAULT_SC_SAMPLES, key: VoteKey = normalize_answer) -> Iterator[Event]:
    """ReAct; when it gives no answer within its steps (forced or failed), fall back to CoT-SC."""
    answer, error = yield from _sub_run(react(question, model, registry, config))
    if answer is not None and not answer.forced and answer.text.strip():
        yield answer
        return
    why = (f"its answer {answer.text.strip()!r} was forced when the step budget ran out" if answer is not None
           else f"it failed ({error})" if error else "it gave no answer")
    yield Thought(f"ReAct gave no answer within {config.max_steps} steps: {why}. Falling back to CoT-SC.")
    yield from cot_sc(question, model, registry, config, n=n, key=key)


def cot_sc_react(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig,
                 *, n: int = DEFAULT_SC_SAMPLES, key: VoteKey = normalize_answer) -> Iterator[Event]:
    """CoT-SC; when the majority answer has fewer than n/2 votes (a sample that gives no answer has no vote), back
    off to ReAct."""
    vote = yield from self_consistency(question, model, registry, config, n=n, key=key)
    if vote.answer is not None and vote.votes >= n / 2:
        yield FinalAnswer(vote.answer)
        return
    why = (f"none of the {n} samples gave an answer" if vote.answer is None else
           f"only {vote.votes}/{n} samples agree (fewer than {n / 2:g})")
    yield Thought(f"{why[:1].upper()}{why[1:]}: backing off to ReAct.")
    answer, error = yield from _sub_run(react(question, model, registry, config))
    if answer is not None and answer.text.strip():
        yield answer
    elif vote.answer is not None:
        yield Thought(f"ReAct gave no answer{f' ({error})' if error else ''}; keeping the CoT-SC majority.")
        yield FinalAnswer(vote.answer, forced=True)
    else:
        yield LLMError(error or "neither CoT-SC nor ReAct gave an answer")


def _as_mode(fn: Callable[..., Iterator[Event]]) -> ModeFn:
    """``fn`` with the registry's options: ``sc_n`` samples (at least 1) and ``vote_key``, which answers count as
    one vote (default: SQuAD text; the benchmark passes its dataset's own, e.g. FEVER labels)."""

    @functools.wraps(fn)
    def run(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig, *,
            sc_n: int = DEFAULT_SC_SAMPLES, vote_key: VoteKey | None = None) -> Iterator[Event]:
        if sc_n < 1:
            raise ValueError("the number of CoT-SC samples must be at least 1")
        return fn(question, model, registry, config, n=sc_n, key=vote_key or normalize_answer)

    return run


_OPTIONS = ("sc_n", "vote_key")
register(ModeSpec("react_cot_sc", "ReAct → CoT-SC", _as_mode(react_cot_sc), placement="more",
                  paper_row="ReAct → CoT-SC", uses_tools=True, options=_OPTIONS, order=10))
register(ModeSpec("cot_sc_react", "CoT-SC → ReAct", _as_mode(cot_sc_react), placement="more",
                  paper_row="CoT-SC → ReAct", uses_tools=True, options=_OPTIONS, order=20))
register(ModeSpec("cot_sc", "CoT-SC", _as_mode(cot_sc), placement="benchmark", paper_row="CoT-SC", options=_OPTIONS))
