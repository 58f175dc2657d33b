"""The session patch's start-up check: the same verdict on Python 3.11 and 3.12, and off on a changed Gradio."""

from __future__ import annotations

import os
from copy import copy
from typing import Any

import pytest
from gradio.state_holder import SessionState

from patches import gradio_sessions


class Gradio631(SessionState):
    """6.31's ``SessionState.__init__``, copied: what the check must accept on every Python."""

    def __init__(self, blocks: Any) -> None:
        self.blocks_config = copy(blocks.default_config)
        self.config_values = {
            k: self.blocks_config.config_for_block(k, [], v)
            for k, v in self.blocks_config.blocks.items()
            if k in blocks.blocks
        }
        self.state_data: dict[int, Any] = {}
        self._state_ttl = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600


class NewAttribute(Gradio631):
    """A release that sets one more attribute."""

    def __init__(self, blocks: Any) -> None:
        self.blocks_config = copy(blocks.default_config)
        self.config_values = {
            k: self.blocks_config.config_for_block(k, [], v)
            for k, v in self.blocks_config.blocks.items()
            if k in blocks.blocks
        }
        self.state_data: dict[int, Any] = {}
        self._state_ttl = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600
        self.deep_links = {}


class ConfigUsedElsewhere(Gradio631):
    """A release that renders a block's config outside the comprehension the patch skips, too."""

    def __init__(self, blocks: Any) -> None:
        self.blocks_config = copy(blocks.default_config)
        self.config_values = {
            k: self.blocks_config.config_for_block(k, [], v)
            for k, v in self.blocks_config.blocks.items()
            if k in blocks.blocks
        }
        self.state_data: dict[int, Any] = {0: self.blocks_config.config_for_block(0, [], None)}
        self._state_ttl = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600


def test_the_installed_gradio_passes_the_check():
    assert gradio_sessions.problem() is None


def test_the_check_reads_6_31_the_same_whether_its_comprehension_is_inlined_or_not(monkeypatch):
    """3.12 inlines the comprehension (PEP 709): its names join the function's own ``co_names``."""
    monkeypatch.setattr(gradio_sessions, "SessionState", Gradio631)
    assert gradio_sessions.problem() is None
    uses = gradio_sessions.name_uses(Gradio631.__init__.__code__)
    assert uses == gradio_sessions.name_uses(SessionState.__init__.__code__), "the copy is 6.31's"
    assert uses["config_for_block"] == 1 and uses["items"] == 1


@pytest.mark.parametrize(("changed", "named"),
                         [(NewAttribute, "deep_links"), (ConfigUsedElsewhere, "config_for_block")])
def test_a_changed_session_state_turns_the_patch_off(monkeypatch, changed, named):
    monkeypatch.setattr(gradio_sessions, "SessionState", changed)
    assert named in (gradio_sessions.problem() or "")
