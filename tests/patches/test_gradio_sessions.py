"""The session patch (patches/gradio_sessions.py): lean sessions that set what Gradio sets, a closed tab that expires
sooner, and the start-up check: the same verdict on Python 3.11 and 3.12, and off on a changed Gradio."""

from __future__ import annotations

import datetime
import inspect
import os
from copy import copy
from typing import Any

import gradio as gr
import pytest
from gradio.state_holder import SessionState

from patches import gradio_sessions
from patches.gradio_sessions import ExpiringStateHolder, LeanSessionState


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


def test_lean_session_state_sets_what_gradio_sets():
    """Guard for Gradio upgrades: a new attribute in SessionState.__init__ must be mirrored here."""
    with gr.Blocks() as demo:
        gr.Textbox()
    ours, theirs = LeanSessionState(demo), SessionState(demo)
    assert set(vars(theirs)) <= set(vars(ours))
    assert "config_values" in inspect.getsource(SessionState._update_value_in_config)


def test_a_closed_tab_expires_sooner():
    holder = ExpiringStateHolder()
    with gr.Blocks() as demo:
        gr.Textbox()
    holder.set_blocks(demo)
    for session_id in ("open", "closed"):
        holder[session_id]  # creating the sessions is the point
    holder.session_data["closed"].is_closed = True
    soon = datetime.datetime.now() + datetime.timedelta(seconds=gradio_sessions.CLOSED_TTL_S + 1)
    assert holder.expire_idle(soon) == 1 and list(holder.session_data) == ["open"]
