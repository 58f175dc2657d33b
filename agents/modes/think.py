"""Think-only: one streamed chain-of-thought call, no tools (the paper's CoT baseline)."""

from __future__ import annotations

from collections.abc import Iterator

from agents import prompts
from agents.events import Event, FinalAnswer, Thought
from agents.llm.base import ChatModel
from agents.modes.base import RunConfig, answer_in, answer_now, complete, split_final_answer
from agents.modes.registry import ModeSpec, register
from tools.registry import ToolRegistry


def think_only(
    question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig, *, reasoning: str | None = None
) -> Iterator[Event]:
    """Reason step by step, then answer after ``Final Answer:``; a reply without one is its own answer when it is
    short and plain (flagged as forced), else it stands as the reasoning and the answer is empty (forced): a
    paragraph of musing is not an answer the model gave.

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
    forced = answer is None
    if forced:
        answer = answer_in(reply.text)
        thought = "" if answer else reply.text.strip()
    if thought:
        yield Thought(thought)
    yield FinalAnswer(answer or "", forced=forced)


THINK = register(ModeSpec("think", "Think-only", think_only, placement="base", label="Think",
                          table_title="Think-only (CoT)", paper_row="CoT", prompt="think", options=("reasoning",),
                          order=10))
