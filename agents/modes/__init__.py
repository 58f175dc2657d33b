"""The reasoning modes, as generators of events, and their registry.

``think_only`` (chain of thought, no tools), ``act_only`` (actions and observations, no
thoughts) and ``react`` (thought → action → observation) are the paper's base modes; its
CoT-SC hybrids live in :mod:`agents.modes.hybrids`, Reflexion (ReAct trials with self-reflection) in
:mod:`agents.modes.reflexion`. Act and ReAct run over either protocol —
"text" (the paper's format, any model) or "tools" (native function calling) — and yield the
same events either way. Each mode registers a :class:`~agents.modes.registry.ModeSpec` in its
own module; everything that lists or runs modes reads :mod:`agents.modes.registry`.
"""

from __future__ import annotations

from agents.modes.acting import act_only, react
from agents.modes.base import RunConfig, Stopped
from agents.modes.think import think_only

__all__ = ["RunConfig", "Stopped", "act_only", "react", "think_only"]
