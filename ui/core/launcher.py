"""Threads started for the event loop without making it wait."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Launcher:
    """Starts threads for the event loop without making it wait.

    ``Thread.start()`` blocks until the new thread has run, which on a busy 2-core server (hundreds
    of threads wanting the GIL) took tens of milliseconds: four per run, on the loop every visitor
    shares, stalled a flood of 300 submissions and the page itself for seconds. The loop only
    queues work here; this one thread does the starting.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self, target: Callable[[], None], name: str) -> None:
        """Run ``target`` in a new thread called ``name``."""
        self._put(target, name)

    def call(self, target: Callable[[], None]) -> None:
        """Run ``target`` (something quick, e.g. one that starts threads) in the launcher's own thread."""
        self._put(target, None)

    def _put(self, target: Callable[[], None], name: str | None) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="thread-launcher", daemon=True)
                self._thread.start()
        self._jobs.put((target, name))

    def _serve(self) -> None:
        while True:
            target, name = self._jobs.get()
            try:
                if name is None:
                    target()
                else:
                    threading.Thread(target=target, name=name, daemon=True).start()
            except RuntimeError:  # can't start new thread: run it here rather than lose it
                log.exception("could not start %s", name)
                target()
            except Exception:
                log.exception("launcher job failed")


launcher = Launcher()  # one per process: the live runs' threads are started here
