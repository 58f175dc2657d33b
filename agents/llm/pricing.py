"""What a run's tokens cost, in US dollars: a price per million input and output tokens, never a made-up one.

A price comes from the model listing of the server in use (read at start by
:func:`agents.llm.discovery.resolve_model`), else the owner's ``APP_PRICE_INPUT`` and ``APP_PRICE_OUTPUT``, else
none: metrics show tokens only (docs/configuration.md, "Cost"). The process's prices are one :class:`PriceBook`,
published once at start (:func:`publish`). A price is a finite number from 0 to :data:`MAX_PRICE`, or none: a
listing's price past that is refused, so no cost is ever NaN or infinite (a server's listing is untrusted).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

PER_MILLION = 1_000_000
MAX_PRICE = 1_000.0  # USD per million tokens: the dearest listed models cost well under a hundred
PRICE_RANGE = (0.0, MAX_PRICE)
MAX_TOKENS_COSTED = 10**12  # tokens one cost counts at most, whatever a record says
TINY_USD = 0.000001  # costs below this show as "< $0.000001"
OWNER_SOURCE = "APP_PRICE_INPUT / APP_PRICE_OUTPUT"
ROUTER_POLICIES = ("fastest", "cheapest", "preferred")  # router suffixes that choose no one provider

Offers = tuple[tuple[str | None, "Price"], ...]  # (provider or None, price) as a listing gives them


@dataclass(frozen=True)
class Price:
    """USD per million input (prompt) and output (completion) tokens; ``source`` says where it came from."""

    input: float
    output: float
    source: str = ""

    def __post_init__(self) -> None:
        if _number(self.input) is None or _number(self.output) is None:
            raise ValueError(f"a price is 0 to {MAX_PRICE:g} US dollars per million tokens, "
                             f"not {self.input!r} / {self.output!r}")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Tokens × price, in USD: finite, whatever the counts (each is taken between 0 and
        :data:`MAX_TOKENS_COSTED`)."""
        return (_tokens(prompt_tokens) * self.input + _tokens(completion_tokens) * self.output) / PER_MILLION

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


def _number(value: Any, scale: float = 1.0) -> float | None:
    """A price in USD per million tokens: ``value`` (OpenRouter sends strings) × ``scale``, a finite number from 0
    to :data:`MAX_PRICE`; anything else is no price."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value) * scale
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) and 0 <= number <= MAX_PRICE else None


def _tokens(count: Any) -> int:
    """A token count as a cost counts it: a whole number from 0 to :data:`MAX_TOKENS_COSTED`."""
    try:
        number = int(count)
    except (TypeError, ValueError, OverflowError):
        return 0
    return min(max(number, 0), MAX_TOKENS_COSTED)


def listed_offers(item: Mapping[str, Any], refused: list[str] | None = None) -> Offers:
    """The prices one ``data[]`` entry of a listing carries: per live provider (the router), or one (OpenRouter).
    A price given but refused (not a number, below 0, not finite, over :data:`MAX_PRICE` a million tokens) is no
    price; its model and value are added to ``refused`` (else logged, one line)."""
    offers: list[tuple[str | None, Price]] = []
    seen: list[str] = []
    providers = item.get("providers")
    for p in providers if isinstance(providers, list) else []:
        pricing = p.get("pricing") if isinstance(p, dict) else None
        if not isinstance(pricing, dict) or p.get("status", "live") != "live":
            continue
        price = _offer(pricing.get("input"), pricing.get("output"), 1.0, seen)
        if price is not None and isinstance(p.get("provider"), str):
            offers.append((p["provider"], price))
    pricing = item.get("pricing")
    if isinstance(pricing, dict):  # OpenRouter: USD per token, as strings
        price = _offer(pricing.get("prompt"), pricing.get("completion"), PER_MILLION, seen)
        if price is not None:
            offers.append((None, price))
    if seen:
        line = f"{str(item.get('id'))[:80]!r}: {', '.join(seen)}"
        if refused is None:
            log.warning("A model listing's price was refused (no price is shown for it): %s", line)
        else:
            refused.append(line)
    return tuple(offers)


def _offer(cost_in: Any, cost_out: Any, scale: float, refused: list[str]) -> Price | None:
    """A listed pair of prices, or None (each value given but refused is added to ``refused``)."""
    values = [_number(cost_in, scale), _number(cost_out, scale)]
    for given, value in zip((cost_in, cost_out), values, strict=True):
        if value is None and given is not None:
            refused.append(f"{str(given)[:40]!r}")
    return Price(values[0], values[1]) if None not in values else None


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
    """The prices a process knows: the listing's, per model id, and the owner's; ``model`` is the one it starts with.

    Listings come in the Hugging Face router's shape (a price per provider, USD per million tokens) or OpenRouter's
    (one price per model, USD per token). Each :class:`~agents.trace.Trace` keeps the book current when it is made,
    and an export keeps the price it used.
    """

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
    """``≈ $0.0004``, or ``~$0.0004`` when the tokens themselves are estimated, ``< $0.000001`` for less;
    None with no price."""
    if cost is None:
        return None
    if 0 < cost < TINY_USD:
        return f"{'~' if estimated else ''}< ${TINY_USD:.6f}"
    return f"{'~' if estimated else '≈ '}${format_usd(cost)}"


def format_usd(cost: float) -> str:
    """Two significant digits below a cent, cents above: 0.00037, 0.0004, 0.12, 3.50 (never NaN: a cost that
    is not a finite number reads 0, though :class:`Price` makes none)."""
    if not math.isfinite(cost) or cost <= 0:
        return "0"
    if cost >= 0.01:
        return f"{cost:.2f}"
    decimals = 1 - math.floor(math.log10(cost))
    return f"{cost:.{decimals}f}".rstrip("0")
