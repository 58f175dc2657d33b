"""Act and ReAct over native function calling (``tools=``); the same events as the text protocol.

In ReAct the assistant text written before a tool call is the Thought; Act asks for calls only.
A reply without a tool call is the final answer. The calls of one reply run at once (at most
:data:`MAX_PARALLEL`): each Action and its Observation are yielded as that call finishes, while the
messages sent back list the results in the reply's call order.
"""

from __future__ import annotations

import contextvars
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from agents import prompts
from agents.events import Action, Event, FinalAnswer, Observation, Thought
from agents.llm.base import ChatModel
from agents.modes.base import (
    RunConfig,
    ToolRunner,
    complete,
    forced_answer,
    opening,
    parse_arguments,
    split_final_answer,
)
from agents.modes.text_protocol import THIRD_REPEAT
from agents.stepping import Stopped
from tools.registry import ToolRegistry

MAX_PARALLEL = 4  # tool calls of one reply running at the same time
_POLL_S = 0.05  # how often a step waiting on its calls looks at the run's Stop


def tools_loop(
    question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig, *, thoughts: bool,
    prompt: str, runner: ToolRunner | None = None, notes: Sequence[str] = (),
) -> Iterator[Event]:
    """Call tools natively until the model answers in text, the budget ends, or a call repeats a third time.

    ``prompt`` is the calling mode's template name (its ``ModeSpec.prompt``): the loop knows no mode ids.
    ``notes`` are messages the mode adds after the question (:func:`~agents.modes.base.opening`).
    """
    system = prompts.system_prompt(prompt, registry, protocol="tools", max_steps=config.max_steps)
    messages = opening(system, question, notes)
    runner, schemas = runner or ToolRunner(registry, config), registry.schemas()  # a fork's runner replays
    for _ in range(config.max_steps):
        reply = yield from complete(model, messages, config, tools=schemas)
        if reply is None:
            return
        if not reply.tool_calls:
            thought, answer = split_final_answer(reply.text)
            if thoughts and thought and answer is not None:
                yield Thought(thought)
            yield FinalAnswer(answer if answer is not None else reply.text.strip())
            return
        thought = reply.text.strip() if thoughts else ""
        if thought:
            yield Thought(thought)
        messages.append({"role": "assistant", "content": reply.text, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments or "{}"}}
            for c in reply.tool_calls
        ]})
        actions = [Action(c.name, parse_arguments(c.arguments), thought) for c in reply.tool_calls]
        observations = yield from run_calls(runner, actions, config)
        messages.extend({"role": "tool", "tool_call_id": c.id, "content": o.output}
                        for c, o in zip(reply.tool_calls, observations, strict=True))
        stop = any(o.output == THIRD_REPEAT and o.is_error for o in observations)
        if stop:
            break
    yield from forced_answer(model, messages, config)


def run_calls(
    runner: ToolRunner, actions: list[Action], config: RunConfig
) -> Generator[Event, None, list[Observation]]:
    """Run one reply's calls at the same time; yield each Action and its Observation as that call finishes and
    return the observations in call order.

    The calls are booked in call order first (:meth:`ToolRunner.start`), so the repeat guard reads as it would
    one by one: a call identical to an earlier one of the reply runs once, the second waits for its result; once
    a call repeats a third time, it and the calls after it run nothing (:data:`THIRD_REPEAT`). Each call runs in
    a copy of this context (:data:`tools.registry.STOP` and friends reach it); the run's Stop ends the wait.
    """
    observations: list[Observation | None] = [None] * len(actions)
    jobs, stop = {}, False
    for i, action in enumerate(actions):
        stop = stop or runner.repeats(action) >= 2
        if stop:
            observations[i] = Observation(action.tool, THIRD_REPEAT, is_error=True)
        else:
            jobs[i] = runner.start(action)
    for i, observation in enumerate(observations):
        if observation is not None:
            yield actions[i]
            yield observation
    if jobs:
        pool = ThreadPoolExecutor(min(MAX_PARALLEL, len(jobs)), thread_name_prefix="tool-call")
        try:
            futures = {pool.submit(contextvars.copy_context().run, job): i for i, job in jobs.items()}
            yield from _as_finished(futures, actions, observations, config)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # after a Stop, calls still running end on their own
    return [o for o in observations if o is not None]


def _as_finished(futures: dict[Future, int], actions: list[Action], observations: list[Observation | None],
                 config: RunConfig) -> Iterator[Event]:
    pending = set(futures)
    while pending:
        if config.cancel.is_set():
            raise Stopped
        done, pending = wait(pending, timeout=_POLL_S, return_when=FIRST_COMPLETED)
        for future in sorted(done, key=futures.__getitem__):
            i = futures[future]
            observations[i] = future.result()
            yield actions[i]
            yield observations[i]
