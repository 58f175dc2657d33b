"""What a run's tokens cost, in US dollars: a price per million input and output tokens, never a made-up one.

Where a price comes from, in this order (docs/configuration.md, "Cost"):

1. the model listing of the server in use (``GET {base_url}/models``), which discovery already reads at start
   (:func:`agents.llm.discovery.resolve_model`) — the Hugging Face router's shape, a price per provider
   (``providers[].pricing = {"input": USD/1M, "output": USD/1M}``), or OpenRouter's, one price per model
   (``pricing = {"prompt": "USD per token", "completion": "USD per token"}``);
2. the owner's ``APP_PRICE_INPUT`` and ``APP_PRICE_OUTPUT`` (USD per million tokens, ``LLMSettings.price``);
3. otherwise none: metrics show tokens only.

The process's prices are one :class:`PriceBook`, published once at start (:func:`publish`); each
:class:`~agents.trace.Trace` keeps the book current when it is made, and an export keeps the price it used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PER_MILLION = 1_000_000
PRICE_RANGE = (0.0, 10_000.0)  # USD per million tokens: the dearest listed models cost well under a hundred
OWNER_SOURCE = "APP_PRICE_INPUT / APP_PRICE_OUTPUT"
ROUTER_POLICIES = ("fastest", "cheapest", "preferred")  # router suffixes that choose no one provider

Offers = tuple[tuple[str | None, "Price"], ...]  # (provider or None, price) as a listing gives them


@dataclass(frozen=True)
class Price:
    """USD per million input (prompt) and output (completion) tokens; ``source`` says where it came from."""

    input: float
    output: float
    source: str = ""

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Tokens × price, in USD."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / PER_MILLION

    def to_dict(self) -> dict[str, Any]:
        return {"input_per_million": self.input, "output_per_million": self.output, "source": self.source}

    @classmethod
    def from_dict(cls, data: Any) -> Price | None:
        """A price saved by :meth:`to_dict` (an export); None for anything else."""
        if not isinstance(data, dict):
            return None
        values = [_number(data.get(k)) for k in ("input_per_million", "output_per_million")]
        if None in values:
            return None
        return cls(values[0], values[1], str(data.get("source") or ""))


def _number(value: Any) -> float | None:
    """A listed price: a finite number ≥ 0 (OpenRouter sends strings); anything else is no price."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def listed_offers(item: Mapping[str, Any]) -> Offers:
    """The prices one ``data[]`` entry of a listing carries: per live provider (the router), or one (OpenRouter)."""
    offers: list[tuple[str | None, Price]] = []
    providers = item.get("providers")
    for p in providers if isinstance(providers, list) else []:
        pricing = p.get("pricing") if isinstance(p, dict) else None
        if not isinstance(pricing, dict) or p.get("status", "live") != "live":
            continue
        cost_in, cost_out = _number(pricing.get("input")), _number(pricing.get("output"))
        if cost_in is not None and cost_out is not None and isinstance(p.get("provider"), str):
            offers.append((p["provider"], Price(cost_in, cost_out)))
    pricing = item.get("pricing")
    if isinstance(pricing, dict):  # OpenRouter: USD per token, as strings
        cost_in, cost_out = _number(pricing.get("prompt")), _number(pricing.get("completion"))
        if cost_in is not None and cost_out is not None:
            offers.append((None, Price(cost_in * PER_MILLION, cost_out * PER_MILLION)))
    return tuple(offers)


def pick(offers: Offers, provider: str | None, where: str) -> Price | None:
    """The price of the provider that serves the call: the one named, else (the router picks) the cheapest."""
    if not offers:
        return None
    if provider and provider not in ROUTER_POLICIES and provider != "auto":
        named = next((price for name, price in offers if name == provider), None)
        return named and Price(named.input, named.output, f"listing of {where} (provider {provider})")
    if len(offers) == 1:
        name, price = offers[0]
        return Price(price.input, price.output, f"listing of {where}" + (f" (provider {name})" if name else ""))
    name, price = min(offers, key=lambda o: (o[1].input + o[1].output, o[0] or ""))
    return Price(price.input, price.output, f"listing of {where} (cheapest live provider, {name}: an estimate)")


@dataclass(frozen=True)
class PriceBook:
    """The prices a process knows: the listing's, per model id, and the owner's; ``model`` is the one it starts with."""

    model: str = ""
    provider: str | None = None
    where: str = "the server"
    listed: Mapping[str, Offers] = field(default_factory=dict)
    owner: Price | None = None
    fixed: Price | None = None  # a saved run's price (an export): used as it is

    def price_for(self, model: str | None = None) -> Price | None:
        """The price of ``model`` (the one that answered, when a server said; else the starting model): the listing's,
        else the owner's. Another model the listing does not price is never given the starting model's price."""
        if self.fixed is not None:
            return self.fixed
        # the starting model, unless the reply named another (the router names it without the ":provider" suffix)
        name = model if model and model.partition(":")[0] != self.model.partition(":")[0] else self.model
        base, _, suffix = name.partition(":")
        offers = self.listed.get(name) or self.listed.get(base)
        listed = pick(offers, suffix or self.provider, self.where) if offers else None
        return listed or self.owner


_current: PriceBook | None = None


def publish(book: PriceBook | None) -> None:
    """Make ``book`` the process's prices (at start, after the listing was read; tests reset it with None)."""
    global _current
    _current = book


def current() -> PriceBook | None:
    return _current


def price_of(model: str | None = None, default: Price | None = None) -> Price | None:
    """The process's price of ``model`` (None: the model it starts with) by its :class:`PriceBook`; ``default``
    when no book was published."""
    book = _current
    return book.price_for(model) if book is not None else default


def cost_fields(price: Price | None, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """A run summary's cost: ``cost_usd`` (None without a price) and, with one, the ``price`` it used."""
    if price is None:
        return {"cost_usd": None}
    return {"cost_usd": price.cost(prompt_tokens, completion_tokens), "price": price.to_dict()}


def cost_text(cost: float | None, estimated: bool = False) -> str | None:
    """``≈ $0.0004``, or ``~$0.0004`` when the tokens themselves are estimated; None with no price."""
    if cost is None:
        return None
    return f"{'~' if estimated else '≈ '}${format_usd(cost)}"


def format_usd(cost: float) -> str:
    """Two significant digits below a cent, cents above: 0.00037, 0.0004, 0.12, 3.50."""
    if cost <= 0:
        return "0"
    if cost >= 0.01:
        return f"{cost:.2f}"
    decimals = 1 - math.floor(math.log10(cost))
    return f"{cost:.{decimals}f}".rstrip("0")
