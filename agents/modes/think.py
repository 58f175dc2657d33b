"""Think-only: one streamed chain-of-thought call, no tools (the paper's CoT baseline)."""

from __future__ import annotations

from collections.abc import Iterator

from agents import prompts
from agents.events import Event, FinalAnswer, Thought
from agents.llm.base import ChatModel
from agents.modes.base import RunConfig, complete, split_final_answer
from agents.modes.registry import ModeSpec, register
from tools.registry import ToolRegistry


def think_only(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig) -> Iterator[Event]:
    """Reason step by step, then answer after ``Final Answer:``; a reply without one is answered whole, flagged."""
    messages = [
        {"role": "system", "content": prompts.system_prompt("think", registry)},
        {"role": "user", "content": prompts.question_message(question)},
    ]
    reply = yield from complete(model, messages, config)
    if reply is None:
        return
    thought, answer = split_final_answer(reply.text)
    if thought:
        yield Thought(thought)
    yield FinalAnswer(answer, forced=False) if answer is not None else FinalAnswer(reply.text.strip(), forced=True)


register(ModeSpec("think", "Think-only", think_only, kind="base", label="Think", table_title="Think-only (CoT)",
                  paper_row="CoT", prompt="think", order=10))
