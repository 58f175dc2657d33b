"""Fork a run: change what a tool said at one step and let the mode continue live from there.

There is no second copy of a loop: the *same* loop runs from the start, fed by a :class:`ReplayModel` that
streams the recorded replies back and a :class:`ReplayRunner` that returns the recorded observations, so the
first live call sends, without an edit, the very messages the original run sent, byte for byte. The API, its
refusals and what a fork's events hold: docs/stepping.md, "Fork".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from agents.comparison import ComparisonRun, ModelFactory, Sink
from agents.events import Action, Event, Forked, LLMError, Observation, Paused, Resumed, Retry, Thought, Usage
from agents.llm.base import ChatModel, Message
from agents.modes.base import RunConfig
from agents.modes.registry import ModeSpec, list_modes
from agents.modes.text_protocol import THIRD_REPEAT
from agents.replay import REASONING, RUNNER, ForkMismatch, ReplayModel, ReplayRunner, answered_action
from agents.trace import Trace
from tools.registry import ToolRegistry

log = logging.getLogger(__name__)


def forkable_modes() -> tuple[ModeSpec, ...]:
    """The registered modes a fork can continue (the hybrids combine several runs, and Reflexion several trials:
    no single conversation). CodeAct forks at a program's output: the programs before it run again, unseen, so its
    session has their variables."""
    return tuple(s for s in list_modes() if s.forkable)


def fork(
    trace: Trace, step_index: int, new_observation: str, model: ChatModel, registry: ToolRegistry, config: RunConfig
) -> Iterator[Event]:
    """The forked run's events: the original up to ``step_index`` (edited), a ``Forked`` marker, then live.

    ``registry`` and ``config`` must be those of the original run (same tools, protocol and
    ``max_steps``), as the system prompt is rebuilt from them. Raises ValueError at once, before
    any model call, when the trace cannot be forked there; ``model`` is used for the live calls.
    """
    return prepare_fork(trace, step_index, new_observation, registry, config)(model, config)


def prepare_fork(
    trace: Trace, step_index: int, new_observation: str, registry: ToolRegistry, config: RunConfig
) -> Callable[[ChatModel, RunConfig], Iterator[Event]]:
    """Check the fork now (ValueError) and return it as a mode source: ``(model, config) → events``."""
    if not isinstance(new_observation, str):
        raise ValueError("the edited observation must be text")
    if not isinstance(step_index, int) or isinstance(step_index, bool):
        raise ValueError("the step to fork from must be a whole number (0 for the first observation)")
    spec = next((s for s in forkable_modes() if s.id == trace.mode), None)
    if spec is None:
        names = ", ".join(s.id for s in forkable_modes())
        raise ValueError(f"only the modes {names} can be forked; {trace.mode!r} is a hybrid of "
                         "several runs, so there is no single conversation to continue")
    if REASONING in spec.options:
        return _think_source(spec, trace, step_index, new_observation, registry)
    plan = plan_fork(trace, step_index, new_observation, config)
    return lambda model, run_config: _continue(spec, plan, trace, model, registry, run_config)


def start_fork(
    trace: Trace, step_index: int, new_observation: str, *, registry: ToolRegistry, config: RunConfig,
    model_factory: ModelFactory | None = None, stepping: bool = False,
) -> ComparisonRun:
    """A fork as a started :class:`ComparisonRun` of one mode: poll it, step it, close it like any run.

    This is what a UI uses (nothing blocks its event loop); ValueError comes before anything starts.
    """
    return fork_run(trace, step_index, new_observation, registry=registry, config=config,
                    model_factory=model_factory, stepping=stepping).start()


def fork_run(
    trace: Trace, step_index: int, new_observation: str, *, registry: ToolRegistry, config: RunConfig,
    model_factory: ModelFactory | None = None, stepping: bool = False, sink: Sink | None = None,
    history: dict[str, list[Message]] | None = None,
) -> ComparisonRun:
    """:func:`start_fork`'s run, not yet started (ValueError at once when the trace cannot be forked there);
    ``sink`` as for :class:`ComparisonRun`; ``history``: a follow-up's earlier turns, which every request of the
    fork carries as the forked turn's did (``agents/conversation.py``)."""
    source = prepare_fork(trace, step_index, new_observation, registry, config)
    return ComparisonRun(trace.question, [trace.mode], model_factory=model_factory, registry=registry, config=config,
                         stepping=stepping, sources={trace.mode: source}, sink=sink, history=history)


@dataclass
class ForkPlan:
    """What a fork replays: the replies to stream back, the observations to return, the events to show first."""

    replies: list[Usage]
    observations: list[Observation]
    prefix: list[Event]
    actions: list[Action | None] | None = None  # the call each observation answers (the calls of a reply ran at once)


def plan_fork(trace: Trace, step_index: int, edited: str, config: RunConfig) -> ForkPlan:
    """Read the trace into a :class:`ForkPlan`; ValueError (one clear line) when it cannot be forked there."""
    events = [e for _, e in trace.events]
    # a CodeAct program's output is its step's observation; the calls it made are its own (nested), not steps
    observed = [i for i, e in enumerate(events) if isinstance(e, Observation) and not e.nested]
    if not 0 <= step_index < len(observed):
        raise ValueError(f"there is no observation {step_index + 1}: this run has {len(observed)}")
    start = max((i + 1 for i, e in enumerate(events) if isinstance(e, Retry)), default=0)
    target = observed[step_index]
    if target < start:
        raise ValueError("that observation belongs to an attempt the mode abandoned and ran again; fork a later one")
    original = events[target]
    if original.output == THIRD_REPEAT and original.is_error:
        raise ValueError("that observation was never sent to the model (the loop stopped a repeated call)")
    # The teacher's text is what the tool "said" now: not an error, not from the cache (the model sees text only).
    changed = original if edited == original.output else replace(original, output=edited, is_error=False, cached=False)
    owner = _owner(events, start, target)
    end = max(i for i in observed if i >= target and _owner(events, start, i) == owner)
    replies = [e for e in events[start:end] if isinstance(e, Usage) and e.reply is not None]
    _check_recorded(replies, config)
    kept = [i for i, e in enumerate(events) if start <= i <= end and isinstance(e, Observation) and not e.nested
            and not (e.output == THIRD_REPEAT and e.is_error)]
    observations = [changed if i == target else events[i] for i in kept]
    actions = [answered_action(events, i) for i in kept]
    while end + 1 < len(events) and isinstance(events[end + 1], Forked):
        end += 1  # an earlier fork's marker stays with its observation: the history of edits is kept
    prefix: list[Event] = []
    marker = Forked(step_index, original.output, edited)
    placed = False
    for i, event in enumerate(events[: end + 1]):
        if not placed and i > target and not isinstance(event, Forked):
            prefix.append(marker)  # after the edited observation and any earlier edits of it
            placed = True
        if not isinstance(event, Paused | Resumed):  # the original run's stepping is not the fork's
            prefix.append(changed if i == target else event)
    if not placed:
        prefix.append(marker)
    return ForkPlan(replies, observations, prefix, actions)


def _owner(events: list[Event], start: int, index: int) -> int:
    """How many complete replies came before event ``index`` in the attempt starting at ``start``."""
    return sum(1 for e in events[start:index] if isinstance(e, Usage) and e.reply is not None)


def _check_recorded(replies: list[Usage], config: RunConfig) -> None:
    if not replies:
        raise ValueError("this trace was saved before runs could be forked (it does not keep the model's replies); "
                         "run the question again to fork it")
    native = any(r.tool_calls for r in replies)
    if native != (config.protocol == "tools"):
        used = "native tool calls" if native else "the text protocol"
        raise ValueError(f"this run used {used}; fork it with the same protocol")
    if len(replies) > config.max_steps:
        raise ValueError(f"this run took {len(replies)} steps to get there; fork it with max_steps ≥ {len(replies)}")


def _continue(spec: ModeSpec, plan: ForkPlan, trace: Trace, model: ChatModel, registry: ToolRegistry,
              config: RunConfig) -> Iterator[Event]:
    """Show the prefix, replay the same loop silently up to the fork, then pass its live events on."""
    replay = ReplayModel(plan.replies, model)
    runner = ReplayRunner(registry, config, plan.observations, plan.actions)
    if config.stepper is not None:
        config.stepper.grant(len(plan.replies))  # the replayed calls are not steps to pause at
    yield from plan.prefix
    try:
        for event in spec.run(trace.question, replay, registry, config, **{RUNNER: runner}):
            if replay.live:
                yield event
    except ForkMismatch as exc:
        log.warning("fork of %s diverged: %s", trace.mode, exc)
        yield LLMError(f"the fork could not rebuild this run: {exc}")
        return
    if not replay.live:
        yield LLMError("the fork could not rebuild this run: it ended before reaching the edited step")


def _think_source(spec: ModeSpec, trace: Trace, step_index: int, edited: str,
                  registry: ToolRegistry) -> Callable[[ChatModel, RunConfig], Iterator[Event]]:
    """Think-only: the edited reasoning stands as the model's reply; ask for the answer again."""
    if step_index != 0:
        raise ValueError(f"{spec.title} has one step, its reasoning (step 0)")
    events = [e for _, e in trace.events]
    thoughts = [i for i, e in enumerate(events) if isinstance(e, Thought)]
    replies = [e for e in events if isinstance(e, Usage) and e.reply is not None]
    if not thoughts and not replies:
        raise ValueError(f"this {spec.title} run has no reasoning to edit")
    cut = thoughts[-1] if thoughts else len(events)
    original = events[cut].text if thoughts else (replies[-1].reply or "")
    prefix = [e for e in events[:cut] if not isinstance(e, Paused | Resumed)]
    prefix = [*prefix, Thought(edited), Forked(0, original, edited)]
    return lambda model, config: _think_events(prefix, spec.run(trace.question, model, registry, config,
                                                                **{REASONING: edited}))


def _think_events(prefix: list[Event], live: Iterator[Event]) -> Iterator[Event]:
    yield from prefix
    yield from live
