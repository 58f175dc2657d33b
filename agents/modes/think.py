"""Think-only: one streamed chain-of-thought call, no tools (the paper's CoT baseline)."""

from __future__ import annotations

from collections.abc import Iterator

from agents import prompts
from agents.events import Event, FinalAnswer, Thought
from agents.llm.base import ChatModel
from agents.modes.base import RunConfig, answer_now, complete, split_final_answer
from agents.modes.registry import ModeSpec, register
from tools.registry import ToolRegistry


def think_only(
    question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig, *, reasoning: str | None = None
) -> Iterator[Event]:
    """Reason step by step, then answer after ``Final Answer:``; a reply without one is answered whole, flagged.

    With ``reasoning`` (a fork: the teacher edited the chain of thought), that text stands as the
    model's reply and the model is asked again for the answer that follows from it.
    """
    messages = [
        {"role": "system", "content": prompts.system_prompt(THINK.prompt or THINK.id, registry)},
        {"role": "user", "content": prompts.question_message(question)},
    ]
    if reasoning is not None:
        messages.append({"role": "assistant", "content": reasoning})
        yield from answer_now(model, messages, config, prompts.answer_again_message(), forced=False)
        return
    reply = yield from complete(model, messages, config)
    if reply is None:
        return
    thought, answer = split_final_answer(reply.text)
    if thought:
        yield Thought(thought)
    yield FinalAnswer(answer, forced=False) if answer is not None else FinalAnswer(reply.text.strip(), forced=True)


THINK = register(ModeSpec("think", "Think-only", think_only, placement="base", label="Think",
                          table_title="Think-only (CoT)", paper_row="CoT", prompt="think", options=("reasoning",),
                          order=10))
