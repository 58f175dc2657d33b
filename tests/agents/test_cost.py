"""A run's cost: tokens × price, where the price comes from the server's model listing (over real HTTP, from the
stand-in server), else the owner's APP_PRICE_INPUT / APP_PRICE_OUTPUT, else nowhere — then no "$" anywhere.

Every expected cost is computed here from the trace's own tokens and the price, never written down."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from agents.comparison import compare, default_model_factory
from agents.evaluation.report import format_summary, summarise, summary_table
from agents.llm import pricing
from agents.llm.discovery import list_models, resolve_model
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from agents.llm.toy_model import toy_policy
from agents.request import RunRequest
from agents.trace import Trace, metrics_line
from settings import SettingError
from ui.core.table import comparison_markdown, comparison_rows
from ui.recordings.export import export_dict, export_markdown, settings_block, to_json

QUESTION = "What is 17*23?"
MODES = ("think", "react")


@pytest.fixture(autouse=True)
def no_prices():
    """Each test publishes its own prices; none leak into the next test's traces."""
    pricing.publish(None)
    yield
    pricing.publish(None)


def _run(environ: dict[str, str], *, price: tuple[float, float] | None = None, responder=None):
    """Resolve the settings as the app and the CLI do (one GET /models), then run two modes on the stand-in."""
    with StubLLMServer(responder or toy_policy, models=("stub-model",), price=price) as server:
        settings = resolve_model(LLMSettings.from_env({"LLM_BASE_URL": server.url, **environ}))
        traces = compare(QUESTION, MODES, model_factory=default_model_factory(settings))
        lists = server.model_lists
    data = export_dict(QUESTION, "custom", traces, settings_block(settings, RunRequest(QUESTION, MODES), ()))
    return settings, traces, data, lists


def _expected(trace: Trace, cost_in: float, cost_out: float) -> float:
    return (trace.prompt_tokens * cost_in + trace.completion_tokens * cost_out) / 1_000_000


def _shown(trace: Trace, cost_in: float, cost_out: float) -> str:
    mark = "~" if trace.tokens_estimated else "≈ "
    return f"{mark}${pricing.format_usd(_expected(trace, cost_in, cost_out))}"


def _assert_costed(traces: dict[str, Trace], data: dict, cost_in: float, cost_out: float) -> None:
    table = comparison_markdown(traces)
    report = export_markdown(data, traces)
    rows = {row["mode"]: row for row in data["comparison"]["rows"]}
    for mode, trace in traces.items():
        assert trace.llm_calls and trace.prompt_tokens and trace.completion_tokens
        expected = _expected(trace, cost_in, cost_out)
        assert trace.cost == pytest.approx(expected, rel=1e-12)
        assert rows[mode]["cost_usd"] == pytest.approx(expected, rel=1e-12)
        assert trace.summary()["cost_usd"] == pytest.approx(expected, rel=1e-12)
        shown = _shown(trace, cost_in, cost_out)
        assert shown in metrics_line(trace)
        assert shown.replace(" ", "\u00a0") in table  # a number cell keeps its spaces from breaking
        assert shown in report  # each transcript's metrics line
        saved = data["traces"][mode]["price"]
        assert (saved["input_per_million"], saved["output_per_million"]) == (cost_in, cost_out)
        again = Trace.from_dict(json.loads(json.dumps(data["traces"][mode])))  # a replay prices as the run did
        assert again.cost == pytest.approx(expected, rel=1e-12)
    assert "| Cost |" in table


def test_the_listing_s_price_prices_the_run_over_http():
    settings, traces, data, lists = _run({}, price=(2.5, 10.0))
    assert lists == 1  # the listing discovery read at start: no request of its own for the price
    assert settings.model == "stub-model"
    _assert_costed(traces, data, 2.5, 10.0)
    assert "listing of" in data["settings"]["price"]["source"]


def test_the_owner_s_price_prices_the_run_when_the_listing_has_none():
    _, traces, data, _ = _run({"APP_PRICE_INPUT": "0.15", "APP_PRICE_OUTPUT": "0.6"})
    _assert_costed(traces, data, 0.15, 0.6)
    assert data["settings"]["price"]["source"] == pricing.OWNER_SOURCE


def test_the_listing_wins_over_the_owner_s_price():
    _, traces, data, _ = _run({"APP_PRICE_INPUT": "99", "APP_PRICE_OUTPUT": "99"}, price=(1.0, 3.0))
    _assert_costed(traces, data, 1.0, 3.0)


def test_no_price_no_dollar_anywhere():
    _, traces, data, _ = _run({})
    assert all(t.llm_calls and t.cost is None for t in traces.values())
    assert all(row["cost_usd"] is None for row in comparison_rows(traces))
    texts = [metrics_line(t) for t in traces.values()]
    texts += [comparison_markdown(traces), export_markdown(data, traces), to_json(data)]
    assert not any("$" in text for text in texts)
    assert "price" not in data["settings"]
    assert "Cost" not in comparison_markdown(traces)


def _no_usage(body):
    return replace(toy_policy(body), usage_in_stream=False)  # like llama-cpp-python: no usage chunk


def test_estimated_tokens_show_a_tilde_cost():
    _, traces, data, _ = _run({}, price=(2.0, 8.0), responder=_no_usage)
    for trace in traces.values():
        assert trace.tokens_estimated
        assert f"~${pricing.format_usd(_expected(trace, 2.0, 8.0))}" in metrics_line(trace)
        assert "≈" not in metrics_line(trace)
    _assert_costed(traces, data, 2.0, 8.0)


def test_the_benchmark_table_shows_the_cost():
    _, traces, _, _ = _run({"APP_PRICE_INPUT": "0.5", "APP_PRICE_OUTPUT": "1.5"})
    records = [{"mode": m, "em": 1.0, "f1": 1.0, "prompt_tokens": t.prompt_tokens,
                "completion_tokens": t.completion_tokens, "tokens_estimated": t.tokens_estimated}
               for m, t in traces.items()]
    summary = summarise(records, list(traces), "custom")
    headers, rows = summary_table(summary)
    column = headers.index("Cost (total)")
    for row, trace in zip(rows, traces.values(), strict=True):
        assert row[column] == _shown(trace, 0.5, 1.5)
    assert _shown(traces["react"], 0.5, 1.5) in format_summary(summary)
    pricing.publish(None)
    assert not any("$" in str(cell) for row in summary_table(summarise(records, list(traces), "custom"))[1]
                   for cell in row)


def test_router_listing_prices_per_provider():
    """The router's shape: a price per live provider; a ':provider' suffix picks one, else the cheapest."""
    item = {"id": "org/model", "providers": [
        {"provider": "groq", "status": "live", "pricing": {"input": 0.5, "output": 0.8}},
        {"provider": "together", "status": "live", "pricing": {"input": 0.2, "output": 0.6}},
        {"provider": "cheap-but-down", "status": "error", "pricing": {"input": 0.0, "output": 0.0}},
        {"provider": "no-price", "status": "live"}]}
    offers = pricing.listed_offers(item)
    book = pricing.PriceBook("org/model:groq", "auto", "the router", {"org/model": offers})
    assert (book.price_for().input, book.price_for().output) == (0.5, 0.8)
    cheapest = replace(book, model="org/model").price_for()
    assert (cheapest.input, cheapest.output) == (0.2, 0.6) and "estimate" in cheapest.source
    named = replace(book, model="org/model", provider="together").price_for()
    assert named.input == 0.2
    owner = pricing.Price(9, 9, pricing.OWNER_SOURCE)
    assert replace(book, model="org/model:absent", owner=owner).price_for() is owner


def test_openrouter_listing_prices_per_token():
    offers = pricing.listed_offers({"id": "x", "pricing": {"prompt": "0.0000025", "completion": "0.00001"}})
    price = pricing.pick(offers, None, "OpenRouter")
    assert price.input == pytest.approx(2.5) and price.output == pytest.approx(10.0)
    assert pricing.listed_offers({"id": "x", "pricing": {"prompt": "free?", "completion": "-1"}}) == ()


def test_list_models_reads_the_price_from_the_stand_in():
    with StubLLMServer(models=("a", "b"), price=(1.25, 5.0)) as server:
        listed = list_models(server.url)
    assert listed.ids == ("a", "b")
    assert [(name, p.input, p.output) for name, p in listed.prices["b"]] == [("stub", 1.25, 5.0)]


@pytest.mark.parametrize("environ, words", [
    ({"APP_PRICE_INPUT": "0.1"}, "APP_PRICE_OUTPUT must be set too"),
    ({"APP_PRICE_OUTPUT": "0.1"}, "APP_PRICE_INPUT must be set too"),
    ({"APP_PRICE_INPUT": "cheap", "APP_PRICE_OUTPUT": "1"}, "APP_PRICE_INPUT must be a number"),
    ({"APP_PRICE_INPUT": "1", "APP_PRICE_OUTPUT": "-2"}, "APP_PRICE_OUTPUT must be a number"),
])
def test_a_bad_owner_price_is_one_line(environ, words):
    with pytest.raises(SettingError) as error:
        LLMSettings.from_env(environ)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_format_usd():
    assert pricing.format_usd(0.0004) == "0.0004"
    assert pricing.format_usd(0.000372) == "0.00037"
    assert pricing.format_usd(1.234) == "1.23"
    assert pricing.cost_text(None) is None


def test_another_model_is_not_given_the_starting_model_s_price():
    offers = ((None, pricing.Price(1.0, 2.0)),)
    book = pricing.PriceBook("a", None, "the server", {"a": offers})
    assert book.price_for("b") is None  # the Settings box chose "b": the listing prices only "a"
    assert book.price_for("a").input == 1.0 and book.price_for(None).input == 1.0
    assert replace(book, owner=pricing.Price(7, 7)).price_for("b").input == 7


def test_a_replay_on_the_page_shows_the_recorded_cost_not_this_process_s(tmp_path):
    """Replayed through the page's reader (a worker process condenses the file) and playback, with no price known
    here any more: each panel's metrics line shows the cost the run was recorded with."""
    import asyncio

    from ui.recordings.export import write_exports
    from ui.recordings.playback import play
    from ui.recordings.reader import open_recording

    _, traces, data, _ = _run({}, price=(2.5, 10.0))
    json_path, _ = write_exports(data, tmp_path)
    pricing.publish(None)  # this process no longer knows a price

    async def last_frame():
        recording = await open_recording(str(json_path), 0.0)
        return [f async for f in play(recording, "instant")][-1]

    frame = asyncio.run(last_frame())
    shown = [_shown(trace, 2.5, 10.0) for trace in traces.values()]
    lines = [line.replace("\\$", "$") for line in frame.metrics]  # Markdown escapes the dollar sign
    assert all(any(cost in line for line in lines) for cost in shown), frame.metrics


class HostileListing(StubLLMServer):
    """A server whose ``GET /v1/models`` prices its model as an attacker chose: OpenRouter's shape (USD per token)
    and the router's (per million, per provider), both with ``value``."""

    def __init__(self, value, **kw) -> None:
        super().__init__(toy_policy, models=("stub-model",), **kw)
        self.value = value

    def listed(self, model: str) -> dict:
        return {"id": model, "pricing": {"prompt": self.value, "completion": self.value},
                "providers": [{"provider": "stub", "status": "live",
                               "pricing": {"input": self.value, "output": self.value}}]}


HOSTILE = [1e305, "1e305", float("nan"), "NaN", float("inf"), -1, "-1", "abc", None, True, 1001, "1e400"]


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_a_hostile_listed_price_is_no_price_and_every_run_finishes(value, caplog):
    """Refused with one log line and shown as no price: no "$" anywhere, no NaN or infinity in a cost, a metrics
    line or the export, which a strict JSON reader parses (a mode with no tokens at all included)."""
    from agents import strict_json
    from agents.events import LLMError

    with HostileListing(value) as server:
        settings = resolve_model(LLMSettings.from_env({"LLM_BASE_URL": server.url}))
        traces = compare(QUESTION, MODES, model_factory=default_model_factory(settings))
    empty = Trace("act", QUESTION)
    empty.add(LLMError("the server went away"), 0.1)  # 0 tokens: what turned a price of infinity into NaN
    traces["act"] = empty
    data = export_dict(QUESTION, "custom", traces, settings_block(settings, RunRequest(QUESTION, MODES), ()))
    text = to_json(data)
    assert strict_json.loads(text) is not None
    assert all(t.price is None and t.cost is None for t in traces.values())
    assert "$" not in " ".join(metrics_line(t) for t in traces.values()) + comparison_markdown(traces)
    if value is not None:
        refused = [r.getMessage() for r in caplog.records if "refuses" in r.getMessage()]
        assert len(refused) == 1 and "\n" not in refused[0]


def test_a_tiny_listed_price_is_kept_and_shown_as_less_than_a_millionth():
    from agents import strict_json

    with HostileListing("1e-30") as server:
        settings = resolve_model(LLMSettings.from_env({"LLM_BASE_URL": server.url}))
        traces = compare(QUESTION, MODES, model_factory=default_model_factory(settings))
    data = export_dict(QUESTION, "custom", traces, settings_block(settings, RunRequest(QUESTION, MODES), ()))
    assert strict_json.loads(to_json(data))["traces"]["react"]["price"]["input_per_million"] == pytest.approx(1e-24)
    assert all(0 < t.cost < 1e-6 for t in traces.values())
    assert all("≈ $" not in metrics_line(t) and "< $0.000001" in metrics_line(t) for t in traces.values())


def test_no_arithmetic_on_a_price_is_nan_or_infinite():
    with pytest.raises(ValueError):
        pricing.Price(float("inf"), 1)
    with pytest.raises(ValueError):
        pricing.Price(1, 1001)
    dearest = pricing.Price(pricing.MAX_PRICE, pricing.MAX_PRICE)
    for tokens in (0, 10**30, -5, float("inf"), float("nan"), "junk", None):
        cost = dearest.cost(tokens, tokens)
        assert cost == cost and cost != float("inf") and cost >= 0
    assert pricing.format_usd(float("nan")) == "0" and pricing.format_usd(float("inf")) == "0"
    assert pricing.Price.from_dict({"input_per_million": 1e305, "output_per_million": 1}) is None  # a file's
    summary = summarise([{"id": "1", "mode": "react", "em": 1.0, "f1": 1.0, "prompt_tokens": 10**40,
                          "completion_tokens": 1}], ["react"], "handwritten", price=dearest)
    assert 0 < summary["modes"]["react"]["cost_usd"] < float("inf")
