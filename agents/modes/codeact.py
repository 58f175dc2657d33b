"""CodeAct (Wang et al., 2024; smolagents' ``CodeAgent``): the model acts by writing Python programs.

Each step is one model reply, a Thought and a program (``prompts/codeact.md``), run in the run's persistent
sandbox (:class:`tools.sandbox_session.SandboxSession`) where the run's tools are functions. A step is one
program and ``tool_calls`` counts the calls the programs made, so its metrics compare with ReAct's. Text
protocol only. The events of a step: docs/tools.md, "CodeAct and the sandbox session".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Iterator

from agents import prompts
from agents.events import (
    SANDBOX,
    Action,
    Event,
    FinalAnswer,
    LLMError,
    Observation,
    ParseError,
    Thought,
    Waited,
    Waiting,
)
from agents.llm.base import ChatModel, Message
from agents.modes.base import REPEATED_FAILURE, FormatFailures, RunConfig, ToolRunner, complete, forced_answer
from agents.modes.registry import ModeSpec, register
from agents.parsing_code import CLOSE, CodeStep, close_code, final_from_code, parse_code
from agents.stepping import Stopped
from tools.registry import ToolRegistry, truncate
from tools.sandbox_session import (
    CallFinished,
    CallRecord,
    CallStarted,
    RoomWait,
    SandboxSession,
    StepResult,
    callable_tools,
)

CODE_TOOL = "python"  # the code step's Action.tool
CODE_STOP = ["Observation:", CLOSE]
TEXT_ONLY = ("CodeAct runs over the text protocol only (the model writes programs, not native tool calls): "
             "choose the text protocol to run it.")
SILENT = "(The program ran and printed nothing. Use print(...) to see a value.)"
RESTARTED = "(The sandbox was started afresh after the last step ended it: earlier variables are gone.)\n"


def codeact(question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig, *,
            runner: ToolRunner | None = None) -> Iterator[Event]:
    """Thought + program per step, until ``final_answer``, a ``Final Answer:`` line, or the step budget.

    ``runner`` (a fork's, ``agents/fork.py``) holds the programs' recorded outputs: each program still runs, so the
    session has its variables, but the model reads what the recorded run printed (one output the teacher's edit)."""
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
        yield from restore(session, getattr(model, "earlier", ()), tools.names)
        failures = FormatFailures()
        for _ in range(config.max_steps):
            reply = yield from complete(model, messages, config, stop=CODE_STOP)
            if reply is None:
                return
            messages.append({"role": "assistant", "content": close_code(reply.text)})
            step = parse_code(reply.text, tools.names)
            if isinstance(step, ParseError) and failures.repeated(reply.text):
                yield from forced_answer(model, messages, config, extract=final_from_code, why=REPEATED_FAILURE)
                return
            if isinstance(step, ParseError | FinalAnswer):
                yield step
                if isinstance(step, FinalAnswer):
                    return
                messages.append({"role": "user", "content": step.message})
                continue
            failures.passed()
            recorded = runner.replayed(Action(CODE_TOOL, step.code, code=True)) if runner is not None else None
            result, observation = yield from run_code(step, session, config, recorded)
            if result.final is not None:
                yield FinalAnswer(result.final)
                return
            messages.append({"role": "user", "content": prompts.observation_message(observation)})
        yield from forced_answer(model, messages, config, extract=final_from_code)
    finally:
        session.close()


def restore(session: SandboxSession, earlier: list[Message] | tuple[Message, ...],
            tools: list[str]) -> Generator[Event, None, int]:
    """A follow-up's variables: the programs of the earlier turns (``earlier``, the conversation a follow-up
    carries: ``agents/conversation.Continuing``) run again, in order and unseen, in this turn's fresh sandbox.
    A program that fails is passed over, as it was then; the calls they make go through the tools' cache.
    Yields only a wait for the sandbox's memory; returns how many ran."""
    ran = 0
    for message in earlier:
        if message.get("role") != "assistant":
            continue
        step = parse_code(str(message.get("content") or ""), tools)
        if isinstance(step, CodeStep):
            for record in session.run(step.code):  # the step's calls: not shown, this turn did not make them
                if isinstance(record, RoomWait):
                    yield room_wait(record)
            ran += 1
    return ran


def run_code(step: CodeStep, session: SandboxSession, config: RunConfig,
             recorded: Observation | None = None) -> Generator[Event, None, tuple[StepResult, str]]:
    """One code step's events (Thought, the program's Action, its nested calls live, its Observation); with
    ``recorded``, that is the Observation and what the model reads (and no ``final_answer`` ends the run)."""
    if step.thought:
        yield Thought(step.thought)
    yield Action(CODE_TOOL, step.code, step.thought, code=True)
    result = yield from _calls(session.run(step.code))
    if result.status == "stopped":
        raise Stopped
    if recorded is not None:
        yield recorded
        return dataclasses.replace(result, final=None), recorded.output
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
            elif isinstance(record, RoomWait):
                yield room_wait(record)
    finally:
        step.close()  # a consumer that stops early ends the step (and its process) now, not at collection


def room_wait(record: RoomWait) -> Waiting | Waited:
    """The sandbox's wait for memory as the panel shows it: its start, then its end (the time is not the mode's)."""
    return Waiting(record.message, SANDBOX) if record.waited_s is None else Waited(record.waited_s, SANDBOX)


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
                            options=("runner",), order=40))
