"""Run several modes on one question at once and merge their event streams.

Each mode runs in its own thread with its own model client, so three modes take as long as the slowest one,
and one mode's failure is just an event in its own stream. Closing the run (the UI's Stop, a dropped
connection) cancels every mode and ends their in-flight streams. A mode cut off by a one-request-at-a-time
server runs again, alone (:meth:`ComparisonRun._worker`); stepping is docs/stepping.md.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from agents.conversation import Continuing
from agents.events import TURN, Event, FinalAnswer, LLMError, Retry, Usage, Waited, Waiting
from agents.llm.base import ChatModel, LLMFailure, Message, ModelFactory
from agents.llm.discovery import resolve_model
from agents.llm.hf import HFInferenceModel
from agents.llm.settings import LLMSettings
from agents.modes import RunConfig, Stopped
from agents.modes.registry import mode_ids, mode_of, run_mode
from agents.request import RunRequest
from agents.stepping import RETRIED, StepControls, StepGate, StepState
from agents.trace import Trace
from tools import default_registry
from tools.registry import ToolRegistry

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000
JOIN_TIMEOUT_S = 2.0
ModeSource = Callable[[ChatModel, RunConfig], Iterator[Event]]  # a mode's events, given its client and settings
Sink = Callable[[str, "Event | None"], None]  # receives (mode, event) as they happen; (mode, None): the mode ended
RETRY_NOTE = ("the model server cut this mode's reply off when another mode's request arrived; running it again now "
              "that the other modes have finished (LLM_MAX_CONCURRENT=1 runs the modes in turn from the start)")
BUSY_NOTE = ("the model server sent nothing in time while it served the other modes; running this mode again now "
             "that they have finished (LLM_MAX_CONCURRENT=1 runs the modes in turn from the start)")
HELD = {  # what a mode that runs again once the others have finished says meanwhile (a Waiting, not an error)
    "interrupted": "the model server closed this mode's reply when another mode's request arrived: it runs again "
                   "once the other modes have finished",
    "busy": "the model server sent nothing in time while it served the other modes: this mode runs again once they "
            "have finished",
}


def validate_question(question: str | None) -> str | None:
    """A friendly reason to refuse the question, or None when it can be run.

    Shared by Compare, the benchmark (every item, whatever its source) and the CLI: text only,
    something visible in it (not just NULs or control characters), at most ``MAX_QUESTION_CHARS``,
    and encodable (no lone surrogates, which would fail later inside the HTTP client).
    """
    if question is not None and not isinstance(question, str):
        kind = {list: "a list", dict: "an object", bool: "true/false"}.get(type(question), "a number")
        return f"The question must be text, not {kind}."
    if question is None or not question.strip():
        return "Please type a question first."
    if len(question) > MAX_QUESTION_CHARS:
        return f"That question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}."
    if not any(c.isprintable() and not c.isspace() for c in question):
        return "That question has no visible characters (only control characters); please type a question."
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:
        return "That question contains characters that cannot be sent (broken Unicode); please retype it."
    return None


def default_model_factory(settings: LLMSettings | None = None) -> ModelFactory:
    """A factory making one fresh :class:`HFInferenceModel` per run (clients are never shared); settings read
    here from the environment ask a ``base_url`` server for its model when ``LLM_MODEL`` names none."""
    resolved = settings or resolve_model(LLMSettings.from_env())
    return lambda: HFInferenceModel(resolved)


class OpenModels:
    """The model clients a run has open, so a cancel can close them all at once, from any thread."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel
        self._models: list[ChatModel] = []
        self._lock = threading.Lock()

    def add(self, model: ChatModel) -> None:
        with self._lock:
            self._models.append(model)
        if self.cancel.is_set():  # cancelled while the client was being made
            model.close()

    def discard(self, model: ChatModel) -> None:
        with self._lock:
            if model in self._models:
                self._models.remove(model)
        model.close()

    def close_all(self) -> None:
        with self._lock:
            models = list(self._models)
        for model in models:
            model.close()


def run_one(
    mode: str,
    question: str,
    factory: ModelFactory,
    registry: ToolRegistry,
    config: RunConfig,
    models: OpenModels,
    source: ModeSource | None = None,
    **options: object,
) -> Iterator[Event]:
    """One mode's run on a fresh model client, as events: a failure ends it with an ``LLMError``,
    a cancel ends it quietly, and the client is closed however it ends (also when the caller
    stops iterating). ``options`` go to the modes that take them (the hybrids' ``sc_n``, ``vote_key``);
    ``source``, when given, replaces the mode's own loop (a fork: ``agents.fork.prepare_fork``). Each call's
    ``Usage`` names the model that answered when the server said (``HFInferenceModel.answered``)."""
    model = None
    try:
        model = factory()
        models.add(model)
        if not config.cancel.is_set():
            events = source(model, config) if source is not None else run_mode(mode, question, model, registry,
                                                                               config, **options)
            try:
                for event in events:
                    answered = getattr(model, "answered", None) if isinstance(event, Usage) else None
                    yield replace(event, model=answered) if answered and event.model is None else event
            finally:  # as `yield from` would: the mode's own clean-up runs before its client is closed
                getattr(events, "close", lambda: None)()
    except Stopped:
        return
    except LLMFailure as exc:
        yield LLMError(str(exc), exc.reason)
    except Exception as exc:  # one mode's bug must not take the others down
        log.exception("mode %s failed", mode)
        yield LLMError(f"internal error in {mode}: {type(exc).__name__}: {exc}")
    finally:
        if model is not None:
            models.discard(model)


class ComparisonRun(StepControls):
    """Selected modes running concurrently, one thread and one model client each.

    For callers that must stay responsive while no event arrives (a UI that has to honour
    Stop even when every provider hangs): :meth:`poll` waits at most ``timeout`` seconds,
    and :meth:`close` may be called from any thread at any time. A ``sink`` receives the
    events instead, from the mode threads, as ``(mode, event)`` and ``(mode, None)`` when a mode
    ends (a worker process batches them for the app: ``agents/hosting/worker.py``); ``options`` are
    offered to every mode, which takes those its spec names (Reflexion's ``expected``, ``trials``).
    """

    def __init__(
        self,
        question: str,
        modes: Iterable[str] | None = None,
        *,
        model_factory: ModelFactory | None = None,
        registry: ToolRegistry | None = None,
        config: RunConfig | None = None,
        stepping: bool = False,
        sources: dict[str, ModeSource] | None = None,
        options: dict[str, object] | None = None,
        sink: Sink | None = None,
        history: dict[str, list[Message]] | None = None,
    ) -> None:
        self.modes = list(dict.fromkeys(mode_ids("base") if modes is None else modes))
        unknown = [m for m in self.modes if mode_of(m) not in mode_ids()]  # a fork's panel (react@2) runs its mode
        if unknown:
            raise ValueError(f"unknown mode(s) {unknown}; expected some of {list(mode_ids())}")
        if registry is None:
            registry = default_registry()
        self.question, self.registry = question, registry
        self.factory = model_factory or default_model_factory()
        self.cancel = threading.Event()
        self.config = replace(config or RunConfig(), cancel=self.cancel)
        self._events: queue.Queue = queue.Queue()
        self._emit: Sink = sink or (lambda mode, event: self._events.put((mode, event)))
        self._options = dict(options or {})  # offered to every mode; each takes those its spec names
        self._history = dict(history or {})  # each mode's earlier turns: a follow-up (agents/conversation.py)
        self._models = OpenModels(self.cancel)
        self._threads = [threading.Thread(target=self._worker, args=(m,), name=f"mode-{m}", daemon=True)
                         for m in self.modes]
        self._remaining = len(self._threads)
        self._first_round = len(self._threads)  # modes still on their first attempt
        self._round = threading.Condition()
        self._retry_lock = threading.Lock()  # modes that run again do so one at a time
        self._server_alive = False  # some mode answered or was cut off by another: the server does serve
        self._sources = dict(sources or {})  # modes whose events come from elsewhere (a fork)
        self._gates = {m: StepGate(self.cancel, stepping=stepping) for m in self.modes}
        self._steps = StepState(self.modes)  # who waits, from the events passed on (and who waits to run again)

    @classmethod
    def of(cls, request: RunRequest, model_factory: ModelFactory | None = None, registry: ToolRegistry | None = None,
           *, sink: Sink | None = None) -> ComparisonRun:
        """The run of a :class:`~agents.request.RunRequest`, its modes offered the request's options."""
        return cls(request.question, request.modes, model_factory=model_factory, registry=registry,
                   config=request.config(), stepping=request.stepping, options=request.mode_options(), sink=sink,
                   history={mode: list(turns) for mode, turns in request.history.items()})

    def _control(self, kind: str) -> None:
        """Step control (:class:`~agents.stepping.StepControls`) returns at once: the mode threads do the waiting."""
        for gate in self._gates.values():
            {"step": gate.grant, "resume": gate.release, "pause": gate.pause_next}[kind]()

    def start(self) -> ComparisonRun:
        for t in self._threads:
            t.start()
        return self

    @property
    def done(self) -> bool:
        return self._remaining == 0

    def poll(self, timeout: float | None = None) -> tuple[str, Event] | None:
        """The next ``(mode, event)``, or None if none came within ``timeout`` or all modes are done."""
        while not self.done:
            try:
                mode, event = self._events.get(timeout=timeout)
            except queue.Empty:
                return None
            if event is not None:
                return mode, event
            self._remaining -= 1
        return None

    def close(self) -> None:
        """Cancel every mode, close every client (ending in-flight requests) and join the threads."""
        self.cancel.set()
        with self._round:
            self._round.notify_all()  # modes waiting for their retry give up
        for gate in self._gates.values():
            gate.wake()  # paused modes see the cancel and end
        self._models.close_all()
        deadline = time.monotonic() + JOIN_TIMEOUT_S  # one budget for all threads, not one each
        for t in self._threads:
            if t.is_alive() and t is not threading.current_thread():
                t.join(max(0.0, deadline - time.monotonic()))

    def _worker(self, mode: str) -> None:
        """Run ``mode``, and once more when its first attempt was cut off by the server. A server that serves one
        request at a time may cut a reply off when another mode's request arrives (llama-cpp-python's server does,
        by default): the mode ends with reason "interrupted" and, once every other mode has finished, runs again
        alone after a ``Retry`` event that says why (one retry; modes waiting to retry go one at a time). A mode
        that got no first token in time while the others streamed ("busy": probably queued behind them) runs
        again too, but only when the server proved alive in this run (a mode answered or was interrupted): a hung
        server is not waited for twice. ``LLM_MAX_CONCURRENT=1`` avoids the collisions from the start."""
        try:
            try:
                held = self._attempt(mode)
            finally:
                with self._round:
                    self._first_round -= 1
                    self._round.notify_all()
            if held is not None:
                began = time.monotonic()
                again = self._others_finished(mode) and (held.reason == "interrupted" or self._server_alive)
                with self._retry_lock:
                    if not self.cancel.is_set():
                        self._steps.add(mode, Waited(round(time.monotonic() - began, 3), TURN), self._emit)
                        if not again:
                            self._steps.add(mode, held, self._emit)  # no retry follows: the error is final
                        else:
                            note = RETRY_NOTE if held.reason == "interrupted" else BUSY_NOTE
                            self._steps.add(mode, Retry(note), self._emit)
                            self._attempt(mode, hold=False)
        finally:
            self._steps.add(mode, None, self._emit)

    def _attempt(self, mode: str, *, hold: bool = True) -> LLMError | None:
        """Run the mode once, forwarding its events. An error it may recover from by running again (the server cut
        it off, or sent nothing while it served the others) is held back when ``hold`` and other modes run: a
        :class:`Waiting` says the mode waits to run again, and the error is returned (None: nothing held)."""
        held: LLMError | None = None
        since = 0.0
        gate = self._gates[mode]
        gate.restart()
        config = replace(self.config, stepper=gate)
        factory = self.factory
        if earlier := self._history.get(mode):  # a follow-up: every request of the mode carries its earlier turns
            factory = lambda: Continuing(self.factory(), earlier)  # noqa: E731
        for event in run_one(mode, self.question, factory, self.registry, config, self._models,
                             self._sources.get(mode), **self._options):
            if held is not None:  # the mode went on after it: not its end, so no wait to run again
                self._steps.add(mode, Waited(round(time.monotonic() - since, 3), TURN), self._emit)
                self._steps.add(mode, held, self._emit)
                held = None
            if isinstance(event, FinalAnswer) or (isinstance(event, LLMError) and event.reason == "interrupted"):
                self._server_alive = True
            if hold and isinstance(event, LLMError) and event.reason in RETRIED and len(self.modes) > 1:
                held, since = event, time.monotonic()
                self._steps.add(mode, Waiting(HELD[event.reason], TURN, rerun=True, reason=event.reason), self._emit)
            else:
                self._steps.add(mode, event, self._emit)
            if self.cancel.is_set():
                break
        if self.cancel.is_set():
            return None
        return held

    def _others_finished(self, mode: str) -> bool:
        """Wait until no mode is on its first attempt any more; False if the run was cancelled meanwhile. Meanwhile
        the mode counts as held, not running (``StepState``, from the error it ended with)."""
        with self._round:
            while self._first_round > 0 and not self.cancel.is_set():
                self._round.wait(1.0)
        return not self.cancel.is_set()


def run_comparison(
    question: str,
    modes: Iterable[str] | None = None,
    *,
    model_factory: ModelFactory | None = None,
    registry: ToolRegistry | None = None,
    config: RunConfig | None = None,
    options: dict[str, object] | None = None,
) -> Iterator[tuple[str, Event]]:
    """Yield ``(mode, event)`` from all selected modes (default: the base modes) as they happen; closing the
    generator stops them all. ``options`` as for :class:`ComparisonRun`."""
    run = ComparisonRun(question, modes, model_factory=model_factory, registry=registry, config=config,
                        options=options)
    run.start()
    try:
        while (item := run.poll()) is not None:
            yield item
    finally:
        run.close()


def compare(
    question: str,
    modes: Iterable[str] | None = None,
    *,
    on_event: Callable[[str, Event], None] | None = None,
    **kwargs: object,
) -> dict[str, Trace]:
    """Run :func:`run_comparison` to the end and return one finished :class:`Trace` per mode."""
    modes = list(dict.fromkeys(mode_ids("base") if modes is None else modes))
    traces = {m: Trace(m, question) for m in modes}
    for mode, event in run_comparison(question, modes, **kwargs):  # type: ignore[arg-type]
        traces[mode].add(event)
        if on_event:
            on_event(mode, event)
    return traces  # each trace's elapsed time is its own last event, not the slowest mode's
