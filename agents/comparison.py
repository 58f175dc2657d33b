"""Run several modes on one question at once and merge their event streams.

Each mode runs in its own thread with its own model client, so three modes take as long
as the slowest one, and one mode's failure is just an event in its own stream. Closing
the generator (the UI's Stop, a dropped connection) cancels every mode, closes every
client (which ends in-flight streams) and joins the threads.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from agents.events import Event, LLMError
from agents.llm.base import ChatModel, LLMFailure
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.modes import MODES, RunConfig, Stopped, run_mode
from agents.trace import Trace
from tools.registry import ToolRegistry

log = logging.getLogger(__name__)

ALL_MODES = ("think", "act", "react")
MAX_QUESTION_CHARS = 2000
JOIN_TIMEOUT_S = 2.0
ModelFactory = Callable[[], ChatModel]
_DONE = object()


def validate_question(question: str | None) -> str | None:
    """A friendly reason to refuse the question, or None when it can be run."""
    if question is None or not str(question).strip():
        return "Please type a question first."
    if len(str(question)) > MAX_QUESTION_CHARS:
        return f"That question is {len(str(question)):,} characters long; the limit is {MAX_QUESTION_CHARS:,}."
    return None


def default_model_factory(settings: LLMSettings | None = None) -> ModelFactory:
    """A factory making one fresh :class:`HFInferenceModel` per run (clients are never shared)."""
    resolved = settings or LLMSettings.from_env()
    return lambda: HFInferenceModel(resolved)


def run_comparison(
    question: str,
    modes: Iterable[str] = ALL_MODES,
    *,
    model_factory: ModelFactory | None = None,
    registry: ToolRegistry | None = None,
    config: RunConfig | None = None,
) -> Iterator[tuple[str, Event]]:
    """Yield ``(mode, event)`` from all selected modes as they happen."""
    modes = list(dict.fromkeys(modes))
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown}; expected some of {list(MODES)}")
    if registry is None:
        from tools import default_registry

        registry = default_registry()
    factory = model_factory or default_model_factory()
    cancel = threading.Event()
    config = replace(config or RunConfig(), cancel=cancel)
    events: queue.Queue = queue.Queue()
    models: list[ChatModel] = []
    lock = threading.Lock()

    def worker(mode: str) -> None:
        model = None
        try:
            model = factory()
            with lock:
                models.append(model)
            if cancel.is_set():
                return
            for event in run_mode(mode, question, model, registry, config):
                events.put((mode, event))
                if cancel.is_set():
                    return
        except LLMFailure as exc:
            events.put((mode, LLMError(str(exc))))
        except Stopped:
            pass
        except Exception as exc:
            log.exception("mode %s failed", mode)
            events.put((mode, LLMError(f"internal error in {mode}: {type(exc).__name__}: {exc}")))
        finally:
            if model is not None:
                model.close()
            events.put((mode, _DONE))

    threads = [threading.Thread(target=worker, args=(m,), name=f"mode-{m}", daemon=True) for m in modes]
    for t in threads:
        t.start()
    try:
        remaining = len(threads)
        while remaining:
            mode, event = events.get()
            if event is _DONE:
                remaining -= 1
            else:
                yield mode, event
    finally:
        cancel.set()
        with lock:
            for model in models:
                model.close()
        deadline = time.monotonic() + JOIN_TIMEOUT_S  # one budget for all threads, not one each
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))


def compare(
    question: str,
    modes: Iterable[str] = ALL_MODES,
    *,
    on_event: Callable[[str, Event], None] | None = None,
    **kwargs: object,
) -> dict[str, Trace]:
    """Run :func:`run_comparison` to the end and return one finished :class:`Trace` per mode."""
    modes = list(dict.fromkeys(modes))
    traces = {m: Trace(m, question) for m in modes}
    for mode, event in run_comparison(question, modes, **kwargs):  # type: ignore[arg-type]
        traces[mode].add(event)
        if on_event:
            on_event(mode, event)
    return traces  # each trace's elapsed time is its own last event, not the slowest mode's
