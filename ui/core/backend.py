"""Which model the app uses, decided once when ``python app.py`` starts.

A configured server without a named model is asked which models it serves
(:func:`agents.llm.discovery.resolve_model`). Off a Space with nothing configured, the app starts the
toy model (:func:`agents.llm.toy_model.toy_policy` behind the stub server, in this process, on a free
loopback port) and uses it, so a first run shows the modes at work before anyone finds a token; the
header says it is a toy and how to connect a real model. ``APP_TOY_MODEL=0`` turns that off. On a Space
nothing changes: visitors sign in, or the Space's ``HF_TOKEN`` pays.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from agents.llm.discovery import resolve_model
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from agents.llm.toy_model import toy_policy

log = logging.getLogger(__name__)

TOY_MODEL = "toy"  # the id the toy lists and is asked for (it answers any)
TOY_TOKEN_DELAY_S = 0.02  # its replies stream visibly, as a real model's do

_servers: list[StubLLMServer] = []  # the toy servers this process started (one in an app; kept alive with it)


def choose_backend(settings: LLMSettings, *, on_space: bool, toy: bool) -> LLMSettings:
    """The settings the app runs with: a named model as is, a server's listed model, or the toy model."""
    if settings.configured:
        return resolve_model(settings)
    if on_space or not toy:
        return settings
    return start_toy(settings)


def start_toy(settings: LLMSettings) -> LLMSettings:
    """Serve the toy model on 127.0.0.1 (a free port) in this process; ``settings`` pointed at it."""
    server = StubLLMServer(toy_policy, token_delay=TOY_TOKEN_DELAY_S, models=(TOY_MODEL,)).start()
    _servers.append(server)
    log.info("no model is configured: serving the toy model at %s (APP_TOY_MODEL=0 turns this off)", server.url)
    return replace(settings, base_url=server.url, model=TOY_MODEL, models=(TOY_MODEL,), provider=None, token=None,
                   toy=True)


def stop_toys() -> None:
    """Stop the toy servers this process started (tests; an app's ends with its process)."""
    while _servers:
        _servers.pop().stop()
