"""Which models an OpenAI-compatible server serves: ``GET {base_url}/models``.

Ollama, vLLM, llama.cpp, TGI and LM Studio all answer it. With ``LLM_BASE_URL`` set and ``LLM_MODEL`` not, the app
and the CLI ask once at start (:func:`resolve_model`) and use the first model listed, so pointing the app at a
server is one variable. Nothing here raises: a server that cannot be asked is a :class:`ModelList` with ``error``
set. A price in the listing (the Hugging Face router, OpenRouter) becomes the process's
:class:`~agents.llm.pricing.PriceBook`, so costs need no request of their own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from huggingface_hub.utils import httpx  # httpx2 under its stable alias, as hf.py uses

from agents.llm import pricing

if TYPE_CHECKING:
    from agents.llm.settings import LLMSettings

log = logging.getLogger(__name__)

LIST_TIMEOUT_S = 3.0  # a local server answers at once; a start-up must not hang on one that does not
MAX_MODELS = 100  # a hosted gateway may list thousands: the Settings box and an error line show the first ones
MAX_ID_CHARS = 200
SHOW_MODELS = 8  # models named in a "no such model" line; the rest are counted


@dataclass(frozen=True)
class ModelList:
    """The ids a server listed, in its order; ``error`` (one line) says why there are none."""

    ids: tuple[str, ...] = ()
    error: str | None = None
    # id → the prices its entry lists, when it does (agents.llm.pricing.listed_offers)
    prices: Mapping[str, pricing.Offers] = field(default_factory=dict, compare=False)


def list_models(base_url: str, api_key: str | None = None, *, timeout: float = LIST_TIMEOUT_S) -> ModelList:
    """``GET {base_url}/models`` with ``LLM_API_KEY`` (never a Hugging Face token) → the ids it lists."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        return ModelList(error=f"it did not answer GET /models within {timeout:g} s")
    except httpx.HTTPError as exc:
        log.info("listing the models of %s failed: %s: %s", base_url, type(exc).__name__, exc)
        return ModelList(error=f"it could not be reached ({type(exc).__name__})")
    if response.status_code != 200:
        return ModelList(error=f"GET /models answered HTTP {response.status_code}")
    try:
        data = response.json()
    except ValueError:
        return ModelList(error="GET /models did not answer JSON")
    items = data.get("data") if isinstance(data, dict) else None
    entries = [item for item in (items if isinstance(items, list) else [])
               if isinstance(item, dict) and isinstance(item.get("id"), str) and _usable(item["id"])]
    ids = tuple(dict.fromkeys(item["id"].strip() for item in entries))
    if not ids:
        return ModelList(error="GET /models lists no models")
    refused: list[str] = []
    prices = {item["id"].strip(): offers for item in entries if (offers := pricing.listed_offers(item, refused))}
    if refused:  # one line for the whole listing, however many prices it gets wrong
        log.warning("GET /models listed prices the app refuses (not a number, below 0, not finite, or over $%g a "
                    "million tokens) for %d model(s), shown with no price: %s", pricing.MAX_PRICE, len(refused),
                    "; ".join(refused[:3])[:300])
    return ModelList(ids[:MAX_MODELS], prices=MappingProxyType(prices))


def _usable(model_id: str) -> bool:
    """An id we can show and send back: one printable line of reasonable length."""
    text = model_id.strip()
    return 0 < len(text) <= MAX_ID_CHARS and text.isprintable()


def resolve_model(settings: LLMSettings, *, timeout: float = LIST_TIMEOUT_S) -> LLMSettings:
    """The settings with the model a ``base_url`` server serves, when ``LLM_MODEL`` named none.

    One model listed → that one; several → the first, all of them in ``models`` (the Settings box
    offers them); none, or no such endpoint → unchanged but for ``models_error``, and ``problem()``
    says to set ``LLM_MODEL``. A model that was named (``LLM_MODEL``, ``--model``) is used as is, unchecked.
    Either way the process's prices are published (:func:`publish_prices`): the listing's, then the owner's.
    """
    if not settings.base_url or settings.model:
        publish_prices(settings)
        return settings
    listed = list_models(settings.base_url, settings.token, timeout=timeout)
    resolved = (replace(settings, model=listed.ids[0], models=listed.ids) if listed.ids
                else replace(settings, models_error=listed.error))
    publish_prices(resolved, listed.prices)
    return resolved


def publish_prices(settings: LLMSettings, listed: Mapping[str, pricing.Offers] | None = None) -> pricing.PriceBook:
    """The process's prices: what the server's listing gave per model (none when it was not asked), then the
    owner's ``APP_PRICE_INPUT`` / ``APP_PRICE_OUTPUT``; every run made afterwards keeps them."""
    book = pricing.PriceBook(settings.model, settings.provider, settings.where(), listed or {}, settings.price)
    pricing.publish(book)
    return book


def names_missing_model(status: int | None, message: str) -> bool:
    """A refused call's (lower-cased) message says the server has no such model: Ollama's and vLLM's 404s,
    OpenAI's ``model_not_found``."""
    if "model_not_found" in message:
        return True
    named = "model" in message and any(s in message for s in ("not found", "does not exist", "not exist"))
    return status in (400, 404) and named


def missing_model_line(settings: LLMSettings) -> str:
    """One line for a model the server does not have: the model asked for and, when it lists them, the ones it has."""
    asked, where = settings.model, settings.where()
    if not settings.base_url:
        return f"model {asked} was not found on {where} — pick another model"
    has = settings.models or list_models(settings.base_url, settings.token).ids
    shown = ", ".join(has[:SHOW_MODELS]) + (f" and {len(has) - SHOW_MODELS} more" if len(has) > SHOW_MODELS else "")
    offer = (f"; it has {shown} — set LLM_MODEL (or the Model setting) to one of them" if has
             else " — set LLM_MODEL to a model it serves")
    return f"the server at {where} has no model {asked!r}{offer}"
