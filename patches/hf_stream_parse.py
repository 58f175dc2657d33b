"""huggingface_hub's streamed chunks, parsed into the very same typed objects at about a fifth of the CPU.

``InferenceClient.chat_completion(stream=True)`` builds a ``ChatCompletionStreamOutput`` per SSE chunk through
``dataclasses.asdict`` and deep copies: most of a streamed token's cost. Here the parse builds the same objects
(same attributes, same dict view and key order, same extra keys) directly. Checked before use: the library
functions it copies must hash as written for, every class reached must be a plain dataclass, and sample chunks
parsed both ways must come out identical; otherwise the patch is off (one log line).

Upstream write-up: docs/upstream.md#hf_stream_parse.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import inspect
import json
import logging
from typing import Any, get_args

from patches import Patch

PATCH = Patch("hf_stream_parse", "huggingface_hub", "2.4.0")
log = logging.getLogger(__name__)

# sha256 (first 16 hex) of the library source whose behaviour FastParse reproduces (see fingerprint()).
WRITTEN_FOR = "3018151d4020aa43"
_ATOMIC = frozenset((str, int, float, bool, type(None)))


class _Plan:
    """One class's fields, in order, and the typed class (if any) a dict or list value of each is parsed as."""

    def __init__(self, cls: type, base: type) -> None:
        self.cls = cls
        self.names = tuple(f.name for f in dataclasses.fields(cls))
        self.nested: dict[str, type | None] = {name: _nested_type(cls, name, base) for name in self.names}


def _nested_type(cls: Any, name: str, base: type) -> type | None:
    """What ``parse_obj`` would parse a dict/list value of field ``name`` as (its own test, once per field)."""
    field_type = cls.__dataclass_fields__[name].type
    if inspect.isclass(field_type) and issubclass(field_type, base):
        return field_type
    for expected in get_args(field_type):
        if getattr(expected, "__origin__", None) is list or getattr(expected, "_name", None) == "List":
            expected = get_args(expected)[0]
        if inspect.isclass(expected) and issubclass(expected, base):
            return expected
    return None


class FastParse:
    """Plans for every class reachable from ``root``; refuses (``problem``) a class the copy does not cover."""

    def __init__(self, root: type) -> None:
        from huggingface_hub.inference._generated.types.base import BaseInferenceType, normalize_key

        self.base, self.normalize_key = BaseInferenceType, normalize_key
        self.plans: dict[type, _Plan] = {}
        self.problem: str | None = None
        self.keys: dict[str, str] = {}  # normalize_key's answers, for the few keys servers send
        self._plan(root)

    def _key(self, key: str) -> str:
        normal = self.normalize_key(key)
        if len(self.keys) < 256:
            self.keys[key] = normal
        return normal

    def _plan(self, cls: type) -> None:
        if cls in self.plans or self.problem:
            return
        base = self.base
        plain = all(getattr(cls, name) is getattr(base, name) for name in ("__post_init__", "__setattr__",
                                                                              "__setitem__", "update"))
        fields = dataclasses.fields(cls)
        if not plain or cls.__new__ is not dict.__new__ or list(cls.__dataclass_fields__) != [f.name for f in fields] \
                or not all(f.init for f in fields):
            self.problem = f"{cls.__name__} is not a plain BaseInferenceType dataclass any more"
            return
        plan = self.plans[cls] = _Plan(cls, base)
        for nested in plan.nested.values():
            if nested is not None:
                self._plan(nested)

    def parse(self, cls: type, data: Any) -> Any:
        """``cls.parse_obj(data)``: a string inside a list is JSON to it too."""
        if isinstance(data, bytes):
            data = data.decode()
        if isinstance(data, str):
            data = json.loads(data)
        if isinstance(data, list):
            return [self.parse(cls, d) for d in data]
        if not isinstance(data, dict):
            raise ValueError(f"Invalid data type: {type(data)}")
        plan = self.plans[cls]
        init_values: dict[str, Any] = {}
        other_values: dict[str, Any] = {}
        keys = self.keys
        for key, value in data.items():
            key = keys.get(key) or self._key(key)
            if key in plan.nested:
                nested = plan.nested[key]
                if nested is not None and isinstance(value, (dict, list)):
                    value = self.parse(nested, value)
                init_values[key] = value
            else:
                other_values[key] = value
        return self._build(plan, init_values, other_values)

    def _build(self, plan: _Plan, init_values: dict[str, Any], other_values: dict[str, Any]) -> Any:
        """The object ``cls(**init_values)`` then ``parse_obj`` make: attributes in field order; the dict view
        holds ``asdict`` values, the set fields first (``__setattr__`` syncs them), the None ones after
        (``__post_init__``'s update adds them); extra keys last, in both."""
        item = dict.__new__(plan.cls)
        attrs = item.__dict__
        view: dict[str, Any] = {}
        unset = []
        for name in plan.names:
            value = attrs[name] = init_values.get(name)
            if value is None:
                unset.append(name)
            else:
                view[name] = value if type(value) in _ATOMIC else self.plain(value)
        for name in unset:
            view[name] = None
        dict.update(item, view)
        dict.update(item, other_values)
        attrs.update(other_values)
        return item

    def plain(self, value: Any) -> Any:
        """``dataclasses.asdict``'s conversion of one value (Python 3.11's ``_asdict_inner``, without its cost)."""
        kind = type(value)
        if kind in _ATOMIC:
            return value  # deepcopy returns these as they are
        plan = self.plans.get(kind)
        if plan is not None:
            attrs, out = value.__dict__, {}
            for name in plan.names:
                field = attrs[name]
                out[name] = field if type(field) in _ATOMIC else self.plain(field)
            return out
        if hasattr(kind, "__dataclass_fields__"):
            return dataclasses.asdict(value)
        if kind is list:
            return [self.plain(v) for v in value]
        if kind is dict:
            return {self.plain(k): self.plain(v) for k, v in value.items()}
        return copy.deepcopy(value)  # not a JSON value: as asdict does it


def _root() -> Any:
    from huggingface_hub.inference._generated.types import ChatCompletionStreamOutput

    return ChatCompletionStreamOutput


def fingerprint() -> str:
    """The hash of the library source this patch reproduces (``WRITTEN_FOR`` when it is as written for)."""
    from huggingface_hub.inference._generated.types import base

    kind = base.BaseInferenceType
    parts = (kind.parse_obj, kind.parse_obj_as_instance, kind.__post_init__, kind.__setattr__, kind.__setitem__,
             base.normalize_key, base.dataclass_with_extra)
    source = "".join(inspect.getsource(part) for part in parts)
    return hashlib.sha256(source.encode()).hexdigest()[:16]


SAMPLES: tuple[dict[str, Any], ...] = (
    {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": None}]},
    {"id": "c", "created": 1, "model": "m", "system_fingerprint": "fp",
     "choices": [{"index": 0, "delta": {"reasoning_content": "hm", "reasoning": "", "content": None},
                  "logprobs": {"content": [{"logprob": -0.5, "token": "a",
                                            "top_logprobs": [{"logprob": -1.0, "token": "b"}]}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                                        "function": {"name": "search", "arguments": ""}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"q"}}]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "Usage-Extra": [1, {"a": [2.5, True]}]},
    {"id": "c", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
     "timings": {"predicted_n": 4}},
    {"choices": {"index": 0, "delta": None}, "usage": [{"prompt_tokens": 1}], "model": 0, "x": None},
)


def _same(a: Any, b: Any) -> bool:
    """Equal in type, value, key order, attributes and repr, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if list(a) != list(b) or not all(_same(a[k], b[k]) for k in a):
            return False
        if hasattr(a, "__dict__"):
            return repr(a) == repr(b) and _same(dict(vars(a)), dict(vars(b)))
        return True
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def problem() -> str | None:
    """None when the library is as written for and the copy parses the samples exactly as it does."""
    try:
        if fingerprint() != WRITTEN_FOR:
            return "the source of BaseInferenceType's parsing has changed"
        root = _root()
        own = vars(root).get("parse_obj_as_instance")
        if own is not None and not getattr(own, "fast_parse", False):
            return "ChatCompletionStreamOutput has a parse_obj_as_instance of its own"
        fast = FastParse(root)
        if fast.problem:
            return fast.problem
        for sample in SAMPLES:
            if not _same(fast.parse(root, copy.deepcopy(sample)), root.parse_obj(copy.deepcopy(sample))):
                return f"a sample chunk parses differently: {sample}"
    except Exception as exc:  # noqa: BLE001 - any surprise in the check: leave the library alone
        return f"the check failed: {exc!r}"
    return None


def install() -> bool:
    """Parse ``ChatCompletionStreamOutput`` chunks the fast way in this process; True when applied (once)."""
    root = _root()
    if getattr(vars(root).get("parse_obj_as_instance"), "fast_parse", False):
        return True  # applied already (in this process, or in the one it was forked from)
    if not PATCH.decided(problem):
        return False
    fast = FastParse(root)
    original = root.parse_obj_as_instance

    def parse_obj_as_instance(cls: type, data: Any) -> Any:
        if cls is not root or type(data) is not dict:
            return original.__func__(cls, data)
        return fast.parse(root, data)

    method = classmethod(parse_obj_as_instance)
    method.fast_parse = True  # type: ignore[attr-defined]
    root.parse_obj_as_instance = method
    return True


def uninstall() -> None:
    """Give the library its own parse back (tests)."""
    if "parse_obj_as_instance" in vars(_root()):
        delattr(_root(), "parse_obj_as_instance")
