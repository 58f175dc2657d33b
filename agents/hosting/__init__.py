"""The app's live runs, hosted: in worker processes (the default), or with the same code in the app's process.

One process uses one core and a model's stream costs CPU for every chunk, so the modes run in worker processes
(:mod:`agents.hosting.worker`) while the app's process renders the panels. :func:`make_run` / :func:`make_fork`
return a :class:`HostedRun`, the app's handle, with :class:`~agents.comparison.ComparisonRun`'s interface.
Which runs stay in the app's process (:class:`LocalHost`) and how events travel: docs/serving.md, "How a run
reaches the screen (and how Stop ends it)".
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import importlib.machinery
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.fork import prepare_fork
from agents.hosting.host import Host, HostedRun, LocalHost
from agents.hosting.processes import ROOT, WORKER_DIED, ProcessHost
from agents.hosting.worker import RunSpec
from agents.llm import gate
from agents.llm.settings import LLMSettings
from agents.modes import RunConfig
from agents.modes.registry import get_mode, mode_of
from agents.request import RunRequest
from settings import SETTINGS, read
from tools.page_tools import spec_of
from tools.registry import ToolRegistry, tool_ref

__all__ = ["WORKER_DIED", "HostedRun", "default_host", "local_host", "make_fork", "make_run", "start_default_host",
           "workers_from_env"]

ENV = "APP_RUN_WORKERS"
# On 2 vCPUs, more processes than cores: every stream's chunks are parsed under its process's interpreter lock, and
# when a crowd's streams deliver at once, fewer threads per process wait less for it (docs/performance.md).
DEFAULT_WORKERS = SETTINGS[ENV].default


def workers_from_env(environ: dict[str, str] | None = None) -> int:
    """``APP_RUN_WORKERS``: worker processes for live runs (0: run them in the app's process); a bad
    value is a one-line :class:`~settings.SettingError` (``app.main`` checks it at start-up)."""
    return read(ENV, environ)


def make_run(request: RunRequest, settings: LLMSettings, registry: ToolRegistry,
             model_factory: Callable[[LLMSettings], Any] | None = None) -> HostedRun:
    """The live run of ``request`` for the UI (unstarted), hosted where it belongs (:func:`_hosted`); ``registry``
    holds the request's tools."""
    for mode in request.modes:
        get_mode(mode_of(mode))  # a clear ValueError naming the known modes (a fork's panel runs its mode)
    return _hosted(RunSpec(request, settings, model_factory=model_factory), registry)


def make_fork(trace: Any, step_index: int, text: str, settings: LLMSettings, registry: ToolRegistry,
              config: RunConfig, model_factory: Callable[[LLMSettings], Any] | None = None,
              history: tuple[dict[str, Any], ...] = ()) -> HostedRun:
    """A teacher's fork (``agents/fork.py``) as an unstarted one-mode run, hosted like :func:`make_run`;
    ``history``: the mode's earlier turns when the forked turn was a follow-up. ValueError before anything runs
    when the trace cannot be forked there."""
    prepare_fork(trace, step_index, text, registry, config)  # the one-line refusal, here and now
    request = RunRequest(trace.question, (trace.mode,), config.protocol, config.max_steps,
                         config.temperature or 0.0, config.max_tokens,
                         history={trace.mode: tuple(history)} if history else {})
    spec = RunSpec(request, settings, model_factory=model_factory,
                   fork={"trace": trace.to_dict(), "step": step_index, "text": text})
    return _hosted(spec, registry)


@functools.lru_cache(maxsize=256)
def importable(module: str) -> bool:
    """Whether a worker process can import ``module``: from the project's root or an installed package — not
    from a folder only this process has on its path (a test runner's), nor a module loaded by file path."""
    paths = [str(ROOT)] + [p for p in sys.path if p and not Path(p).resolve().is_relative_to(ROOT)]
    try:
        return importlib.machinery.PathFinder.find_spec(module.partition(".")[0], paths) is not None
    except (ImportError, ValueError):
        return False


def _hosted(spec: RunSpec, registry: ToolRegistry) -> HostedRun:
    """In a worker when the run can travel there (its tools as import references, a tool written on the page as
    its data, no injected model) and no gate keeps it here (``LLM_MAX_CONCURRENT``, or a server found to serve one
    request at a time: one gate in this process holds every run's calls); else in this process, with the registry
    itself."""
    page = tuple(p for t in registry.tools if (p := spec_of(t)) is not None)  # made again in the worker, last
    refs = [tool_ref(t) for t in registry.tools if spec_of(t) is None]
    travels = spec.model_factory is None and all(ref is not None and importable(ref[0]) for ref in refs)
    gated = spec.settings.max_concurrent or (spec.settings.max_concurrent is None
                                            and gate.one_at_a_time(spec.settings.server_key()))
    if travels and not gated and workers_from_env() > 0:
        placed = dataclasses.replace(spec, tools=tuple(refs), page_tools=page,  # type: ignore[arg-type]
                                     max_output_chars=registry.max_output_chars)
        return HostedRun(placed, default_host())
    return HostedRun(dataclasses.replace(spec, registry=registry), local_host())


_hosts: dict[str, Host] = {}
_hosts_lock = threading.Lock()


def default_host() -> ProcessHost:
    """The process's one pool of workers, made on first use and stopped at exit."""
    with _hosts_lock:
        if "process" not in _hosts:
            host = _hosts["process"] = ProcessHost(workers_from_env())
            atexit.register(host.stop)
        return _hosts["process"]  # type: ignore[return-value]


def local_host() -> LocalHost:
    """The runs hosted in this process."""
    with _hosts_lock:
        if "local" not in _hosts:
            _hosts["local"] = LocalHost()
        return _hosts["local"]  # type: ignore[return-value]


def start_default_host() -> None:
    """Start the workers ahead of the first run (when workers are on); for the app's launch."""
    if workers_from_env() > 0:
        default_host().start()
