"""``python -m agents ask "QUESTION"``: the engine in a terminal, rendering the same events as the app.

A single mode streams token by token; several modes run concurrently and print whole
events tagged with their mode, so the interleaving stays readable. ``--json`` prints one
object (see README). The exit status is non-zero only for usage errors: a failed model
call is a run with ``error`` set, as it is in the app.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from agents.cli.exits import EXIT_OK, UsageError, llm_settings
from agents.comparison import ALL_MODES, compare, default_model_factory, validate_question
from agents.events import (
    Action,
    Event,
    FinalAnswer,
    LLMError,
    Observation,
    ParseError,
    Retry,
    Thought,
    TokenDelta,
    Truncated,
    Waiting,
)
from agents.llm.settings import DEFAULT_MAX_TOKENS, LLMSettings
from agents.modes import RunConfig
from agents.settings import DEFAULT_MAX_STEPS, DEFAULT_TEMPERATURE, MAX_STEPS_RANGE
from agents.trace import MODE_TITLES, Trace, metrics_line
from tools.registry import ToolRegistry

HELP = "ask one question in Think / Act / ReAct (or all) and stream the traces"
DESCRIPTION = "Ask one question in one or all modes."


def configure(parser: argparse.ArgumentParser) -> None:
    """The ``ask`` flags (a contract: scripts and tests drive them)."""
    parser.add_argument("question")
    parser.add_argument("--mode", choices=[*ALL_MODES, "all", "react_cot_sc", "cot_sc_react", "cot_sc"], default="all",
                        help="all = think, act and react side by side; the last three are the paper's CoT-SC hybrids")
    parser.add_argument("--protocol", choices=["text", "tools"], default="text",
                        help="text: the paper's Thought/Action format (any model); tools: native function calling")
    parser.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS,
                        help=f"actions per run before a forced answer ({MAX_STEPS_RANGE[0]}-{MAX_STEPS_RANGE[1]})")
    parser.add_argument("--model", help="model id (overrides LLM_MODEL)")
    parser.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE)
    parser.add_argument("--max-tokens", type=int, default=None,
                        help=f"longest reply per model call, in tokens (default: LLM_MAX_TOKENS or {DEFAULT_MAX_TOKENS})")
    parser.add_argument("--tools", help="comma-separated tools to enable (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a readable trace")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the ``ask`` command; bad input raises :class:`UsageError`, a failed model call does not."""
    out = out or sys.stdout
    problem = validate_question(args.question)
    if problem:
        raise UsageError(problem)
    low, high = MAX_STEPS_RANGE
    if not low <= args.max_steps <= high:
        raise UsageError(f"--max-steps must be between {low} and {high}")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise UsageError("--max-tokens must be at least 1")
    registry = _registry(args.tools)
    settings = llm_settings(model=args.model)
    modes = list(ALL_MODES) if args.mode == "all" else [args.mode]
    config = RunConfig(protocol=args.protocol, max_steps=args.max_steps, temperature=args.temperature,
                       max_tokens=args.max_tokens or settings.max_tokens)
    printer = None if args.json else _Printer(out, live=len(modes) == 1)
    if printer:
        print(f"Model: {settings.describe()}  ·  protocol: {args.protocol}\n", file=out)
    # Not configured → every run fails with the "three ways" message, shown like any other LLM error.
    traces = compare(args.question, modes, model_factory=default_model_factory(settings), registry=registry, config=config,
                     on_event=printer.on_event if printer else None)
    if args.json:
        print(json.dumps(to_json(args.question, traces, settings), ensure_ascii=False, indent=2), file=out)
    else:
        _print_summary(traces, out)
    return EXIT_OK


def _registry(tools: str | None) -> ToolRegistry:
    """The default tools, or the ``--tools`` subset of them (an unknown name is a usage error)."""
    from tools import default_registry

    registry = default_registry()
    if not tools:
        return registry
    wanted = [t.strip() for t in tools.split(",") if t.strip()]
    unknown = [t for t in wanted if registry.resolve(t) is None]
    if unknown:
        raise UsageError(f"unknown tool(s) {unknown}; available: {', '.join(registry.names)}")
    return registry.subset(wanted)


def to_json(question: str, traces: dict[str, Trace], settings: LLMSettings) -> dict:
    """The documented ``--json`` object: question, model, and one summary per mode."""
    return {"question": question, "model": settings.describe(),
            "runs": {mode: trace.summary() for mode, trace in traces.items()}}


class _Printer:
    """Renders events as readable lines; with one mode, tokens are streamed live as they arrive."""

    def __init__(self, out: TextIO, *, live: bool) -> None:
        self.out, self.live, self.streaming = out, live, False

    def on_event(self, mode: str, event: Event) -> None:
        tag = "" if self.live else f"[{MODE_TITLES[mode]}] "
        if isinstance(event, TokenDelta):
            if self.live and event.channel != "reasoning":
                self.out.write(event.text)
                self.out.flush()
                self.streaming = True
            return
        if self.streaming:  # the streamed draft is complete; print the parsed step below it
            self.out.write("\n" + "-" * 40 + "\n")
            self.streaming = False
        line = _describe(event)
        if line:
            print(f"{tag}{line}", file=self.out, flush=True)


def _describe(event: Event) -> str | None:
    if isinstance(event, Thought):
        return f"Thought: {event.text}"
    if isinstance(event, Action):
        value = json.dumps(event.input, ensure_ascii=False) if isinstance(event.input, dict) else event.input
        return f"Action: {event.tool}[{value}]"
    if isinstance(event, Observation):
        flag = " (error)" if event.is_error else (" (cached)" if event.cached else "")
        return f"Observation{flag} [{event.elapsed_s:.2f} s]: {event.output}"
    if isinstance(event, ParseError):
        return f"Format error, re-prompting: {event.message.splitlines()[0]}"
    if isinstance(event, LLMError):
        return f"Model error: {event.message}"
    if isinstance(event, Waiting):
        return "… waiting for the model server (LLM_MAX_CONCURRENT)"
    if isinstance(event, Retry):
        return f"Retrying: {event.message}"
    if isinstance(event, Truncated):
        return f"Note: {event.message} (raise --max-tokens / LLM_MAX_TOKENS)"
    if isinstance(event, FinalAnswer):
        return f"Final Answer{' (forced)' if event.forced else ''}: {event.text}"
    return None


def _print_summary(traces: dict[str, Trace], out: TextIO) -> None:
    print("\n" + "=" * 60, file=out)
    for mode, trace in traces.items():
        answer = trace.answer if trace.answer is not None else f"(no answer: {trace.error})"
        print(f"{MODE_TITLES[mode]:>10}: {answer}\n{'':>12}{metrics_line(trace)}", file=out)
