"""Which model the app uses, decided once when ``python app.py`` starts: :mod:`agents.llm.backend`, which
``python -m agents ask`` shares so that both run the toy model alike when nothing is configured.

A configured server without a named model is asked which models it serves. Off a Space with nothing
configured, the app starts the toy model and uses it; the header says it is a toy and how to connect a
real model. ``APP_TOY_MODEL=0`` turns that off. On a Space nothing changes: visitors sign in, or the
Space's ``HF_TOKEN`` pays.
"""

from __future__ import annotations

from agents.llm.backend import TOY_MODEL, TOY_TOKEN_DELAY_S, _servers, choose_backend, start_toy, stop_toys

__all__ = ["TOY_MODEL", "TOY_TOKEN_DELAY_S", "_servers", "choose_backend", "start_toy", "stop_toys"]
