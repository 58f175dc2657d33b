"""Which model a process uses when it starts: the app (``python app.py``) and ``python -m agents ask`` decide alike.

A configured server without a named model is asked which models it serves
(:func:`agents.llm.discovery.resolve_model`). Off a Space with nothing configured, the toy model
(:func:`agents.llm.toy_model.toy_policy` behind the stub server, in this process, on a free loopback port)
answers, so a first run shows the modes at work before anyone finds a token; the app's header and the CLI's
one stderr line say it is a toy and how to connect a real model. ``APP_TOY_MODEL=0`` turns that off for both.
On a Space (``SPACE_ID`` set) no toy starts: visitors sign in, or the Space's ``HF_TOKEN`` pays.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace

from agents.llm.discovery import resolve_model
from agents.llm.settings import TOY, TOY_LIMITS, LLMSettings
from agents.llm.stub_server import StubLLMServer
from agents.llm.toy_model import toy_policy
from settings import SETTINGS, read

log = logging.getLogger(__name__)

TOY_MODEL = "toy"  # the id the toy lists and is asked for (it answers any)
TOY_TOKEN_DELAY_S = 0.02  # its replies stream visibly, as a real model's do
TOY_SWITCH = "APP_TOY_MODEL"  # the app's switch, declared in settings.py
TOY_DEFAULT = SETTINGS[TOY_SWITCH].default  # on: with nothing configured the page and the CLI answer with the toy
TOY_NOTICE = (f"No model is configured, so {TOY} answers ({TOY_LIMITS}). For a real model set HF_TOKEN "
              "(the Hugging Face router) or LLM_BASE_URL (an OpenAI-compatible server, e.g. "
              f"http://localhost:11434/v1); {TOY_SWITCH}=0 turns the toy off.")

_servers: list[StubLLMServer] = []  # the toy servers start_toy started (one in an app; kept alive with it)


def choose_backend(settings: LLMSettings, *, on_space: bool, toy: bool) -> LLMSettings:
    """The settings the app runs with: a named model as is, a server's listed model, or the toy model."""
    if settings.configured:
        return resolve_model(settings)
    if on_space or not toy:
        return settings
    return start_toy(settings)


def wants_toy(settings: LLMSettings, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the toy answers for ``settings``: nothing configured, not on a Space, ``APP_TOY_MODEL`` on.

    An invalid ``APP_TOY_MODEL`` raises :class:`~settings.SettingError` (one line), as the app does."""
    environ = os.environ if environ is None else environ
    return not settings.configured and not environ.get("SPACE_ID") and read(TOY_SWITCH, environ)


def start_toy(settings: LLMSettings) -> LLMSettings:
    """Serve the toy model on 127.0.0.1 (a free port) in this process; ``settings`` pointed at it."""
    server = _toy_server()
    _servers.append(server)
    log.info("no model is configured: serving the toy model at %s (%s=0 turns this off)", server.url, TOY_SWITCH)
    return _pointed_at(settings, server)


@contextmanager
def toy_serving(settings: LLMSettings) -> Iterator[LLMSettings]:
    """:func:`start_toy` for one command: the toy serves inside the ``with`` block and stops when it ends."""
    server = _toy_server()
    try:
        yield _pointed_at(settings, server)
    finally:
        server.stop()


def stop_toys() -> None:
    """Stop the toy servers :func:`start_toy` started (tests; an app's end with its process)."""
    while _servers:
        _servers.pop().stop()


def _toy_server() -> StubLLMServer:
    return StubLLMServer(toy_policy, token_delay=TOY_TOKEN_DELAY_S, models=(TOY_MODEL,)).start()


def _pointed_at(settings: LLMSettings, server: StubLLMServer) -> LLMSettings:
    return replace(settings, base_url=server.url, model=TOY_MODEL, models=(TOY_MODEL,), provider=None, token=None,
                   toy=True)
