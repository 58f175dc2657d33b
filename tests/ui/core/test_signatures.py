"""ui/core/signatures.py: a handler's signature is worked out once, and inspect gives the same answer."""

from __future__ import annotations

import inspect

from ui.core import signatures


class _Tab:
    def handler(self, question: str, modes: list[str] | None = None, *rest: object) -> None:
        """A bound method, as Gradio's handlers often are."""


def _plain(a: int, b: str = "x", **kwargs: object) -> int:
    return a


def test_a_pinned_function_keeps_its_signature():
    before = inspect.signature(_plain)
    signatures.pin(_plain)
    assert "__signature__" in _plain.__dict__ and inspect.signature(_plain) == before


def test_a_bound_method_is_pinned_on_its_function_and_still_drops_self():
    tab = _Tab()
    before = inspect.signature(tab.handler)
    signatures.pin(tab.handler)
    assert "__signature__" in _Tab.handler.__dict__
    assert inspect.signature(tab.handler) == before and "self" not in inspect.signature(tab.handler).parameters


def test_what_cannot_be_pinned_is_left_alone():
    signatures.pin(None)
    signatures.pin(len)  # a builtin takes no attributes
    assert signatures.pin_handlers([type("Fn", (), {"fn": None})()]) == 0


def test_the_app_s_handlers_are_pinned():
    import app
    from agents.llm.settings import LLMSettings
    from tools.calculator import calculate
    from tools.registry import ToolRegistry

    demo = app.build_demo(settings=LLMSettings(model="stub", base_url="http://127.0.0.1:9/v1"),
                          registry=ToolRegistry([calculate]))
    fns = [f.fn for f in demo.fns.values() if f.fn is not None]
    assert fns and all("__signature__" in getattr(f, "__func__", f).__dict__ for f in fns)
