"""Act and ReAct over the paper's text protocol: Thought / Action / Action Input / Observation."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from agents import prompts
from agents.events import Event, FinalAnswer, Observation, ParseError, Thought
from agents.llm.base import ChatModel
from agents.modes.base import (
    REPEATED_FAILURE,
    STOP,
    FormatFailures,
    RunConfig,
    ToolRunner,
    complete,
    forced_answer,
    opening,
    split_final_answer,
)
from agents.parsing import parse_step
from tools.registry import ToolRegistry

THIRD_REPEAT = "Same call a third time: stopping the loop and asking for the final answer."


def text_loop(
    question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig, *, thoughts: bool,
    prompt: str, runner: ToolRunner | None = None, notes: Sequence[str] = (),
) -> Iterator[Event]:
    """One action per model call until a Final Answer, the step budget, a third identical call, or a reply that fit
    no format twice alike (:class:`~agents.modes.base.FormatFailures`).

    ``prompt`` is the calling mode's template name (its ``ModeSpec.prompt``): the loop knows no mode ids.
    ``notes`` are messages the mode adds after the question (:func:`~agents.modes.base.opening`).
    """
    messages = opening(prompts.system_prompt(prompt, registry, max_steps=config.max_steps), question, notes)
    runner = runner or ToolRunner(registry, config)  # a fork passes one that replays the recorded observations
    failures = FormatFailures()
    for _ in range(config.max_steps):
        reply = yield from complete(model, messages, config, stop=STOP)
        if reply is None:
            return
        messages.append({"role": "assistant", "content": reply.text})
        step = parse_step(reply.text, registry.names)
        if isinstance(step, ParseError):
            if failures.repeated(reply.text):
                yield from forced_answer(model, messages, config, why=REPEATED_FAILURE)
                return
            yield step
            messages.append({"role": "user", "content": step.message})
            continue
        failures.passed()
        if isinstance(step, FinalAnswer):
            thought, _ = split_final_answer(reply.text)
            if thoughts and thought:
                yield Thought(thought)
            yield step
            return
        action = step if thoughts else replace(step, thought="")  # Act keeps no thoughts, even if written
        if action.thought:
            yield Thought(action.thought)
        yield action
        if runner.repeats(action) >= 2:
            yield Observation(action.tool, THIRD_REPEAT, is_error=True)
            break
        observation = runner.run(action)
        yield observation
        messages.append({"role": "user", "content": prompts.observation_message(observation.output)})
    yield from forced_answer(model, messages, config)
