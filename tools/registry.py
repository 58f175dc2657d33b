"""Tool declaration and dispatch.

A tool is a plain typed function with a docstring; :func:`tool` derives its name,
description and JSON schema once, so prompts, native tool-calling schemas and the UI all
read from the same declaration. :meth:`ToolRegistry.call` is the only way the agent loops
touch a tool, and it never raises: every failure comes back as ``ToolResult(is_error=True)``
with a one-line reason the model can read.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import importlib
import inspect
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, get_type_hints

log = logging.getLogger(__name__)

ToolInput = str | dict

DEFAULT_TIMEOUT_S = 15.0
DEFAULT_CACHE_TTL_S = 600.0
MAX_OUTPUT_CHARS = 4000
TRUNCATION_MARKER = "\n…[truncated {n} more characters]"

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object", list: "array"}


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced, as the agent loop and the trace see it."""

    output: str
    is_error: bool = False
    elapsed_s: float = 0.0
    cached: bool = False


class ToolFailure(Exception):
    """Raised by a tool for an expected failure; its message becomes the observation."""


@dataclass(frozen=True)
class Tool:
    """A declared tool: metadata derived from a typed function, plus call policy."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., str]
    timeout_s: float = DEFAULT_TIMEOUT_S
    cache_ttl_s: float | None = None  # None: never cached (local tools); network tools set a TTL
    summary: str = ""  # first paragraph of the docstring: what prompts show
    web: bool = False  # output is web text: HTML is stripped before the model or the page sees it
    verb: str = ""  # what a call does, as a sentence says it ("searched the web"): the step-aligned map's words

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        """Call the underlying function directly (no timeout, cache or error wrapping): handy in tests."""
        return self.fn(*args, **kwargs)

    @property
    def param_names(self) -> list[str]:
        return list(self.parameters.get("properties", {}))

    def schema(self) -> dict[str, Any]:
        """The OpenAI/HF ``tools=`` entry for native function calling."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def tool(
    fn: Callable[..., str] | None = None,
    *,
    name: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    cache_ttl_s: float | None = None,
    web: bool = False,
    verb: str = "",
) -> Any:
    """Declare ``fn`` as a tool. Usable bare (``@tool``) or with options (``@tool(cache_ttl_s=600, web=True)``);
    ``verb`` says what a call does in a sentence ("searched the web"), else "called <name>"."""

    def build(f: Callable[..., str]) -> Tool:
        doc = inspect.cleandoc(f.__doc__ or "").strip()
        if not doc:
            raise ValueError(f"tool {f.__name__} needs a docstring: it is the description the model reads")
        made = Tool(
            name=name or f.__name__,
            description=doc,
            parameters=_schema_from_signature(f),
            fn=f,
            timeout_s=timeout_s,
            cache_ttl_s=cache_ttl_s,
            web=web,
            verb=verb,
            summary=doc.split("\n\n")[0].replace("\n", " "),
        )
        if verb:
            _VERBS[made.name] = verb
        return made

    return build(fn) if fn is not None else build


_VERBS: dict[str, str] = {}  # every declared tool's verb, by name: written as modules declare their tools


def verb_of(name: str) -> str:
    """What a call of the tool ``name`` does, in a sentence (its declared ``verb``), else "called <name>"."""
    return _VERBS.get(name) or f"called {name or 'a tool'}"


ToolRef = tuple[str, str]  # (module, attribute): where another process imports the same tool


def tool_ref(t: Tool) -> ToolRef | None:
    """The module-level name ``t`` is declared under, ``(module, attribute)``, or None for a tool built inside a
    function (whether another process can import that module is for the caller to judge)."""
    module = getattr(t.fn, "__module__", None)
    name = getattr(t.fn, "__name__", "")
    if module in (None, "__main__") or getattr(sys.modules.get(module or ""), name, None) is not t:
        return None
    return module, name


def tool_from_ref(ref: ToolRef) -> Tool:
    """The tool :func:`tool_ref` named (ImportError / AttributeError / TypeError when it is not one)."""
    found = getattr(importlib.import_module(ref[0]), ref[1])
    if not isinstance(found, Tool):
        raise TypeError(f"{ref[0]}.{ref[1]} is not a tool")
    return found


def _schema_from_signature(f: Callable[..., Any]) -> dict[str, Any]:
    hints = get_type_hints(f)
    props: dict[str, Any] = {}
    required: list[str] = []
    for pname, param in inspect.signature(f).parameters.items():
        props[pname] = {"type": _JSON_TYPES.get(hints.get(pname, str), "string")}
        if param.default is inspect.Parameter.empty:
            required.append(pname)
    return {"type": "object", "properties": props, "required": required}


_NAME_NOISE = re.compile(r"[\s_\-\u200b-\u200d\u2060\ufeff]+")  # any Unicode space (NBSP too), zero-width ones


# Words the parser reads as actions of its own (agents/parsing.py), as normalize_name spells them: the answer,
# "no action", the paper's Search and Lookup. No tool added at run time (an MCP server's) may be named one of them.
ANSWER_WORDS = frozenset({"finalanswer", "finish", "final", "answer"})
NOOP_WORDS = frozenset({"none", "na", "n/a", "nothing", "noaction"})
PAPER_WORDS = frozenset({"search", "lookup", "finish"})
RESERVED_WORDS = ANSWER_WORDS | NOOP_WORDS | PAPER_WORDS


def normalize_name(name: str) -> str:
    """Case-insensitive, ignoring spaces, underscores and hyphens: 'Wikipedia Search' → 'wikipediasearch'.

    The one spelling-blind key for tool names: the registry (dispatch, ``--tools``, the API) and the
    parser (labels and actions in model replies) both use it, so they cannot disagree on a name.
    """
    return _NAME_NOISE.sub("", name).lower()


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters with a visible marker saying how much was dropped."""
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit] + TRUNCATION_MARKER.format(n=len(text) - limit)


class _TTLCache:
    """A small thread-safe in-memory cache; network tools reuse answers for ~10 minutes."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], tuple[float, str]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str], ttl: float) -> str | None:
        with self._lock:
            hit = self._data.get(key)
            if hit and time.monotonic() - hit[0] < ttl:
                return hit[1]
            return None

    def put(self, key: tuple[str, str], value: str) -> None:
        with self._lock:
            self._data[key] = (time.monotonic(), value)


STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("tool_stop", default=None)
"""The run's Stop as a tool's own thread sees it: a tool that may run long (the sandbox) ends when it is set."""


def _start(t: Tool, kwargs: dict[str, Any], stop: threading.Event | None = None) -> concurrent.futures.Future:
    """Run one call in its own daemon thread. A tool that times out keeps running there while the
    agent loop moves on; unlike a shared pool, hung calls can never fill it up, and no call's
    timeout is spent waiting in a queue behind other visitors' calls."""
    future: concurrent.futures.Future = concurrent.futures.Future()

    def target() -> None:
        if not future.set_running_or_notify_cancel():
            return
        STOP.set(stop)
        try:
            future.set_result(t.fn(**kwargs))
        except BaseException as exc:  # noqa: BLE001 - delivered to the caller through the future
            future.set_exception(exc)

    threading.Thread(target=target, name=f"tool-{t.name}", daemon=True).start()
    return future


@dataclass
class ToolRegistry:
    """An ordered set of tools; :meth:`call` dispatches by (fuzzy) name and never raises."""

    tools: list[Tool] = field(default_factory=list)
    max_output_chars: int = MAX_OUTPUT_CHARS
    _cache: _TTLCache = field(default_factory=_TTLCache, repr=False)

    def __post_init__(self) -> None:
        self._by_key = {normalize_name(t.name): t for t in self.tools}

    def replace_tools(self, tools: Iterable[Tool]) -> None:
        """Swap the tools in place, for every holder of this registry (MCP tools found again on a refresh)."""
        tools = list(tools)
        by_key = {normalize_name(t.name): t for t in tools}
        self.tools, self._by_key = tools, by_key

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def resolve(self, name: str) -> Tool | None:
        """Find a tool by a model-written name: 'Wikipedia Search' and 'WIKIPEDIA-search' both resolve."""
        return self._by_key.get(normalize_name(name or ""))

    def subset(self, names: Iterable[str] | None) -> ToolRegistry:
        """A registry with only ``names`` enabled (None keeps all); shares this registry's cache."""
        if names is None:
            return self
        wanted = {normalize_name(n) for n in names}
        return ToolRegistry(
            [t for t in self.tools if normalize_name(t.name) in wanted], self.max_output_chars, self._cache
        )

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools]

    def unknown_tool_message(self, name: str) -> str:
        available = ", ".join(self.names) or "none"
        return f"Unknown tool '{name}'. Available tools: {available}."

    def call(self, name: str, tool_input: ToolInput, stop: threading.Event | None = None) -> ToolResult:
        """Run a tool by name. Unknown names, bad input, exceptions and timeouts become error results.
        ``stop`` (the run's Stop) is what :data:`STOP` holds in the tool's thread."""
        start = time.perf_counter()
        t = self.resolve(name)
        if t is None:
            return ToolResult(self.unknown_tool_message(name), is_error=True)
        try:
            kwargs = _bind_input(t, tool_input)
        except ValueError as exc:
            return ToolResult(f"{t.name}: {exc}", is_error=True, elapsed_s=time.perf_counter() - start)
        key = (t.name, _cache_key(kwargs))
        if t.cache_ttl_s:
            hit = self._cache.get(key, t.cache_ttl_s)
            if hit is not None:
                return ToolResult(hit, elapsed_s=time.perf_counter() - start, cached=True)
        output, is_error = _run_with_timeout(t, kwargs, stop)
        output = truncate(strip_html(output) if t.web else output, self.max_output_chars)
        if t.cache_ttl_s and not is_error:
            self._cache.put(key, output)
        return ToolResult(output, is_error=is_error, elapsed_s=time.perf_counter() - start)


def _cache_key(kwargs: dict[str, Any]) -> str:
    """Tool input normalised for caching: case and runs of whitespace inside string values do not matter."""
    norm = {k: " ".join(v.split()).lower() if isinstance(v, str) else v for k, v in kwargs.items()}
    return json.dumps(norm, sort_keys=True, ensure_ascii=False, default=str)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _run_with_timeout(t: Tool, kwargs: dict[str, Any], stop: threading.Event | None = None) -> tuple[str, bool]:
    future = _start(t, kwargs, stop)
    try:
        return str(future.result(timeout=t.timeout_s)), False
    except ToolFailure as exc:
        return str(exc) or f"{t.name} failed.", True
    except concurrent.futures.TimeoutError as exc:
        # Since 3.11 this is the builtin TimeoutError: a tool may raise it itself (socket timeouts).
        if not future.done():
            return f"{t.name} timed out after {t.timeout_s:g} s.", True
        return _one_line(f"{t.name} failed: {type(exc).__name__}: {exc}"), True
    except Exception as exc:  # any tool bug is an observation, not a crash
        log.exception("tool %s raised", t.name)
        return _one_line(f"{t.name} failed: {type(exc).__name__}: {exc}"), True
    except BaseException as exc:
        # SystemExit / GeneratorExit raised inside the tool thread travel through the future;
        # a KeyboardInterrupt while *waiting* is the caller's and must propagate.
        if not future.done():
            raise
        log.warning("tool %s raised %s", t.name, type(exc).__name__, exc_info=True)
        return _one_line(f"{t.name} failed: {type(exc).__name__}: {exc}"), True


def _bind_input(t: Tool, tool_input: ToolInput) -> dict[str, Any]:
    """Map a model-written input onto the tool's parameters.

    A dict is taken as keyword arguments (a one-parameter tool also accepts a dict with one
    differently named key: models often write ``{"query": ...}`` for ``location``). A string
    that is a JSON object is unwrapped the same way; any other string is the single argument.
    """
    params = t.param_names
    if isinstance(tool_input, str):
        stripped = tool_input.strip()
        if stripped.startswith("{"):
            try:
                decoded = json.loads(stripped)
            except json.JSONDecodeError:
                decoded = None
            if isinstance(decoded, dict):
                try:
                    return _bind_dict(t, decoded)
                except ValueError:
                    # A one-parameter tool gets the raw text: '{"a": 1}' is a valid python_repl program.
                    if len(params) != 1:
                        raise
                    return {params[0]: tool_input}
    if isinstance(tool_input, dict):
        return _bind_dict(t, tool_input)
    if len(params) != 1:
        raise ValueError(f"expects a JSON object with {params}")
    return _coerce(t, {params[0]: tool_input})


def _bind_dict(t: Tool, tool_input: dict) -> dict[str, Any]:
    params = t.param_names
    if set(tool_input) <= set(params):
        missing = [p for p in t.parameters.get("required", []) if p not in tool_input]
        if missing:
            raise ValueError(f"missing argument(s): {', '.join(missing)}")
        return _coerce(t, dict(tool_input))
    if len(params) == 1 and len(tool_input) == 1:
        return _coerce(t, {params[0]: next(iter(tool_input.values()))})
    raise ValueError(f"unexpected argument(s) {sorted(set(tool_input) - set(params))}; expected {params}")


def _coerce(t: Tool, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Models write ``{"expression": 2}`` for a string parameter: pass scalars on as text."""
    props = t.parameters.get("properties", {})
    for k, v in kwargs.items():
        if props.get(k, {}).get("type") == "string" and isinstance(v, (int, float)) and not isinstance(v, bool):
            kwargs[k] = str(v)
        elif props.get(k, {}).get("type") == "string" and v is None:
            kwargs[k] = ""
    return kwargs


# Only things that look like tags: "<b>", "</span>", "<!-- x -->", "<br/>". A bare "<" in text
# ("x < 5 and y > 3") is not a tag and must survive.
_TAG = re.compile(r"<(?:!--.*?--|[a-zA-Z/!?][^<>]{0,2000})>", re.DOTALL)
_SCRIPT = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)


def strip_html(text: str) -> str:
    """Drop HTML tags and unescape entities so web text reaches the model (and the page) as plain text."""
    import html

    return html.unescape(_TAG.sub("", _SCRIPT.sub("", text)))
