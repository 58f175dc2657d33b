"""The command line's exit codes and its one kind of usage error.

Every command reports bad input the same way: it raises :class:`UsageError`, and
:func:`agents.cli.main` prints it and returns :data:`EXIT_USAGE`. A failed model call is not
a usage error: it is a run with ``error`` set, and the exit code stays :data:`EXIT_OK`.
"""

from __future__ import annotations

import argparse
import math

from agents.llm.discovery import resolve_model
from agents.llm.settings import MAX_TOKENS_RANGE, LLMSettings
from agents.settings import TEMPERATURE_RANGE, model_problem
from settings import SettingError

EXIT_OK = 0
EXIT_USAGE = 2  # argparse's own code for a bad command line
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C


class UsageError(Exception):
    """Input the command cannot use; ``str(exc)`` is the line to print.

    ``parser`` is the (sub)command it concerns (filled in by :func:`agents.cli.main` when a command
    leaves it out). ``show_usage=False`` for problems that are not about the command line (an
    environment variable, no model configured): then only the one line is printed.
    """

    def __init__(self, message: str, parser: argparse.ArgumentParser | None = None, *,
                 show_usage: bool = True) -> None:
        super().__init__(message)
        self.parser = parser
        self.show_usage = show_usage


def check_model_flags(model: str | None, max_tokens: int | None, temperature: float | None = None) -> None:
    """``--model``, ``--max-tokens`` and ``--temperature`` as a server is sent them: a value out of range is a
    :class:`UsageError` naming the range (``--max-tokens`` has ``LLM_MAX_TOKENS``'s), never clamped."""
    if model is not None and (problem := model_problem(model.strip(), "--model")):
        raise UsageError(problem.rstrip("."))
    low, high = MAX_TOKENS_RANGE
    if max_tokens is not None and not low <= max_tokens <= high:
        raise UsageError(f"--max-tokens must be between {low} and {high}")
    low_t, high_t = TEMPERATURE_RANGE
    if temperature is not None and not (math.isfinite(temperature) and low_t <= temperature <= high_t):
        raise UsageError(f"--temperature must be between {low_t:g} and {high_t:g}")


def llm_settings(model: str | None = None) -> LLMSettings:
    """The model settings from the environment, with ``--model``; an invalid variable is a usage error.

    ``LLM_BASE_URL`` without ``LLM_MODEL`` (or ``--model``): the server is asked which models it serves, once."""
    try:
        settings = LLMSettings.from_env().with_overrides(model=model)
    except SettingError as exc:
        raise UsageError(str(exc), show_usage=False) from None
    return resolve_model(settings)
