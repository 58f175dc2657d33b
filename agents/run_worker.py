"""The worker process of :mod:`agents.run_host`: live runs' mode threads, away from the app's event loop.

``python -m agents.run_worker CMD_FD EVENT_FD``: commands ("start" a run from its data, "close" it) come
down one pipe; events go up the other in batches, pickled. Each run is an ordinary
:class:`~agents.comparison.ComparisonRun` whose event queue is replaced by an :class:`_Outbox`, so one
sender thread serves every run (a thread per run would only add hand-offs). When the app's end of the
command pipe closes (the app exited or was killed), the worker cancels its runs and exits.
"""

from __future__ import annotations

import collections
import logging
import os
import queue
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any

from agents import gc_tuning
from agents.comparison import _DONE, ComparisonRun
from agents.events import LLMError, TokenDelta
from agents.modes import RunConfig
from agents.run_host import CLOSED

log = logging.getLogger(__name__)

MAX_BATCH = 1024  # events per message at most (a message is one pickle the app unpickles at once)


class _Outbox:
    """Stands in for a run's event queue in the worker: tags events with the run and queues them
    for the sender; the end of a mode travels as ``None``."""

    def __init__(self, shared: queue.SimpleQueue, run_id: int) -> None:
        self.shared, self.run_id = shared, run_id

    def put(self, item: tuple[str, object]) -> None:
        mode, event = item
        self.shared.put((self.run_id, mode, None if event is _DONE else event))


def merged(batch: list[tuple[int, str, Any]]) -> list[tuple[int, str, Any]]:
    """Consecutive token deltas of the same run, mode and channel as one (fewer events for the app to
    unpickle and render; the text and order are the same)."""
    out: list[tuple[int, str, Any]] = []
    for item in batch:
        run_id, mode, event = item
        if isinstance(event, TokenDelta) and out:
            last_run, last_mode, last = out[-1]
            if (last_run, last_mode) == (run_id, mode) and isinstance(last, TokenDelta) and last.channel == event.channel:
                out[-1] = (run_id, mode, TokenDelta(last.text + event.text, event.channel))
                continue
        out.append(item)
    return out


class WorkerMain:
    """The worker's loop: commands in, batches of events out."""

    def __init__(self, commands: Connection, events: Connection) -> None:
        from agents.llm.hf import HFInferenceModel
        from tools import default_registry

        self.commands, self.events = commands, events
        self.outbox: queue.SimpleQueue = queue.SimpleQueue()
        self.runs: dict[int, ComparisonRun] = {}
        self.ends: collections.Counter = collections.Counter()  # modes ended so far, per run (sender thread)
        self.registry = default_registry()  # one cache for all runs of this worker
        self.model = HFInferenceModel

    def serve(self) -> None:
        threading.Thread(target=self._send_loop, name="sender", daemon=True).start()
        while True:
            try:
                message = self.commands.recv()
            except (EOFError, OSError):
                break  # the app is gone
            if message[0] == "start":
                self._start(message[1], message[2])
            elif message[0] == "close":
                run = self.runs.pop(message[1], None)
                threading.Thread(target=self._close, args=(message[1], run), name="close", daemon=True).start()
        for run in list(self.runs.values()):
            run.cancel.set()
            run._models.close_all()

    def _start(self, run_id: int, spec: dict[str, Any]) -> None:
        try:
            settings = spec["settings"]
            tools = spec["tools"]
            registry = self.registry if tools is None else self.registry.subset(tools)
            run = ComparisonRun(spec["question"], spec["modes"], model_factory=lambda: self.model(settings),
                                registry=registry, config=RunConfig(**spec["config"]))
            run._events = _Outbox(self.outbox, run_id)  # type: ignore[assignment]
            self.runs[run_id] = run
            run.start()
        except Exception as exc:
            log.exception("run %d failed to start", run_id)
            for mode in spec.get("modes", []):
                self.outbox.put((run_id, mode, LLMError(f"internal error: the run could not start: {exc}")))
                self.outbox.put((run_id, mode, None))

    def _close(self, run_id: int, run: ComparisonRun | None) -> None:
        try:
            if run is not None:
                run.close()
        except Exception:
            log.exception("closing run %d failed", run_id)
        self.outbox.put((run_id, "", CLOSED))

    def _send_loop(self) -> None:
        while True:
            batch = [self.outbox.get()]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self.outbox.get_nowait())
                except queue.Empty:
                    break
            try:
                self.events.send(merged(batch))
            except (OSError, ValueError):
                os._exit(0)  # the app is gone
            except Exception:  # e.g. an event that cannot be pickled: end, so the app reports its runs cut off
                log.exception("could not send events to the app")
                os._exit(1)
            self._forget_finished(batch)

    def _forget_finished(self, batch: list[tuple[int, str, Any]]) -> None:
        for run_id, mode, event in batch:
            if event is None and mode and run_id in self.runs:
                self.ends[run_id] += 1
                run = self.runs.get(run_id)
                if run is not None and self.ends[run_id] >= len(run.modes):
                    self.runs.pop(run_id, None)
                    del self.ends[run_id]
            elif not mode:  # closed
                self.ends.pop(run_id, None)


def main(argv: list[str]) -> None:
    """``python -m agents.run_host CMD_FD EVENT_FD``: serve runs until the app closes the command pipe."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="run-worker: %(levelname)s %(name)s: %(message)s")
    commands = Connection(int(argv[0]), writable=False)
    events = Connection(int(argv[1]), readable=False)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print() must not reach the app
    worker = WorkerMain(commands, events)
    gc_tuning.settle()  # imports and the tool registry are built: never walk them again
    worker.serve()
    os._exit(0)  # daemon threads (streams being cancelled) must not keep the worker alive


if __name__ == "__main__":
    main(sys.argv[1:])
