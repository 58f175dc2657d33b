"""``wikipedia_search``: search → best title → summary, through the maintained Wikipedia-API client.

What the tool answers is in docs/tools.md; how (the MediaWiki calls) is :func:`_lookup`'s docstring.
"Could not find" is an answer, not a failure, so it is not an error result (and is cached); network and API
failures raise :class:`ToolFailure` with a one-line reason. :func:`make_wiki` accepts ``transport=`` so tests
pass an ``httpx.MockTransport`` instead of touching the network.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any
from urllib.parse import quote

import httpx
import wikipediaapi

from tools.registry import ToolFailure, tool

USER_AGENT = "ThinkActReAct/0.1 (https://huggingface.co/spaces; educational demo)"
HTTP_TIMEOUT_S = 6.0
MAX_SENTENCES = 5
MAX_SUMMARY_CHARS = 1500
MAX_CANDIDATES = 15
DISAMBIGUATION_CATEGORY = "Category:All disambiguation pages"
MAX_RETRY_AFTER_S = 1


class _GuardTransport(httpx.BaseTransport):
    """Wraps a transport so MediaWiki's ``{"error": {...}}`` answers (HTTP 200) become a clear failure
    instead of looking like an empty result, and so a 429's ``Retry-After`` cannot make the client
    sleep longer than :data:`MAX_RETRY_AFTER_S` (Wikipedia-API honours it uncapped)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        if response.status_code == 429:
            retry_after = response.headers.get("Retry-After", "")
            if not retry_after.isdigit() or int(retry_after) > MAX_RETRY_AFTER_S:
                response.headers["Retry-After"] = str(MAX_RETRY_AFTER_S)
        if response.status_code == 200 and "json" in response.headers.get("content-type", ""):
            response.read()
            try:
                payload = json.loads(response.content)
            except ValueError:
                return response
            if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
                err = payload["error"]
                info = " ".join(str(err.get("info") or err.get("code") or "unknown error").split())
                raise ToolFailure(f"Wikipedia API error: {info[:200]}")
        return response

    def close(self) -> None:
        self._inner.close()


def make_wiki(
    transport: httpx.BaseTransport | None = None,
    *,
    timeout: float = HTTP_TIMEOUT_S,
    max_retries: int = 1,
    retry_wait: float = 0.5,
) -> wikipediaapi.Wikipedia:
    """An English Wikipedia client with a descriptive User-Agent, a timeout and one quick retry.
    Tests pass ``transport=httpx.MockTransport(handler)``."""
    return wikipediaapi.Wikipedia(
        user_agent=USER_AGENT,
        language="en",
        extract_format=wikipediaapi.ExtractFormat.WIKI,
        max_retries=max_retries,
        retry_wait=retry_wait,
        timeout=timeout,
        transport=_GuardTransport(transport or httpx.HTTPTransport()),
    )


_client: wikipediaapi.Wikipedia | None = None
_client_lock = threading.Lock()


def shared_wiki() -> wikipediaapi.Wikipedia:
    global _client
    with _client_lock:
        if _client is None:
            _client = make_wiki()
        return _client


def lookup(query: str, *, wiki: wikipediaapi.Wikipedia | None = None) -> str:
    """Answer ``query`` with a Wikipedia summary, a disambiguation list, or ``Could not find``."""
    q = " ".join(str(query or "").split()).strip().strip("[]\"'")
    if not q:
        raise ToolFailure("wikipedia_search needs a topic or title, e.g. 'Marie Curie'.")
    q = q[:300]
    wiki = wiki or shared_wiki()
    try:
        return _lookup(q, wiki)
    except ToolFailure:
        raise
    except wikipediaapi.WikiRateLimitError:
        raise ToolFailure("Wikipedia is rate-limiting requests; wait a moment or use duckduckgo_search.") from None
    except wikipediaapi.WikiHttpTimeoutError:
        raise ToolFailure("Wikipedia did not answer in time; try again or use duckduckgo_search.") from None
    except wikipediaapi.WikiConnectionError:  # no network: another web tool would not be reachable either
        raise ToolFailure("Wikipedia cannot be reached from this server (a network error): it is unavailable for this "
                          "run, so answer from what you know or the other tools' results.") from None
    except wikipediaapi.WikiInvalidJsonError:
        raise ToolFailure("Wikipedia sent an answer that is not JSON; try again later.") from None
    except wikipediaapi.WikiHttpError as exc:
        status = getattr(exc, "status_code", None) or (exc.args[0] if exc.args else "?")
        raise ToolFailure(f"Wikipedia answered HTTP {status}; try again later or use duckduckgo_search.") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ToolFailure(f"Wikipedia sent data in an unexpected shape ({type(exc).__name__}).") from None


def _lookup(q: str, wiki: wikipediaapi.Wikipedia) -> str:
    """Every request is a MediaWiki ``action=query`` call that Wikipedia-API builds:

    1. ``list=search`` (``srlimit=5``); the best title is a hit whose title matches the query, else the top hit.
    2. ``prop=extracts&exintro=1&explaintext=1`` for that title (``redirects=1`` is always sent, so the resolved
       title is reported), cut to the first sentences.
    3. a disambiguation check (:func:`_is_disambiguation`); such a page is answered with its candidate titles
       (its ``prop=links``, in the order they appear on the page) so the model can pick one.
    4. no hits at all: ``Could not find X. Similar: [...]`` as in the ReAct paper's environment (similar titles
       come from the search's spelling suggestion, when there is one).
    """
    results = wiki.search(q, limit=5)
    titles = list(results.pages)
    if not titles:
        similar: list[str] = []
        if results.suggestion and _norm(results.suggestion) != _norm(q):
            similar = list(wiki.search(results.suggestion, limit=5).pages) or [results.suggestion]
        return f"Could not find {q}. Similar: {similar}."
    best = next((t for t in titles if _norm(t) == _norm(q)), titles[0])
    page = wiki.page(best)
    intro = wiki.extracts(page, exintro=1)
    if not page.exists() or not intro.strip():
        others = [t for t in titles if t != best]
        return f"Could not find {q}. Similar: {others}."
    title = page.title
    if _is_disambiguation(wiki, page):
        return _disambiguation(wiki, page, q)
    summary = first_sentences(intro, MAX_SENTENCES, MAX_SUMMARY_CHARS)
    header = f"{title} ({article_url(title)})"
    others = [t for t in titles if t not in (best, title)][:4]
    tail = f"\nOther matching articles: {others}" if others else ""
    return f"{header}\n{summary}{tail}"


def _is_disambiguation(wiki: wikipediaapi.Wikipedia, page: Any) -> bool:
    """``prop=categories`` for :data:`DISAMBIGUATION_CATEGORY`: Wikipedia-API has no ``pageprops`` call, and this
    category is what ``pageprops.disambiguation`` mirrors."""
    if page.title.endswith("(disambiguation)"):
        return True
    categories = wiki.categories(page, clcategories=DISAMBIGUATION_CATEGORY)
    return DISAMBIGUATION_CATEGORY in categories


def _disambiguation(wiki: wikipediaapi.Wikipedia, page: Any, q: str) -> str:
    links = [t for t, p in wiki.links(page, plnamespace=0).items() if getattr(p, "namespace", 0) == 0]
    text = wiki.page(page.title).text  # the whole (short) page: gives the order in which candidates are listed
    low = text.lower()

    def position(title: str) -> int:
        idx = low.find(title.lower())
        return idx if idx >= 0 else len(low) + 1

    candidates = sorted(links, key=position)[:MAX_CANDIDATES]
    if not candidates:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
        candidates = lines[1 : 1 + MAX_CANDIDATES]
    return (
        f"'{page.title}' is a disambiguation page; '{q}' may refer to: {candidates}. "
        "Search again with the exact title you mean."
    )


_ABBREV = re.compile(
    r"(?:\b(?:[A-Z]|Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Gen|Col|Lt|Mt|No|vs|etc|approx|ca|c|e\.g|i\.e|U\.S|U\.K)\.)$"
)


def first_sentences(text: str, n: int = MAX_SENTENCES, limit: int = MAX_SUMMARY_CHARS) -> str:
    """The first ``n`` sentences of ``text`` (not splitting after "Dr." or "U.S."), at most ``limit`` characters."""
    flat = " ".join(text.split())
    sentences: list[str] = []
    start = 0
    for m in re.finditer(r"[.!?][\"')\]]?(?=\s+[\"'(\[]?[A-Z0-9])", flat):
        candidate = flat[start : m.end()].strip()
        if _ABBREV.search(flat[start : m.end()]):
            continue
        sentences.append(candidate)
        start = m.end()
        if len(sentences) >= n:
            break
    else:
        rest = flat[start:].strip()
        if rest:
            sentences.append(rest)
    out = " ".join(sentences[:n])
    if len(out) > limit:
        cut = out[:limit]
        out = cut[: cut.rfind(" ")] + " …" if " " in cut else cut + "…"
    return out


def article_url(title: str) -> str:
    return "https://en.wikipedia.org/wiki/" + quote(title.replace(" ", "_"), safe="()_,'-:")


def _norm(text: str) -> str:
    return " ".join(text.replace("_", " ").lower().split())


@tool(timeout_s=12, cache_ttl_s=600, web=True, verb="looked it up on Wikipedia")
def wikipedia_search(query: str) -> str:
    """Look up a topic on English Wikipedia and return the start of the best-matching article.
    Input: a topic or article title (e.g. "Marie Curie").

    Ambiguous names return a list of candidate titles; search again with the one you mean.
    """
    return lookup(query)
