"""``python -m agents <command>``: one argparse parser, one subcommand module per command.

Each command module (``ask``, ``eval``, ``stub``) declares ``HELP`` (its line in the command list),
``DESCRIPTION``, ``configure(parser)`` (its flags) and ``run(args, **context) -> int``. Adding a
command is one module plus one line in :data:`COMMANDS`. Bad input anywhere — a flag argparse
rejects, a value a command refuses, an invalid environment variable — is a :class:`UsageError`,
printed once here and answered with :data:`EXIT_USAGE`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, NoReturn, TextIO

from agents.cli.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError
from settings import SettingError, check_environment

__all__ = ["COMMANDS", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "UsageError", "ask_main", "build_parser",
           "eval_main", "main"]

PROG = "python -m agents"
COMMANDS = {"ask": "agents.cli.ask", "eval": "agents.cli.eval", "stub": "agents.cli.stub"}


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors routed into the one usage-error path instead of ``sys.exit``."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self)


class _TopParser(_Parser):
    """The bare ``python -m agents``: its help is the command list, on stderr (as it always was)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.command_help: dict[str, str] = {}

    def format_help(self) -> str:
        lines = [f"  {name:<5} {text}" for name, text in self.command_help.items()]
        return f"usage: {PROG} {{{','.join(self.command_help)}}} ...\n\n" + "\n".join(lines) + "\n"

    def print_help(self, file: TextIO | None = None) -> None:
        (file or sys.stderr).write(self.format_help())


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: each command module adds its own flags to its subparser."""
    parser = _TopParser(prog=PROG)
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        parser.command_help[name] = module.HELP
        sub = commands.add_parser(name, prog=f"{PROG} {name}", help=module.HELP, description=module.DESCRIPTION)
        sub.set_defaults(command_parser=sub)
        module.configure(sub)
    return parser


def main(argv: list[str] | None = None, **context: Any) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, return the exit code.

    ``context`` goes to the command's ``run`` (tests pass ``out=`` to ``ask``, ``registry=`` to ``eval``).
    """
    parser = build_parser()
    args = None
    try:
        args, extra = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
        if args.command is None:
            raise UsageError("no command given", parser)
        if extra:  # reported by the command's parser, with its usage (argparse would blame the top one)
            raise UsageError(f"unrecognized arguments: {' '.join(extra)}", args.command_parser)
        try:  # every variable once, before the command reads any; an unknown APP_ name is one warning
            check_environment()
        except SettingError as exc:
            raise UsageError(str(exc), show_usage=False) from None
        return importlib.import_module(COMMANDS[args.command]).run(args, **context)
    except UsageError as exc:
        if exc.parser is None:
            exc.parser = getattr(args, "command_parser", parser)
        _report(exc)
        return EXIT_USAGE
    except SystemExit as exc:  # --help / -h: argparse printed the help and asked to exit
        return int(exc.code or EXIT_OK) if isinstance(exc.code, int | None) else EXIT_USAGE


def _report(exc: UsageError) -> None:
    """The one usage-error printer: the command's usage (if it is about the command line), then one line."""
    if isinstance(exc.parser, _TopParser):  # no or unknown command: the command list, as before
        exc.parser.print_help()
        return
    if exc.show_usage:
        exc.parser.print_usage(sys.stderr)
    print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)


def ask_main(argv: list[str], out: TextIO | None = None) -> int:
    """``python -m agents ask ARGV`` in-process; ``out`` receives what would go to stdout."""
    return main(["ask", *argv], **({} if out is None else {"out": out}))


def eval_main(argv: list[str], **context: Any) -> int:
    """``python -m agents eval ARGV`` in-process (``registry=`` replaces the default tools)."""
    return main(["eval", *argv], **context)
