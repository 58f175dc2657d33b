"""Act and ReAct over native function calling (``tools=``); the same events as the text protocol.

In ReAct the assistant text written before a tool call is the Thought; Act asks for calls only.
A reply without a tool call is the final answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

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
from tools.registry import ToolRegistry


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
        stop = False
        for call in reply.tool_calls:
            action = Action(call.name, parse_arguments(call.arguments), thought)
            yield action
            stop = stop or runner.repeats(action) >= 2
            observation = Observation(action.tool, THIRD_REPEAT, is_error=True) if stop else runner.run(action)
            yield observation
            messages.append({"role": "tool", "tool_call_id": call.id, "content": observation.output})
        if stop:
            break
    yield from forced_answer(model, messages, config)
