"""``duckduckgo_search``: real web results through ``ddgs`` with ``backend="duckduckgo"``.

Not the Instant-Answer API (which is empty for most questions) and not ``backend="auto"``
(which puts Wikipedia/Grokipedia first). ddgs reports a rate limit as
``DDGSException("No results found.")`` — indistinguishable from a genuinely empty result —
so both become an observation telling the model to rephrase or use ``wikipedia_search``. A request that never
reached DuckDuckGo (no network) says so, and suggests no other web tool: none would be reachable either.

The client is injected: :func:`search_web` takes ``ddgs=`` and the tool uses
:data:`DDGS_FACTORY`, so tests pass a fake instead of patching the network.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools.registry import ToolFailure, tool

MAX_RESULTS = 5
MAX_QUERY_CHARS = 400
SNIPPET_CHARS = 300
DDGS_TIMEOUT_S = 8

_HINT = "Try rephrasing with fewer or different keywords, or use wikipedia_search for encyclopedic topics."
# How ddgs words a request that never reached DuckDuckGo (its HTTP client's errors: no DNS, no route, refused)
_UNREACHABLE = ("error sending request", "dnserror", "dns error", "name resolution", "connecterror", "connect error",
                "connection refused", "network is unreachable", "no route to host")
UNREACHABLE = ("DuckDuckGo cannot be reached from this server (a network error): web search is unavailable for this "
               "run, so answer from what you know or the other tools' results.")


def make_ddgs() -> Any:
    """The real client; imported lazily so importing this module needs no network library setup."""
    from ddgs import DDGS

    return DDGS(timeout=DDGS_TIMEOUT_S)


DDGS_FACTORY: Callable[[], Any] = make_ddgs


def search_web(query: str, *, ddgs: Any | None = None, max_results: int = MAX_RESULTS) -> str:
    """Top ``max_results`` web results as numbered title / URL / snippet blocks; :class:`ToolFailure` otherwise."""
    q = " ".join(str(query or "").split()).strip()
    if not q:
        raise ToolFailure("duckduckgo_search needs a query, e.g. 'population of Lyon 2024'.")
    q = q[:MAX_QUERY_CHARS]
    from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

    client = ddgs if ddgs is not None else DDGS_FACTORY()
    try:
        results = client.text(q, region="us-en", safesearch="moderate", max_results=max_results, backend="duckduckgo")
    except RatelimitException:
        raise ToolFailure(f"DuckDuckGo is rate-limiting this server right now. {_HINT}") from None
    except TimeoutException:
        raise ToolFailure(f"DuckDuckGo did not answer in time. {_HINT}") from None
    except DDGSException as exc:
        reason = " ".join(str(exc).split())
        if any(words in reason.lower() for words in _UNREACHABLE):  # no other web tool is suggested: none is reachable
            raise ToolFailure(UNREACHABLE) from None
        if not reason or "no results" in reason.lower():
            raise ToolFailure(
                f"DuckDuckGo returned no results for '{q}' (this also happens when it rate-limits). {_HINT}"
            ) from None
        raise ToolFailure(f"DuckDuckGo search failed ({_clip(reason, 120)}). {_HINT}") from None
    usable = [r for r in results or [] if isinstance(r, dict) and (r.get("title") or r.get("href") or r.get("body"))]
    blocks = [_format(i, r) for i, r in enumerate(usable[:max_results], 1)]
    if not blocks:
        raise ToolFailure(f"DuckDuckGo returned no results for '{q}'. {_HINT}")
    return "\n".join(blocks)


def _format(i: int, r: dict[str, Any]) -> str:
    title = _clip(" ".join(str(r.get("title") or "").split()), 150)
    url = str(r.get("href") or r.get("url") or "").strip()
    body = _clip(" ".join(str(r.get("body") or "").split()), SNIPPET_CHARS)
    lines = [f"{i}. {title or url or '(untitled)'}"]
    if url:
        lines.append(f"   {url}")
    if body:
        lines.append(f"   {body}")
    return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@tool(timeout_s=12, cache_ttl_s=600, web=True, verb="searched the web")
def duckduckgo_search(query: str) -> str:
    """Search the web with DuckDuckGo and return the top 5 results (title, URL, snippet). Input: a short search query.

    Good for recent facts, prices, events and anything not in an encyclopedia.
    """
    return search_web(query)
