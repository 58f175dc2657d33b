"""Per-visitor session state that is cheap to make and is given back.

Gradio (6.31) keeps a ``SessionState`` per session hash, renders every block's config into it up front (used
only by deep links, which this app has none of) on the event loop, and drops none until 10,000 exist.
:func:`install` makes Gradio's app use :class:`ExpiringStateHolder`: its :class:`LeanSessionState` keeps no
per-session block configs, and its sweep (the one Gradio runs every second) drops sessions idle for
``APP_SESSION_TTL`` seconds with no event pending, and closed tabs' sessions after :data:`CLOSED_TTL_S`.
``tests/patches/test_gradio_sessions.py`` fails if Gradio's ``SessionState`` gains an attribute the subclass lacks.

Upstream write-up: docs/upstream.md#gradio_sessions.
"""

from __future__ import annotations

import copy
import datetime
import dis
import os
from collections import Counter
from collections.abc import Iterator
from types import CodeType
from typing import Any

from gradio import routes
from gradio.state_holder import SessionState, StateHolder

from patches import Patch

PATCH = Patch("gradio_sessions", "gradio", "6.31.0")
CLOSED_TTL_S = 60.0  # a closed tab's session, after this (a reload within a minute keeps it)
SWEEP_EVERY_S = 10.0


class LeanSessionState(SessionState):
    """``SessionState`` without the per-session copies of block configs that only deep links read.

    Gradio writes into ``config_values`` the config of every input and output of each event,
    with its last value (a whole chat transcript); this app has no deep links, so nothing reads
    them. :attr:`components` (the deep-link route) renders them from the session's blocks instead.
    """

    def __init__(self, blocks: Any) -> None:  # mirrors SessionState.__init__ minus the eager config_values
        self.blocks_config = copy.copy(blocks.default_config)
        self._root_blocks = blocks
        self.config_values: dict[int, dict] = {}
        self.state_data: dict[int, Any] = {}
        self._state_ttl: dict[int, Any] = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600

    def _update_config(self, key: int) -> None:
        """Nothing to keep (see the class docstring)."""

    def _update_value_in_config(self, key: int, value: Any) -> None:
        """Nothing to keep (see the class docstring)."""

    @property
    def components(self) -> Iterator[dict]:
        for k, block in self.blocks_config.blocks.items():
            if k in self._root_blocks.blocks:
                yield self.blocks_config.config_for_block(k, [], block)


class ExpiringStateHolder(StateHolder):
    """``StateHolder`` that also forgets idle sessions (see the module docstring)."""

    ttl_s = 900.0  # an idle session's life (APP_SESSION_TTL, set by install)

    def __init__(self) -> None:
        super().__init__()
        self._last_sweep = datetime.datetime.now()

    def __getitem__(self, session_id: str) -> SessionState:
        if session_id not in self.session_data:
            self.session_data[session_id] = LeanSessionState(self.blocks)
        return super().__getitem__(session_id)

    def delete_all_expired_state(self) -> None:
        super().delete_all_expired_state()
        now = datetime.datetime.now()
        if (now - self._last_sweep).total_seconds() >= SWEEP_EVERY_S:
            self._last_sweep = now
            self.expire_idle(now)

    def expire_idle(self, now: datetime.datetime | None = None) -> int:
        """Drop sessions idle past their TTL with nothing pending; returns how many were dropped."""
        now = now or datetime.datetime.now()
        queue = getattr(getattr(self, "blocks", None), "_queue", None)
        pending = getattr(queue, "pending_event_ids_session", {}) or {}
        dropped = 0
        for session_id, session in list(self.session_data.items()):
            idle = (now - self.time_last_used.get(session_id, now)).total_seconds()
            ttl = CLOSED_TTL_S if session.is_closed else self.ttl_s
            if idle < ttl or pending.get(session_id):
                continue
            self.delete_state(session_id)  # gr.State values first: their delete_callback runs
            with self.lock:
                self.session_data.pop(session_id, None)
                self.time_last_used.pop(session_id, None)
            messages = getattr(queue, "pending_messages_per_session", {})
            if session_id in messages and messages[session_id].empty():  # an idle REST session's mailbox
                del messages[session_id]
            dropped += 1
        return dropped


def problem() -> str | None:
    """Does Gradio still build its apps' session holder from ``gradio.routes.StateHolder``, and does
    ``SessionState.__init__`` touch nothing :class:`LeanSessionState` does not (besides the config it skips)?"""
    if not isinstance(getattr(routes, "StateHolder", None), type) or not issubclass(routes.StateHolder, StateHolder):
        return "gradio.routes.StateHolder is not the class apps are built with any more"
    theirs = name_uses(SessionState.__init__.__code__) - _SKIPPED
    if new := sorted(theirs - name_uses(LeanSessionState.__init__.__code__)):
        return f"SessionState.__init__ now also uses {new}"
    return None


def name_uses(code: CodeType) -> Counter[str]:
    """How many times ``code`` names each global and attribute, the code of its comprehensions included.

    Python 3.11 compiles a comprehension into a code object of its own; 3.12 inlines it into the function
    (PEP 709), so the function's own ``co_names`` differ between them. Counted over the code and every code
    object nested in it, the uses are the same on both, and a name used once more than before is new."""
    uses = Counter(op.argval for op in dis.get_instructions(code) if op.opcode in dis.hasname)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            uses += name_uses(const)
    return uses


# What 6.31's SessionState.__init__ uses to render every block's config up front, and nothing else uses:
# {k: self.blocks_config.config_for_block(k, [], v) for k, v in self.blocks_config.blocks.items() if k in blocks.blocks}
_SKIPPED = Counter({"blocks_config": 2, "config_for_block": 1, "blocks": 2, "items": 1})


def install(ttl_s: float) -> bool:
    """Make Gradio build new apps with :class:`ExpiringStateHolder` (idempotent); True when applied."""
    if not PATCH.usable(problem()):
        return False
    ExpiringStateHolder.ttl_s = ttl_s
    routes.StateHolder = ExpiringStateHolder  # type: ignore[misc]
    return True
