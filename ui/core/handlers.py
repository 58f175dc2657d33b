"""What the Compare-side handler classes are bound to: one app's backend, the Compare outputs, the waiting line,
the Stop table and the pages' lessons.

``CompareTab`` (runs, steps, replays) and ``ForkTab`` (forks of a run on screen) stream into the same panels,
wait in the same line (``ui/core/admission.py``) and are stopped through the same table (``ui/core/stream.Stops``), so
both take these from one constructor."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from agents.llm.base import ModelBuilder
from agents.llm.settings import LLMSettings
from tools.registry import ToolRegistry
from ui.core.admission import Admission
from ui.core.frame import Outputs
from ui.core.lesson import Lessons
from ui.core.stream import Stops

# A page-only event (a button that reveals a column, Stop): no API endpoint, no progress, not queued.
PAGE_EVENT: Mapping[str, Any] = MappingProxyType(
    {"api_visibility": "private", "show_progress": "hidden", "queue": False})


class TabHandlers:
    """Event handlers bound to one app's backend and its Compare output components."""

    def __init__(self, settings: LLMSettings, registry: ToolRegistry, outputs: Outputs, *,
                 model_factory: ModelBuilder | None = None, admission: Admission | None = None,
                 stops: Stops | None = None, lessons: Lessons | None = None) -> None:
        self.settings, self.registry, self.outputs = settings, registry, outputs
        self.model_factory, self.admission = model_factory, admission
        self.stops = stops if stops is not None else Stops()  # an empty Stops is falsy: `stops or Stops()` lost it
        self.lessons = lessons if lessons is not None else Lessons()  # what each page shows (ui/core/lesson.py)
