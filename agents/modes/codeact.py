"""CodeAct (Wang et al., 2024; smolagents' ``CodeAgent``): the model acts by writing Python programs.

Each step is one model reply, a Thought and a program (``prompts/codeact.md``), run in the run's persistent
sandbox (:class:`tools.sandbox_session.SandboxSession`) where the run's tools are functions. A step is one
program and ``tool_calls`` counts the calls the programs made, so its metrics compare with ReAct's. Text
protocol only. The events of a step: docs/tools.md, "CodeAct and the sandbox session".
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

from agents import prompts
from agents.events import Action, Event, FinalAnswer, LLMError, Observation, ParseError, Thought
from agents.llm.base import ChatModel, Message
from agents.modes.base import RunConfig, complete, forced_answer
from agents.modes.registry import ModeSpec, register
from agents.parsing_code import CLOSE, CodeStep, close_code, final_from_code, parse_code
from agents.stepping import Stopped
from tools.registry import ToolRegistry, truncate
from tools.sandbox_session import CallFinished, CallRecord, CallStarted, SandboxSession, StepResult, callable_tools

CODE_TOOL = "python"  # the code step's Action.tool
CODE_STOP = ["Observation:", CLOSE]
TEXT_ONLY = ("CodeAct runs over the text protocol only (the model writes programs, not native tool calls): "
             "choose the text protocol to run it.")
SILENT = "(The program ran and printed nothing. Use print(...) to see a value.)"
RESTARTED = "(The sandbox was started afresh after the last step ended it: earlier variables are gone.)\n"


def codeact(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig) -> Iterator[Event]:
    """Thought + program per step, until ``final_answer``, a ``Final Answer:`` line, or the step budget."""
    if config.protocol != "text":
        yield LLMError(TEXT_ONLY)
        return
    tools = callable_tools(registry)
    messages = [
        {"role": "system",
         "content": prompts.system_prompt(CODEACT.prompt or CODEACT.id, tools, max_steps=config.max_steps)},
        {"role": "user", "content": prompts.question_message(question)},
    ]
    session = SandboxSession(tools, cancel=config.cancel)
    try:
        restore(session, getattr(model, "earlier", ()), tools.names)
        for _ in range(config.max_steps):
            reply = yield from complete(model, messages, config, stop=CODE_STOP)
            if reply is None:
                return
            messages.append({"role": "assistant", "content": close_code(reply.text)})
            step = parse_code(reply.text, tools.names)
            if isinstance(step, ParseError | FinalAnswer):
                yield step
                if isinstance(step, FinalAnswer):
                    return
                messages.append({"role": "user", "content": step.message})
                continue
            result, observation = yield from run_code(step, session, config)
            if result.final is not None:
                yield FinalAnswer(result.final)
                return
            messages.append({"role": "user", "content": prompts.observation_message(observation)})
        yield from forced_answer(model, messages, config, extract=final_from_code)
    finally:
        session.close()


def restore(session: SandboxSession, earlier: list[Message] | tuple[Message, ...], tools: list[str]) -> int:
    """A follow-up's variables: the programs of the earlier turns (``earlier``, the conversation a follow-up
    carries: ``agents/conversation.Continuing``) run again, in order and unseen, in this turn's fresh sandbox.
    A program that fails is passed over, as it was then; the calls they make go through the tools' cache.
    Returns how many ran."""
    ran = 0
    for message in earlier:
        if message.get("role") != "assistant":
            continue
        step = parse_code(str(message.get("content") or ""), tools)
        if isinstance(step, CodeStep):
            for _ in session.run(step.code):  # the step's call records: not shown, this turn did not make them
                pass
            ran += 1
    return ran


def run_code(step: CodeStep, session: SandboxSession,
             config: RunConfig) -> Generator[Event, None, tuple[StepResult, str]]:
    """One code step's events (Thought, the program's Action, its nested calls live, its Observation)."""
    if step.thought:
        yield Thought(step.thought)
    yield Action(CODE_TOOL, step.code, step.thought, code=True)
    result = yield from _calls(session.run(step.code))
    if result.status == "stopped":
        raise Stopped
    text = truncate(observation_text(result), config.observation_chars)
    yield Observation(CODE_TOOL, text, not result.ok, result.elapsed_s)
    return result, text


def _calls(step: Generator[CallRecord, None, StepResult]) -> Generator[Event, None, StepResult]:
    """The session's call records as nested events, passed on as they happen; returns the step's result."""
    try:
        while True:
            try:
                record = next(step)
            except StopIteration as done:
                return done.value
            if isinstance(record, CallStarted):
                yield Action(record.tool, record.args, nested=True)
            elif isinstance(record, CallFinished):
                yield Observation(record.tool, record.output, record.is_error, record.elapsed_s, record.cached,
                                  nested=True)
    finally:
        step.close()  # a consumer that stops early ends the step (and its process) now, not at collection


def observation_text(result: StepResult) -> str:
    """What the model reads after a program: its prints, or the prints before its error and the error."""
    output = result.output.rstrip("\n")
    if result.ok:
        text = output or ("(final_answer was called.)" if result.final is not None else SILENT)
    else:
        before = f"Output before the error:\n{output}\n" if output else ""
        text = before + (result.error.rstrip() or f"The program failed ({result.status}).")
    return (RESTARTED if result.restarted else "") + text


CODEACT = register(ModeSpec("codeact", "CodeAct", codeact, placement="more", prompt="codeact", uses_tools=True,
                            order=40))
