"""wikipedia_search through Wikipedia-API with an httpx.MockTransport answering MediaWiki's real JSON shapes."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

import tools.wikipedia as wiki_mod
from tools import default_registry
from tools.registry import ToolFailure
from tools.wikipedia import USER_AGENT, first_sentences, lookup, make_wiki

CURIE = (
    "Maria Salomea Skłodowska-Curie (7 November 1867 – 4 July 1934), known simply as Marie Curie, was a Polish and "
    "naturalised-French physicist and chemist who conducted pioneering research on radioactivity. She was the first "
    "woman to win a Nobel Prize, the first person to win a Nobel Prize twice, and the only person to win a Nobel "
    "Prize in two scientific fields. Her husband, Pierre Curie, was a co-winner of her first Nobel Prize. She was, "
    "in 1906, the first woman to become a professor at the University of Paris. Curie was born in Warsaw, in what "
    "was then the Kingdom of Poland, part of the Russian Empire. She studied at Warsaw's clandestine Flying "
    "University and began her practical scientific training in Warsaw."
)
NYC = (
    "New York, often called New York City (NYC), is the most populous city in the United States. It is located at "
    "the southern tip of New York State on one of the world's largest natural harbors. The city comprises five "
    "boroughs, each coextensive with its respective county."
)
MERCURY_FULL = (
    "Mercury commonly refers to:\n\nMercury (planet), the closest planet to the Sun\nMercury (element), a metallic "
    "chemical element with the symbol Hg\nMercury (mythology), a Roman god\n\nMercury or The Mercury may also refer "
    "to:\n\n\n== Arts and entertainment ==\nMercury (Bob Seger album), 1980\nFreddie Mercury (1946–1991), lead "
    "singer of Queen\n\n\n== See also ==\nMercury Prize"
)
MERCURY_LINKS = [
    "Freddie Mercury", "Mercury (Bob Seger album)", "Mercury (element)", "Mercury (mythology)", "Mercury (planet)",
    "Mercury Prize", "Hermes",
]  # fmt: skip

# title -> (pageid, intro extract, full extract, is disambiguation)
PAGES: dict[str, tuple[int, str, str, bool]] = {
    "Marie Curie": (20408, CURIE, CURIE + "\n\n\n== Life ==\nEarly years.", False),
    "New York City": (645042, NYC, NYC, False),
    "Mercury": (19694, "Mercury commonly refers to:", MERCURY_FULL, True),
    "Pierre Curie": (23556, "Pierre Curie was a French physicist.", "", False),
    "Curie (unit)": (191009, "The curie is a unit of radioactivity.", "", False),
    "Python (programming language)": (23862, "Python is a programming language.", "", False),
    "Monty Python": (18942, "Monty Python were a British comedy troupe.", "", False),
    "Python": (46332325, "Pythons are snakes. They live in Africa.", "", False),
}
REDIRECTS = {"NYC": "New York City"}
SEARCH: dict[str, tuple[list[str], str | None]] = {
    "marie curie": (["Marie Curie", "Pierre Curie", "Curie (unit)"], None),
    "nyc": (["New York City"], None),
    "mercury": (["Mercury", "Mercury (planet)", "Mercury (element)"], None),
    "python": (["Python (programming language)", "Python", "Monty Python"], None),
    "kurie": ([], "curie"),
    "curie": (["Marie Curie", "Pierre Curie", "Curie (unit)"], None),
    "qwxzv": ([], None),
    "ghost": (["Ghost Page", "Pierre Curie"], None),
}


def _search(params: dict[str, str]) -> dict[str, Any]:
    hits, suggestion = SEARCH.get(params["srsearch"].lower(), ([], None))
    info: dict[str, Any] = {"totalhits": len(hits) * 1000}
    if suggestion:
        info.update(suggestion=suggestion, suggestionsnippet=suggestion)
    results = [
        {
            "ns": 0,
            "title": t,
            "pageid": PAGES.get(t, (99999,))[0],
            "size": 12345,
            "wordcount": 2345,
            "snippet": f'<span class="searchmatch">{t}</span> is …',
            "timestamp": "2025-11-01T10:22:33Z",
        }
        for t in hits[: int(params["srlimit"])]
    ]
    body: dict[str, Any] = {"batchcomplete": "", "query": {"searchinfo": info, "search": results}}
    if results:
        body["continue"] = {"sroffset": len(results), "continue": "-||"}
    return body


def _prop(params: dict[str, str], state: dict[str, Any]) -> dict[str, Any]:
    asked = params["titles"]
    query: dict[str, Any] = {}
    title = asked
    if asked in REDIRECTS:
        title = REDIRECTS[asked]
        query["redirects"] = [{"from": asked, "to": title}]
    if title not in PAGES:
        query["pages"] = {"-1": {"ns": 0, "title": title, "missing": ""}}
        return {"batchcomplete": "", "query": query}
    pageid, intro, full, disamb = PAGES[title]
    page: dict[str, Any] = {"pageid": pageid, "ns": 0, "title": title}
    prop = params["prop"]
    if prop == "extracts":
        page["extract"] = intro if params.get("exintro") == "1" else (full or intro)
    elif prop == "categories":
        if disamb and params.get("clcategories") == "Category:All disambiguation pages":
            page["categories"] = [{"ns": 14, "title": "Category:All disambiguation pages"}]
    elif prop == "links":
        assert params.get("plnamespace") == "0"
        links = [{"ns": 0, "title": t} for t in MERCURY_LINKS] if disamb else []
        if "plcontinue" not in params:  # first batch; MediaWiki pages with plcontinue
            page["links"] = links[:3]
            query["pages"] = {str(pageid): page}
            state["link_batches"] = 1
            return {"continue": {"plcontinue": f"{pageid}|0|Mercury_(mythology)", "continue": "||"}, "query": query}
        state["link_batches"] += 1
        page["links"] = links[3:]
    query["pages"] = {str(pageid): page}
    return {"batchcomplete": "", "query": query}


class FakeWikipedia:
    """A MockTransport handler for https://en.wikipedia.org/w/api.php, recording every request."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.state: dict[str, Any] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        assert request.url.host == "en.wikipedia.org" and request.url.path == "/w/api.php"
        params = dict(request.url.params)
        assert params["action"] == "query" and params["format"] == "json" and params["redirects"] == "1"
        if params.get("list") == "search":
            return httpx.Response(200, json=_search(params))
        return httpx.Response(200, json=_prop(params, self.state))

    def kinds(self) -> list[str]:
        return [r.url.params.get("list") or r.url.params.get("prop") for r in self.requests]


@pytest.fixture
def fake() -> FakeWikipedia:
    return FakeWikipedia()


@pytest.fixture
def wiki(fake: FakeWikipedia) -> Any:
    return make_wiki(transport=httpx.MockTransport(fake), max_retries=0)


def test_summary_of_the_best_title(fake: FakeWikipedia, wiki: Any) -> None:
    out = lookup("Marie Curie", wiki=wiki)
    lines = out.split("\n")
    assert lines[0] == "Marie Curie (https://en.wikipedia.org/wiki/Marie_Curie)"
    assert lines[1].startswith("Maria Salomea Skłodowska-Curie (7 November 1867 – 4 July 1934)")
    assert lines[1].endswith("part of the Russian Empire.")  # 5 sentences
    assert "clandestine" not in lines[1]
    assert lines[2] == "Other matching articles: ['Pierre Curie', 'Curie (unit)']"
    assert fake.kinds() == ["search", "extracts", "categories"]
    search = dict(fake.requests[0].url.params)
    assert search["srsearch"] == "Marie Curie" and search["srlimit"] == "5"
    extracts = dict(fake.requests[1].url.params)
    assert extracts["exintro"] == "1" and extracts["explaintext"] == "1" and extracts["titles"] == "Marie Curie"


def test_descriptive_user_agent(fake: FakeWikipedia, wiki: Any) -> None:
    lookup("Marie Curie", wiki=wiki)
    for request in fake.requests:
        assert request.headers["User-Agent"].startswith(USER_AGENT)
    assert "ThinkActReAct/0.1" in USER_AGENT and "https://" in USER_AGENT


def test_redirect_reports_the_resolved_title(wiki: Any) -> None:
    SEARCH["nyc"] = (["NYC"], None)
    try:
        out = lookup("NYC", wiki=wiki)
    finally:
        SEARCH["nyc"] = (["New York City"], None)
    assert out.startswith("New York City (https://en.wikipedia.org/wiki/New_York_City)\nNew York, often called")


def test_exact_title_match_beats_the_top_hit(wiki: Any) -> None:
    out = lookup("python", wiki=wiki)
    assert out.startswith("Python (https://en.wikipedia.org/wiki/Python)\nPythons are snakes.")
    assert "Python (programming language)" in out.split("\n")[-1]


def test_disambiguation_page_lists_candidate_titles_in_page_order(fake: FakeWikipedia, wiki: Any) -> None:
    out = lookup("Mercury", wiki=wiki)
    assert out.startswith("'Mercury' is a disambiguation page; 'Mercury' may refer to: [")
    listed = out[out.index("[") : out.index("]") + 1]
    assert listed == (
        "['Mercury (planet)', 'Mercury (element)', 'Mercury (mythology)', 'Mercury (Bob Seger album)', "
        "'Freddie Mercury', 'Mercury Prize', 'Hermes']"
    )
    assert "Search again with the exact title" in out
    assert fake.state["link_batches"] == 2  # followed plcontinue
    assert fake.kinds() == ["search", "extracts", "categories", "links", "links", "extracts"]


def test_not_found_lists_similar_titles_from_the_suggestion(fake: FakeWikipedia, wiki: Any) -> None:
    out = lookup("Kurie", wiki=wiki)
    assert out == "Could not find Kurie. Similar: ['Marie Curie', 'Pierre Curie', 'Curie (unit)']."
    assert [r.url.params["srsearch"] for r in fake.requests] == ["Kurie", "curie"]


def test_not_found_without_suggestion(wiki: Any) -> None:
    assert lookup("qwxzv", wiki=wiki) == "Could not find qwxzv. Similar: []."


def test_search_hit_whose_page_is_missing(wiki: Any) -> None:
    assert lookup("ghost", wiki=wiki) == "Could not find ghost. Similar: ['Pierre Curie']."


@pytest.mark.parametrize("query", ["", "   ", None, "[]"])
def test_empty_query_is_refused_without_a_request(fake: FakeWikipedia, wiki: Any, query: object) -> None:
    with pytest.raises(ToolFailure, match="needs a topic"):
        lookup(query, wiki=wiki)  # type: ignore[arg-type]
    assert fake.requests == []


def test_brackets_and_quotes_from_react_style_actions_are_stripped(fake: FakeWikipedia, wiki: Any) -> None:
    assert lookup('["Marie Curie"]', wiki=wiki).startswith("Marie Curie (")


def _failing(handler_response: Any) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(handler_response, Exception):
            raise handler_response
        return handler_response(request) if callable(handler_response) else handler_response

    return handler


API_ERROR = {
    "error": {
        "code": "maxlag",
        "info": "Waiting for 10.64.16.8: 0.66 seconds lagged.",
        "*": "See https://en.wikipedia.org/w/api.php for API usage.",
    },
    "servedby": "mw1234",
}


@pytest.mark.parametrize(
    "response, words",
    [
        (httpx.Response(429, text="Too many requests"), "rate-limiting"),
        (httpx.Response(503, text="<html>Service Unavailable</html>"), "HTTP 503"),
        (httpx.Response(403, json={"error": "forbidden"}), "HTTP 403"),
        (httpx.Response(200, text="<!DOCTYPE html><html>Wikimedia Error</html>"), "not JSON"),
        (httpx.Response(200, json=API_ERROR), "Wikipedia API error: Waiting for 10.64.16.8: 0.66 seconds lagged."),
        (httpx.Response(200, json={"batchcomplete": ""}), None),
        (httpx.ReadTimeout("timed out"), "did not answer in time"),
        (httpx.ConnectError("[Errno -3] Temporary failure in name resolution"), "Wikipedia cannot be reached"),
    ],
)
def test_failures_are_clear_tool_failures(response: Any, words: str | None) -> None:
    wiki = make_wiki(transport=httpx.MockTransport(_failing(response)), max_retries=0)
    if words is None:  # a search without "query" is just no hits
        assert lookup("anything", wiki=wiki) == "Could not find anything. Similar: []."
        return
    with pytest.raises(ToolFailure) as info:
        lookup("anything", wiki=wiki)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_unexpected_shape_for_a_page_request() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("list") == "search":
            return httpx.Response(200, json=_search({"srsearch": "marie curie", "srlimit": "5"}))
        return httpx.Response(200, json={"batchcomplete": "", "query": {"normalized": []}})

    wiki = make_wiki(transport=httpx.MockTransport(handler), max_retries=0)
    with pytest.raises(ToolFailure, match="unexpected shape"):
        lookup("marie curie", wiki=wiki)


def test_retry_after_is_capped_so_a_429_cannot_stall_the_tool() -> None:
    calls: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(time.monotonic())
        return httpx.Response(429, headers={"Retry-After": "120"}, text="slow down")

    wiki = make_wiki(transport=httpx.MockTransport(handler), max_retries=1)
    start = time.monotonic()
    with pytest.raises(ToolFailure, match="rate-limiting"):
        lookup("anything", wiki=wiki)
    assert len(calls) == 2 and time.monotonic() - start < 3


@pytest.mark.parametrize(
    "text, expected",
    [
        ("One. Two. Three.", "One. Two. Three."),
        ("Dr. Smith met Mr. Jones in the U.S. Army. They talked. It was 3 p.m. Then lunch.", None),
        ("A. B. Cash was a man. He sang. He died. He lived. He wrote. He rested.", None),
    ],
)
def test_first_sentences(text: str, expected: str | None) -> None:
    out = first_sentences(text, 5, 1500)
    if expected is not None:
        assert out == expected
    assert out.startswith(text.split(" ")[0])


def test_first_sentences_limits() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(20))
    assert first_sentences(text, 5, 1500) == " ".join(f"Sentence number {i} is here." for i in range(5))
    long = "word " * 1000 + "end."
    cut = first_sentences(long, 5, 1500)
    assert len(cut) <= 1502 and cut.endswith(" …")
    assert first_sentences("Dr. Who is a show. It is old.", 1) == "Dr. Who is a show."


def test_through_the_registry_cache_and_not_found_is_not_an_error(
    monkeypatch: pytest.MonkeyPatch, fake: FakeWikipedia
) -> None:
    monkeypatch.setattr(wiki_mod, "_client", make_wiki(transport=httpx.MockTransport(fake), max_retries=0))
    reg = default_registry()
    first = reg.call("wikipedia_search", "Marie Curie")
    again = reg.call("Wikipedia Search", '{"query": "marie   curie"}')
    assert not first.is_error and not first.cached and again.cached
    assert "<span" not in first.output
    missing = reg.call("wikipedia_search", "qwxzv")
    assert not missing.is_error and missing.output == "Could not find qwxzv. Similar: []."
    assert json.dumps(first.output)  # plain text


def test_with_no_network_the_error_suggests_no_other_web_tool() -> None:
    wiki = make_wiki(transport=httpx.MockTransport(_failing(httpx.ConnectError("Name or service not known"))),
                     max_retries=0)
    with pytest.raises(ToolFailure) as info:
        lookup("Marie Curie", wiki=wiki)
    assert "cannot be reached" in str(info.value) and "duckduckgo" not in str(info.value).lower()
