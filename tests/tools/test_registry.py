"""ToolRegistry: declaration, binding, dispatch, timeouts, cache, truncation; never raises."""

from __future__ import annotations

import threading
import time

import pytest

from tools import call_tool, default_registry
from tools.registry import (
    TRUNCATION_MARKER,
    ToolFailure,
    ToolRegistry,
    normalize_name,
    strip_html,
    tool,
    truncate,
)


@tool
def echo(text: str) -> str:
    """Repeat the input back.

    Longer description that prompts do not show.
    """
    return f"echo:{text}"


@tool
def add(a: int, b: int = 2) -> str:
    """Add two integers."""
    return str(a + b)


@tool(timeout_s=0.3)
def slow(text: str) -> str:
    """Sleep longer than the timeout."""
    time.sleep(2)
    return "too late"


@tool
def broken(text: str) -> str:
    """Always raise a bug."""
    raise KeyError("missing\nkey")


@tool
def expected_failure(text: str) -> str:
    """Raise an expected failure."""
    raise ToolFailure("Nothing found for that; try another query.")


@tool
def exits(text: str) -> str:
    """Raise SystemExit inside the tool thread."""
    raise SystemExit(3)


@tool
def own_timeout(text: str) -> str:
    """Raise the builtin TimeoutError itself (as a socket would)."""
    raise TimeoutError("socket read timed out")


CALLS: list[str] = []


@tool(cache_ttl_s=60, web=True)
def web_page(query: str) -> str:
    """Return some HTML, counting calls."""
    CALLS.append(query)
    return f"<p>Result for <b>{query}</b> &amp; more; x < 5 and y > 3</p>"


@tool(cache_ttl_s=60)
def flaky(query: str) -> str:
    """Fail the first time."""
    CALLS.append(query)
    if len(CALLS) == 1:
        raise ToolFailure("temporary failure")
    return "ok"


@tool
def long_output(n: str) -> str:
    """Return n characters."""
    return "x" * int(n)


@pytest.fixture
def reg() -> ToolRegistry:
    CALLS.clear()
    return ToolRegistry([echo, add, slow, broken, expected_failure, exits, own_timeout, web_page, flaky, long_output])


def test_schema_comes_from_signature_and_docstring() -> None:
    assert add.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a"],
    }
    assert echo.summary == "Repeat the input back."
    assert "Longer description" in echo.description
    schema = echo.schema()
    assert schema["type"] == "function" and schema["function"]["name"] == "echo"
    assert schema["function"]["parameters"]["required"] == ["text"]


def test_tool_without_docstring_is_rejected() -> None:
    def nodoc(x: str) -> str:
        return x

    with pytest.raises(ValueError, match="docstring"):
        tool(nodoc)


@pytest.mark.parametrize("name", ["echo", "Echo", "ECHO", " echo ", "e-c-h-o", "e_cho"])
def test_fuzzy_names_resolve(reg: ToolRegistry, name: str) -> None:
    assert reg.call(name, "hi").output == "echo:hi"


def test_normalize_name() -> None:
    assert normalize_name("Wikipedia Search") == normalize_name("wikipedia_search") == "wikipediasearch"


def test_unknown_tool_lists_available_tools(reg: ToolRegistry) -> None:
    r = reg.call("telepathy", "x")
    assert r.is_error
    assert "Unknown tool 'telepathy'" in r.output and "echo" in r.output and "web_page" in r.output


@pytest.mark.parametrize(
    "tool_input, expected",
    [
        ('{"text": "hi"}', "echo:hi"),
        ('  {"query": "renamed key"}  ', "echo:renamed key"),  # one key, one parameter: the model's name is kept
        ("plain text", "echo:plain text"),
        ('{"a": 1, "b": 2}', 'echo:{"a": 1, "b": 2}'),  # a JSON object that does not bind is the text itself
        ("{not json", "echo:{not json"),
        ({"text": "dict"}, "echo:dict"),
        ({"anything": "dict, renamed"}, "echo:dict, renamed"),
        ({"text": 42}, "echo:42"),  # scalars become text for a string parameter
    ],
)
def test_input_binding_for_one_parameter_tool(reg: ToolRegistry, tool_input: object, expected: str) -> None:
    r = reg.call("echo", tool_input)
    assert not r.is_error, r.output
    assert r.output == expected


def test_dict_and_json_input_for_two_parameter_tool(reg: ToolRegistry) -> None:
    assert reg.call("add", {"a": 1, "b": 5}).output == "6"
    assert reg.call("add", '{"a": 1}').output == "3"
    missing = reg.call("add", {"b": 1})
    assert missing.is_error and "missing argument" in missing.output
    extra = reg.call("add", {"a": 1, "c": 2})
    assert extra.is_error and "unexpected argument" in extra.output
    text = reg.call("add", "1 and 2")
    assert text.is_error and "JSON object" in text.output


def test_exceptions_become_one_line_error_results(reg: ToolRegistry) -> None:
    r = reg.call("broken", "x")
    assert r.is_error
    assert r.output.startswith("broken failed: KeyError")
    assert "\n" not in r.output


def test_tool_failure_message_is_the_observation(reg: ToolRegistry) -> None:
    r = reg.call("expected_failure", "x")
    assert r.is_error and r.output == "Nothing found for that; try another query."


def test_system_exit_in_a_tool_does_not_escape(reg: ToolRegistry) -> None:
    r = reg.call("exits", "x")
    assert r.is_error and "SystemExit" in r.output


def test_a_tools_own_timeout_error_is_not_reported_as_the_registry_timeout(reg: ToolRegistry) -> None:
    r = reg.call("own_timeout", "x")
    assert r.is_error and "socket read timed out" in r.output and "timed out after 0.3" not in r.output


def test_timeout(reg: ToolRegistry) -> None:
    t = time.perf_counter()
    r = reg.call("slow", "x")
    assert r.is_error and "timed out after 0.3 s" in r.output
    assert time.perf_counter() - t < 1.5


def test_cache_marks_hits_and_normalizes_input(reg: ToolRegistry) -> None:
    first = reg.call("web_page", "Paris")
    second = reg.call("web_page", "  paris ")
    third = reg.call("web_page", {"query": "PARIS"})
    assert not first.cached and second.cached and third.cached
    assert first.output == second.output == third.output
    assert CALLS == ["Paris"]
    assert not reg.call("web_page", "Lyon").cached


def test_cache_is_shared_by_subsets_and_errors_are_not_cached(reg: ToolRegistry) -> None:
    assert reg.call("flaky", "q").is_error
    ok = reg.subset(["flaky"]).call("flaky", "q")
    assert not ok.is_error and not ok.cached
    assert reg.call("flaky", "q").cached
    assert reg.subset(["flaky"]).names == ["flaky"]


def test_uncached_tools_run_every_time(reg: ToolRegistry) -> None:
    assert not reg.call("echo", "a").cached
    assert not reg.call("echo", "a").cached


def test_html_is_stripped_for_web_tools_only(reg: ToolRegistry) -> None:
    r = reg.call("web_page", "<i>Rome</i>")
    assert r.output == "Result for Rome & more; x < 5 and y > 3"
    assert reg.call("echo", "<b>kept</b>").output == "echo:<b>kept</b>"


@pytest.mark.parametrize(
    "html, text",
    [
        ("<b>bold</b> text", "bold text"),
        ("a &lt;tag&gt; &amp; b", "a <tag> & b"),
        ("x < 5 and y > 3", "x < 5 and y > 3"),
        ("<script>alert(1)</script>safe", "safe"),
        ("<!-- comment -->visible<br/>", "visible"),
    ],
)
def test_strip_html(html: str, text: str) -> None:
    assert strip_html(html) == text


def test_truncation_marker(reg: ToolRegistry) -> None:
    r = reg.call("long_output", "5000")
    assert r.output.startswith("x" * 100)
    assert r.output.endswith(TRUNCATION_MARKER.format(n=1000))
    assert len(truncate("abc", 10)) == 3


def test_calls_never_raise_even_with_odd_input(reg: ToolRegistry) -> None:
    for odd in (None, 3, ["a"], "", "{}", '{"text": null}'):
        r = reg.call("echo", odd)  # type: ignore[arg-type]
        assert isinstance(r.output, str)
    assert reg.call("", "x").is_error


def test_concurrent_calls(reg: ToolRegistry) -> None:
    results: list[str] = []

    def worker(i: int) -> None:
        results.append(reg.call("add", {"a": i, "b": i}).output)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(results, key=int) == [str(2 * i) for i in range(8)]


def test_default_registry_has_the_contracted_tools() -> None:
    reg = default_registry()
    assert reg.names == ["duckduckgo_search", "wikipedia_search", "get_weather", "calculate", "python_repl"]
    for t in reg.tools:
        assert t.param_names and len(t.param_names) == 1
        assert 20 < len(t.summary) < 260, t.summary
        assert t.timeout_s > 0
    web = {t.name for t in reg.tools if t.web and t.cache_ttl_s}
    assert web == {"duckduckgo_search", "wikipedia_search", "get_weather"}
    py = reg.resolve("python_repl")
    assert py is not None and py.cache_ttl_s is None and py.timeout_s > 8


def test_call_tool_entry_point() -> None:
    assert call_tool("calculate", "6 * 7").output == "42"
    assert call_tool("Calculate", {"expression": "2^10"}).output == "1024"


def test_many_concurrent_slow_calls_do_not_queue_behind_each_other():
    """40 visitors' calls at once: none may spend its timeout waiting for a free worker."""
    import threading as _threading
    import time as _time

    from tools.registry import ToolRegistry as _Registry
    from tools.registry import tool as _tool

    @_tool(timeout_s=1.0)
    def slow(query: str) -> str:
        """Sleeps a little."""
        _time.sleep(0.4)
        return "done"

    registry = _Registry([slow])
    results = []
    threads = [_threading.Thread(target=lambda: results.append(registry.call("slow", "q"))) for _ in range(40)]
    start = _time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.output for r in results] == ["done"] * 40
    assert _time.perf_counter() - start < 1.0
