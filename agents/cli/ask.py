"""``python -m agents ask "QUESTION"``: the engine in a terminal, rendering the same events as the app.

The model is the page's: what ``LLM_*``/``HF_TOKEN`` configure, or with nothing configured (off a Space,
``APP_TOY_MODEL`` on) the toy model (:mod:`agents.llm.backend`), said in one line on stderr. A single mode
streams its replies token by token; several modes run concurrently and print whole events tagged with their
mode, so the interleaving stays readable. Either way each step is printed once. ``--json`` prints one
object (see README). The exit status is non-zero only for usage errors: a failed model call is a run with
``error`` set, as it is in the app."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from agents import strict_json
from agents.agreement import agreement, expected_line
from agents.cli.exits import EXIT_OK, UsageError, check_model_flags, llm_settings
from agents.cli.terminal import SafeOut
from agents.comparison import ComparisonRun, default_model_factory, validate_question
from agents.correctness import clean_expected, judge
from agents.events import (
    Action,
    Evaluation,
    Event,
    FinalAnswer,
    Forked,
    LLMError,
    Observation,
    ParseError,
    Paused,
    Reflection,
    Retry,
    Thought,
    TokenDelta,
    Trial,
    Truncated,
    Waiting,
)
from agents.llm.backend import TOY_NOTICE, toy_serving, wants_toy
from agents.llm.settings import DEFAULT_MAX_TOKENS, TRY_THE_TOY, LLMSettings
from agents.modes import RunConfig
from agents.modes.registry import list_modes, mode_ids, mode_title, run_options
from agents.settings import (
    DEFAULT_MAX_STEPS,
    DEFAULT_TEMPERATURE,
    MAX_STEPS_RANGE,
    PROTOCOLS,
    TEMPERATURE_RANGE,
)
from agents.trace import Trace, metrics_line
from settings import SettingError
from tools import default_registry
from tools.registry import ToolRegistry

HELP = "ask one question in Think / Act / ReAct (or all) and stream the traces"
DESCRIPTION = "Ask one question in one or all modes."


def configure(parser: argparse.ArgumentParser) -> None:
    """The ``ask`` flags (a contract: scripts and tests drive them)."""
    parser.add_argument("question")
    base, others = mode_ids("base"), list_modes("more", "benchmark")
    parser.add_argument("--mode", type=mode_list, default=mode_list("all"), metavar="MODES",
                        help=f"all (default) = {', '.join(base)} side by side; or a comma-separated list of the "
                             f"page's mode ids, run side by side (one runs alone): {', '.join(base)}, "
                             f"{', '.join(f'{s.id} ({s.title})' for s in others)}")
    parser.add_argument("--protocol", choices=list(PROTOCOLS), default="text",
                        help="text: the paper's Thought/Action format (any model); tools: native function calling")
    parser.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS,
                        help=f"actions per run before a forced answer ({MAX_STEPS_RANGE[0]}-{MAX_STEPS_RANGE[1]})")
    parser.add_argument("--model", help="model id (overrides LLM_MODEL)")
    parser.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE,
                        help=f"sampling temperature, {TEMPERATURE_RANGE[0]:g}-{TEMPERATURE_RANGE[1]:g} "
                             f"(default {DEFAULT_TEMPERATURE:g})")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help="longest reply per model call, in tokens "
                             f"(default: LLM_MAX_TOKENS or {DEFAULT_MAX_TOKENS})")
    parser.add_argument("--tools", help="comma-separated tools to enable (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a readable trace")
    parser.add_argument("--raw", action="store_true",
                        help="write model and tool text as it came, terminal control sequences included "
                             "(by default they are removed: agents/cli/terminal.py)")
    parser.add_argument("--step", action="store_true",
                        help="pause after each step of each mode: Enter advances, "
                             "end of input (Ctrl-D) runs to the end")
    parser.add_argument("--expected", help="the expected answer: each run is marked ✓ or ✗ (the paper's exact match, "
                                           "numbers by value), and Reflexion grades its trials against it")
    for option in run_options():  # the modes' own settings (Reflexion's --trials), from their specs
        parser.add_argument(f"--{option.name.replace('_', '-')}", type=int, default=option.default,
                            help=f"{option.label}, {option.low}-{option.high} (default {option.default})")
    return parser


def mode_list(value: str) -> tuple[str, ...]:
    """``--mode``: "all" (the base modes) or a comma-separated list of mode ids, each once, in the order given."""
    names = [n.strip().lower() for n in str(value).split(",") if n.strip()]
    if names == ["all"]:
        return mode_ids("base")
    unknown = [n for n in names if n not in mode_ids()]
    if not names or unknown:
        got = f"unknown mode {', '.join(map(repr, unknown))}" if unknown else "no mode given"
        raise argparse.ArgumentTypeError(f"{got}; choose all, or some of {', '.join(mode_ids())} "
                                         "(comma-separated, e.g. think,react,codeact)")
    return tuple(dict.fromkeys(names))


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the ``ask`` command; bad input raises :class:`UsageError`, a failed model call does not.

    With nothing configured (off a Space, ``APP_TOY_MODEL`` on) the toy model answers, as on the page, and one
    line on stderr says so and what to set for a real model."""
    out = out or sys.stdout
    if not args.raw:  # a model's escape sequences must not clear the screen or forge a line (agents/cli/terminal.py)
        out = SafeOut(out)
    options, expected = _checked(args)
    registry = _registry(args.tools)
    settings = llm_settings(model=args.model)
    try:
        toy = wants_toy(settings)
    except SettingError as exc:
        raise UsageError(str(exc), show_usage=False) from None
    if toy:
        print(TOY_NOTICE, file=sys.stderr)
        with toy_serving(settings) as toy_settings:
            return _ask(args, toy_settings, out, options, expected, registry)
    if settings.problem():  # said once, where a person reads it; each run then fails with it, said once more at most
        print(settings.problem() if settings.configured else f"{settings.problem()} {TRY_THE_TOY}", file=sys.stderr)
    return _ask(args, settings, out, options, expected, registry)


def _checked(args: argparse.Namespace) -> tuple[dict[str, Any], str | None]:
    """The flags a server never sees checked (a bad one is a :class:`UsageError`): the run options and expected."""
    problem = validate_question(args.question)
    if problem:
        raise UsageError(problem)
    low, high = MAX_STEPS_RANGE
    if not low <= args.max_steps <= high:
        raise UsageError(f"--max-steps must be between {low} and {high}")
    check_model_flags(args.model, args.max_tokens, args.temperature)
    options = {o.name: getattr(args, o.name) for o in run_options()}
    for option in run_options():
        if not option.low <= options[option.name] <= option.high:
            raise UsageError(f"--{option.name.replace('_', '-')} must be between {option.low} and {option.high}")
    return options, clean_expected(args.expected)


def _ask(args: argparse.Namespace, settings: LLMSettings, out: TextIO, options: dict[str, Any], expected: str | None,
         registry: ToolRegistry) -> int:
    """Run the modes with ``settings`` and print them: a readable trace and summary, or the ``--json`` object."""
    modes = list(args.mode)
    config = RunConfig(protocol=args.protocol, max_steps=args.max_steps, temperature=args.temperature,
                       max_tokens=args.max_tokens or settings.max_tokens)
    printer = None if args.json else _Printer(out, live=len(modes) == 1, said=[settings.problem() or ""])
    if printer:
        print(f"Model: {settings.describe()}  ·  protocol: {args.protocol}\n", file=out)
    run = ask_modes if not args.step else functools.partial(
        ask_stepping, stdin=sys.stdin, prompt_out=sys.stderr if args.json else out)
    traces = run(args.question, modes, model_factory=default_model_factory(settings), registry=registry, config=config,
                 on_event=printer.on_event if printer else None,
                 options={**options, "expected": expected})  # each mode takes those its spec names
    if printer:
        printer.summary(traces, expected)
    else:
        print(strict_json.dumps(to_json(args.question, traces, settings, expected), ensure_ascii=False, indent=2),
              file=out)
    return EXIT_OK


def _registry(tools: str | None) -> ToolRegistry:
    """The default tools, or the ``--tools`` subset of them (an unknown name is a usage error)."""
    registry = default_registry()
    if not tools:
        return registry
    wanted = [t.strip() for t in tools.split(",") if t.strip()]
    unknown = [t for t in wanted if registry.resolve(t) is None]
    if unknown:
        raise UsageError(f"unknown tool(s) {unknown}; available: {', '.join(registry.names)}")
    return registry.subset(wanted)


def ask_modes(question: str, modes: list[str], *, on_event: Callable[[str, Event], None] | None = None,
              **kwargs: Any) -> dict[str, Trace]:
    """:func:`agents.comparison.compare`, with ``kwargs`` (``options`` too) passed to the :class:`ComparisonRun`."""
    traces = {m: Trace(m, question) for m in modes}
    run = ComparisonRun(question, modes, **kwargs).start()
    try:
        while (item := run.poll()) is not None:
            traces[item[0]].add(item[1])
            if on_event:
                on_event(*item)
    finally:
        run.close()
    return traces  # each trace's elapsed time is its own last event, not the slowest mode's


def ask_stepping(question: str, modes: list[str], *, stdin: TextIO, prompt_out: TextIO,
                 on_event: Callable[[str, Event], None] | None = None, **kwargs: Any) -> dict[str, Trace]:
    """``--step``: like :func:`ask_modes`, but every mode pauses after each step until Enter is read.

    End of input (Ctrl-D, or a pipe that runs dry) lets every mode run to the end.
    """
    traces = {m: Trace(m, question) for m in modes}
    run = ComparisonRun(question, modes, stepping=True, **kwargs).start()
    stepping = True
    try:
        while True:
            item = run.poll(timeout=0.05)
            if item is None and stepping and run.waiting_for_step:
                item = run.poll(timeout=0)  # an event queued just before the pause is shown before the prompt
                if item is None:
                    stepping = _ask_for_step(run, prompt_out, stdin)
                    continue
            if item is not None:
                traces[item[0]].add(item[1])
                if on_event:
                    on_event(*item)
            elif run.done:
                break
    finally:
        run.close()
    for trace in traces.values():
        trace.finish()
    return traces


def _ask_for_step(run: ComparisonRun, out: TextIO, stdin: TextIO) -> bool:
    """Prompt, wait for a line, advance; False (after resuming) once the input has ended."""
    waiting = ", ".join(mode_title(m) for m in run.paused)
    print(f"⏸ paused: {waiting} — Enter: next step · Ctrl-D: run to the end", file=out, flush=True)
    if stdin.readline():
        run.step()
        return True
    run.resume()
    return False


def to_json(question: str, traces: dict[str, Trace], settings: LLMSettings, expected: str | None = None) -> dict:
    """The documented ``--json`` object: question, model, and one summary per mode; with ``--expected``, also
    ``expected`` and each run's ``verdict`` (``agents.correctness.Verdict.to_dict``)."""
    runs = {mode: trace.summary() for mode, trace in traces.items()}
    if expected is None:
        return {"question": question, "model": settings.describe(), "runs": runs}
    for mode, trace in traces.items():
        runs[mode]["verdict"] = judge(trace.answer, expected, question).to_dict()
    return {"question": question, "model": settings.describe(), "expected": expected, "runs": runs}


class _Printer:
    """Renders events as readable lines, each step once, and the summary.

    With one mode the reply streams live as it arrives, and a parsed Thought, Action, answer or reflection the
    stream already showed is not printed again (a native tool call, an Observation, a forced answer are). With
    several modes whole events print, tagged with their mode. A model error is said once: an error already said
    (on stderr, or for another mode) is named as such, not repeated.
    """

    def __init__(self, out: TextIO, *, live: bool, said: Iterable[str] = ()) -> None:
        self.out, self.live, self.streaming = out, live, False
        self.streamed = ""  # the reply streamed last (kept until the next reply streams)
        self.said = {s for s in said if s}  # model errors already said in full

    def on_event(self, mode: str, event: Event) -> None:
        tag = "" if self.live else f"[{mode_title(mode)}] "
        if isinstance(event, TokenDelta):
            if self.live and event.channel != "reasoning":
                if not self.streaming:
                    self.streamed, self.streaming = "", True
                self.streamed += event.text
                self.out.write(event.text)
                self.out.flush()
            return
        if self.streaming:  # the streamed reply is complete: what follows starts on a line of its own
            self.streaming = False
            if not self.streamed.endswith("\n"):
                self.out.write("\n")
        if self.live and _shown_in(event, self.streamed):
            return
        line = self._said_before(event) or _describe(event)
        if line:
            print(f"{tag}{line}", file=self.out, flush=True)

    def _said_before(self, event: Event) -> str | None:
        """The short line for a model error already said in full; None for anything else (noting the error)."""
        if not isinstance(event, LLMError):
            return None
        if event.message in self.said:
            return f"Model error: {_SAME}"
        self.said.add(event.message)
        return None

    def summary(self, traces: dict[str, Trace], expected: str | None = None) -> None:
        """Each mode's answer (or why none: a model error already said is not repeated), its ✓ / ✗ and F1 when an
        answer is expected, and its metrics; then the page table's lines: which answers agree, and how many
        modes got the expected answer."""
        print("\n" + "=" * 60, file=self.out)
        verdicts = {m: judge(t.answer, expected, t.question) for m, t in traces.items()} if expected is not None \
            else {}
        for mode, trace in traces.items():
            error = f"model error, {_SAME}" if trace.error in self.said else trace.error
            answer = trace.answer if trace.answer is not None else f"(no answer: {error})"
            verdict = verdicts.get(mode)
            mark = f"{verdict.mark} F1 {verdict.f1:.2f} · " if verdict is not None else ""
            print(f"{mode_title(mode):>10}: {mark}{answer}\n{'':>12}{metrics_line(trace)}", file=self.out)
        if len(traces) > 1:
            print(f"\n{agreement(traces, {m: v.correct for m, v in verdicts.items()} or None)}", file=self.out)
        if verdicts:
            right = sum(v.correct for v in verdicts.values())
            print(f"Expected answer: {expected} — {expected_line(right, len(verdicts))}.", file=self.out)


_SAME = "the same as above"  # a model error already said in full


def _shown_in(event: Event, streamed: str) -> bool:
    """Whether the streamed reply already showed ``event`` (its words, any case and spacing)."""
    if isinstance(event, Thought | FinalAnswer | Reflection):
        pieces = [event.text]
    elif isinstance(event, Action) and not event.nested and isinstance(event.input, str):
        pieces = [event.input] if event.code else [event.tool, event.input]
    else:
        return False
    text = _squashed(streamed)
    return bool(text) and all(_squashed(piece) in text for piece in pieces)


def _squashed(text: str) -> str:
    return " ".join(text.split()).casefold()


def _describe(event: Event) -> str | None:
    if isinstance(event, Thought):
        return f"Thought: {event.text}"
    if isinstance(event, Action):
        value = json.dumps(event.input, ensure_ascii=False) if isinstance(event.input, dict) else event.input
        if event.code:  # a CodeAct program; the tool calls it makes follow, indented
            return f"Code ({event.tool}):\n{value}"
        return f"{'    ↳ call' if event.nested else 'Action'}: {event.tool}[{value}]"
    if isinstance(event, Observation):
        flag = " (error)" if event.is_error else (" (cached)" if event.cached else "")
        return f"{'    ↳ result' if event.nested else 'Observation'}{flag} [{event.elapsed_s:.2f} s]: {event.output}"
    if isinstance(event, ParseError):
        return f"Format error, re-prompting: {event.message.splitlines()[0]}"
    if isinstance(event, LLMError):
        return f"Model error: {event.message}"
    if isinstance(event, Waiting):
        return f"⏳ {event.message}"
    if isinstance(event, Retry):
        return f"Retrying: {event.message}"
    if isinstance(event, Truncated):
        return f"Note: {event.message} (raise --max-tokens / LLM_MAX_TOKENS)"
    if isinstance(event, Paused):
        return f"⏸ step {event.step} done"
    if isinstance(event, Forked):
        return f"✎ observation {event.step + 1} edited by the teacher: {event.edited}"
    if isinstance(event, FinalAnswer):
        forced = (f" (forced: {event.why})" if event.why else " (forced)") if event.forced else ""
        return f"Final Answer{forced}: {event.text}"
    if isinstance(event, Trial):
        return f"── Trial {event.n} of {event.of} ──"
    if isinstance(event, Evaluation):
        answer = "no answer" if event.answer is None else f"answer {event.answer!r}"
        verdict = "✓ correct" if event.correct else "✗ not correct"
        return f"{verdict} ({answer}; {event.label}){f': {event.reason}' if event.reason else ''}"
    if isinstance(event, Reflection):
        return f"Reflection: {event.text}"
    return None
