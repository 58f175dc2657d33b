"""duckduckgo_search with an injected fake DDGS client shaped like ddgs 9.16 (no network)."""

from __future__ import annotations

from typing import Any

import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

import tools.search as search_mod
from tools import default_registry
from tools.registry import ToolFailure
from tools.search import search_web

# What DDGS().text(..., backend="duckduckgo") returns: a list of dicts with title / href / body.
RESULTS = [
    {
        "title": "Eiffel Tower - Wikipedia",
        "href": "https://en.wikipedia.org/wiki/Eiffel_Tower",
        "body": "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named "
        "after the engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889.",
    },
    {
        "title": "Eiffel Tower | Official website",
        "href": "https://www.toureiffel.paris/en",
        "body": "Book your tickets for the <b>Eiffel Tower</b> online &amp; skip the line.",
    },
    {
        "title": "How tall is the Eiffel Tower?",
        "href": "https://example.org/height",
        "body": "330 m   (1,083 ft)\n tall.",
    },
    {"title": "Eiffel Tower facts", "href": "https://example.org/facts", "body": ""},
    {"title": "Gustave Eiffel", "href": "https://example.org/gustave", "body": "French civil engineer."},
    {"title": "Sixth result", "href": "https://example.org/6", "body": "never shown"},
]


class FakeDDGS:
    """Records calls like the real client and returns or raises what the test says."""

    def __init__(self, result: Any = None, exc: BaseException | None = None) -> None:
        self.result = RESULTS if result is None else result
        self.exc = exc
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        self.calls.append((query, kwargs))
        if self.exc is not None:
            raise self.exc
        max_results = kwargs.get("max_results")
        return list(self.result)[:max_results] if max_results else list(self.result)


def test_top_five_results_as_title_url_snippet() -> None:
    fake = FakeDDGS()
    out = search_web("eiffel tower height", ddgs=fake)
    blocks = out.split("\n")
    assert blocks[0] == "1. Eiffel Tower - Wikipedia"
    assert blocks[1] == "   https://en.wikipedia.org/wiki/Eiffel_Tower"
    assert blocks[2].startswith("   The Eiffel Tower is a wrought-iron lattice tower")
    assert "5. Gustave Eiffel" in out and "Sixth" not in out
    assert "330 m (1,083 ft) tall." in out  # whitespace collapsed
    assert "4. Eiffel Tower facts\n   https://example.org/facts\n5." in out  # empty snippet: no blank line


def test_uses_the_duckduckgo_backend_not_auto() -> None:
    fake = FakeDDGS()
    search_web("  capital   of  Peru ", ddgs=fake)
    query, kwargs = fake.calls[0]
    assert query == "capital of Peru"
    assert kwargs["backend"] == "duckduckgo"
    assert kwargs["max_results"] == 5
    assert kwargs["region"] == "us-en" and kwargs["safesearch"] == "moderate"


def test_long_snippets_are_clipped() -> None:
    fake = FakeDDGS([{"title": "T", "href": "https://x.org", "body": "word " * 200}])
    out = search_web("q", ddgs=fake)
    assert out.endswith("…") and len(out) < 400


def test_no_results_exception_suggests_rephrasing_and_wikipedia() -> None:
    fake = FakeDDGS(exc=DDGSException("No results found."))
    with pytest.raises(ToolFailure) as info:
        search_web("zxqv nonsense", ddgs=fake)
    msg = str(info.value)
    assert "no results" in msg and "rephras" in msg and "wikipedia_search" in msg and "rate-limit" in msg


@pytest.mark.parametrize("result", [[], [{}], [{"title": "", "href": "", "body": ""}], ["not a dict"]])
def test_empty_or_unusable_results(result: list[Any]) -> None:
    with pytest.raises(ToolFailure, match="no results.*wikipedia_search"):
        search_web("query", ddgs=FakeDDGS(result))


@pytest.mark.parametrize(
    "exc, words",
    [
        (RatelimitException("202 Ratelimit"), "rate-limiting"),
        (TimeoutException("https://html.duckduckgo.com/html/ timed out"), "did not answer in time"),
        (DDGSException("HTTP 500 from the backend"), "search failed"),
    ],
)
def test_other_failures(exc: Exception, words: str) -> None:
    with pytest.raises(ToolFailure) as info:
        search_web("query", ddgs=FakeDDGS(exc=exc))
    assert words in str(info.value) and "wikipedia_search" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("exc", [
    # what ddgs 9.16 raised on this machine, which has no network (its HTTP client's error, wrapped twice)
    DDGSException(DDGSException("DNSError: DNSError('error sending request for url (https://html.duckduckgo.com/"
                                "html/) > error resolving DNS > DNS error: no records found for Query')")),
    DDGSException("error sending request for url (https://html.duckduckgo.com/html/)"),
    DDGSException("ConnectError: Connection refused (os error 111)"),
])
def test_with_no_network_the_error_says_so_and_suggests_no_other_web_tool(exc: Exception) -> None:
    with pytest.raises(ToolFailure) as info:
        search_web("query", ddgs=FakeDDGS(exc=exc))
    line = str(info.value)
    assert "cannot be reached" in line and "network" in line
    assert "wikipedia" not in line.lower() and "rephras" not in line.lower()


def test_empty_query_is_refused_without_a_call() -> None:
    fake = FakeDDGS()
    with pytest.raises(ToolFailure, match="needs a query"):
        search_web("   ", ddgs=fake)
    assert fake.calls == []


def test_overlong_query_is_cut() -> None:
    fake = FakeDDGS()
    search_web("a" * 5000, ddgs=fake)
    assert len(fake.calls[0][0]) == 400


def test_through_the_registry_factory_html_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    fakes: list[FakeDDGS] = []

    def factory() -> FakeDDGS:
        fakes.append(FakeDDGS())
        return fakes[-1]

    monkeypatch.setattr(search_mod, "DDGS_FACTORY", factory)
    reg = default_registry()
    first = reg.call("duckduckgo_search", "Eiffel tower")
    assert not first.is_error
    assert (
        "<b>" not in first.output and "Book your tickets for the Eiffel Tower online & skip the line." in first.output
    )
    second = reg.call("DuckDuckGo Search", {"query": "eiffel  TOWER"})
    assert second.cached and second.output == first.output
    assert len(fakes) == 1


def test_rate_limit_through_the_registry_is_an_uncached_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_mod, "DDGS_FACTORY", lambda: FakeDDGS(exc=DDGSException("No results found.")))
    reg = default_registry()
    for _ in range(2):
        r = reg.call("duckduckgo_search", "anything")
        assert r.is_error and not r.cached and "wikipedia_search" in r.output


def test_the_real_factory_builds_a_ddgs_client_without_network() -> None:
    client = search_mod.make_ddgs()
    assert type(client).__module__ == "ddgs.ddgs" and callable(client.text)
