"""The one table of modes: every CLI choice, panel, checkbox, title and prompt view reads it.

A mode is one module of the ``agents.modes`` package that calls :func:`register` with a :class:`ModeSpec` (and,
with a system prompt of its own, a template in ``prompts/``). The registry imports every module of the package on
first use (:mod:`pkgutil`), so adding a mode needs no edit anywhere else: the CLI, the Compare tab, the Prompts
view, the Benchmark tab, ``eval --modes``, the MCP tool and the reports all list it.

This module imports nothing of the modes themselves, so any module may import it.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agents.events import Event
from agents.settings import kind_of, shown

if TYPE_CHECKING:
    from agents.llm.base import ChatModel
    from agents.modes.base import RunConfig
    from tools.registry import ToolRegistry

Placement = Literal["base", "more", "benchmark"]
PLACEMENTS: tuple[Placement, ...] = ("base", "more", "benchmark")
ModeFn = Callable[..., Iterator[Event]]  # (question, model, registry, config, **options) -> events
RESERVED_IDS = ("all", "none")  # "all" is a CLI choice and a /compare `mode` value; "none" reads as no mode
FORK_OPTIONS = frozenset({"runner", "reasoning"})  # what makes a mode forkable (ModeSpec.forkable)
_ID = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class RunOption:
    """A whole number a mode takes that a visitor may set, declared once in the mode's spec: a slider under
    Settings, a named ``/compare`` input, an ``ask --<name>`` flag, a key of the export's settings."""

    name: str  # the keyword the mode's run takes; also the input, flag and export key
    label: str  # "Reflexion trials": the slider's label and the first words of a refusal
    low: int
    high: int
    default: int
    info: str = ""  # the slider's one-line help

    def problem(self, value: Any) -> str | None:
        """None for a whole number (or whole numeric text) from ``low`` to ``high``; else the one line to show."""
        numeric = not isinstance(value, bool) and isinstance(value, int | float | str)
        if numeric:
            try:
                number = float(value)
            except (ValueError, OverflowError):
                number = float("nan")
            if number.is_integer() and self.low <= number <= self.high:
                return None
        got = shown(value) if numeric else kind_of(value)
        return f"{self.label} must be a whole number from {self.low} to {self.high} (got {got})."

    def whole(self, value: Any) -> int:
        """A value :meth:`problem` accepted, as the whole number the mode takes."""
        return int(float(value))


@dataclass(frozen=True)
class ModeSpec:
    """Everything the app, the CLI and the benchmark need to know about one mode.

    ``run`` has the mode signature ``(question, model, registry, config, **options)`` and yields
    events; only the ``options`` named here are passed to it (the benchmark offers ``sc_n`` and
    ``vote_key`` to every mode). ``prompt`` is the mode's own template in ``prompts/``
    (``<prompt>_tools.md``, when present, is its native-tool-call variant); a mode that only
    combines others has none and is left out of the Prompts view.

    ``placement`` says where the mode appears: ``"base"``, a Compare panel on screen by default (``/compare``'s
    outputs list them first); ``"more"``, a panel the mode picker offers beside them (the hybrids, CodeAct,
    Reflexion, …); ``"benchmark"``, the benchmark only (CoT-SC alone is a row of the paper's table, not a panel).
    Every placement is a CLI and ``eval --modes`` choice and a Benchmark checkbox. A number a visitor may set for a
    mode (Reflexion's trials) is a :class:`RunOption`: the page, ``/compare``, ``ask``, the export and the replay
    all take it from :func:`run_options`.
    """

    id: str  # CLI choice, JSON key, export key: lower-case, stable
    title: str  # panel titles, traces, the CLI and the answers table ("Think-only")
    run: ModeFn = field(repr=False)
    placement: Placement = "more"  # where it appears (class docstring)
    label: str = ""  # short name for buttons and choices ("Think"); default: the title
    table_title: str = ""  # name in benchmark tables and checkboxes ("Think-only (CoT)"); default: the title
    paper_row: str | None = None  # its row in the ReAct paper's Table 1, if any
    prompt: str | None = None  # template name in prompts/ (see above)
    other_prompts: tuple[str, ...] = ()  # further templates it sends (a reflection, a check): shown in the Prompts view
    uses_tools: bool = False  # sees the tool list (and, natively, the tool schemas)
    text_only: bool = False  # runs under the paper's text protocol only (its prompt holds a text-format example)
    options: tuple[str, ...] = ()  # keyword options ``run`` accepts
    run_options: tuple[RunOption, ...] = ()  # those of them a visitor may set (their names join ``options``)
    order: int = 100  # position among the modes of its placement (registration order breaks ties)

    @property
    def forkable(self) -> bool:
        """A fork can continue it: its run takes a recorded ``runner`` (a tool loop) or ``reasoning`` (one chain of
        thought), so its conversation can be rebuilt from a trace (``agents/fork.py``)."""
        return bool(FORK_OPTIONS & set(self.options))

    def __post_init__(self) -> None:
        if not _ID.fullmatch(self.id) or self.id in RESERVED_IDS:
            raise ValueError(f"mode id {self.id!r} must be lower-case letters, digits and _ "
                             f"(not {' or '.join(RESERVED_IDS)})")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"mode {self.id!r}: placement {self.placement!r} is not one of {', '.join(PLACEMENTS)}")
        object.__setattr__(self, "label", self.label or self.title)
        object.__setattr__(self, "table_title", self.table_title or self.title)
        object.__setattr__(self, "options", tuple(dict.fromkeys([*self.options, *(o.name for o in self.run_options)])))
        if {self.label.lower(), self.title.lower()} & set(RESERVED_IDS):
            raise ValueError(f"mode {self.id!r}: a title or label cannot be {' or '.join(RESERVED_IDS)}")


_specs: dict[str, ModeSpec] = {}
_lock = threading.Lock()  # held only for a dict update, never across an import (no lock-order deadlock)
_discovered = False


def register(spec: ModeSpec) -> ModeSpec:
    """Add a mode (called at import by the mode's own module); an id taken by another module is a ValueError."""
    with _lock:
        old = _specs.get(spec.id)
        if old is not None and _where(old) != _where(spec):  # the same module again (a reload) replaces it
            raise ValueError(f"mode {spec.id!r} is registered twice ({_where(old)} and {_where(spec)})")
        _specs[spec.id] = spec
    return spec


@contextlib.contextmanager
def registered(spec: ModeSpec) -> Iterator[ModeSpec]:
    """``spec`` registered for the block's duration only (a test's own mode), removed again afterwards."""
    register(spec)
    try:
        yield spec
    finally:
        with _lock:
            _specs.pop(spec.id, None)


def _where(spec: ModeSpec) -> str:
    return f"{getattr(spec.run, '__module__', '?')}.{getattr(spec.run, '__qualname__', '?')}"


def discover() -> None:
    """Import every module of ``agents.modes`` once, so each registers its modes.

    A module that fails to import raises here, naming the file: a broken mode is a bug to see at
    start-up, not a choice that silently goes missing. Python's import lock makes concurrent
    discoveries safe (a module runs once).
    """
    global _discovered
    if _discovered:
        return
    here = str(Path(__file__).parent)  # the package's own folder: its siblings are read from disk, not imported whole
    for info in pkgutil.iter_modules([here], f"{__package__}."):
        importlib.import_module(info.name)
    _discovered = True


def list_modes(*placements: Placement) -> tuple[ModeSpec, ...]:
    """Registered modes with these placements (default: all), by placement, then ``order``, then registration."""
    discover()
    wanted = placements or PLACEMENTS
    rank = {k: i for i, k in enumerate(PLACEMENTS)}
    with _lock:
        specs = [s for s in _specs.values() if s.placement in wanted]
    return tuple(sorted(specs, key=lambda s: (rank[s.placement], s.order)))  # stable: ties keep registration order


def mode_ids(*placements: Placement) -> tuple[str, ...]:
    """The ids of :func:`list_modes`."""
    return tuple(s.id for s in list_modes(*placements))


def panel_ids() -> tuple[str, ...]:
    """Modes with a Compare panel: the base modes, then the picker's other choices."""
    return mode_ids("base", "more")


def run_options() -> tuple[RunOption, ...]:
    """Every mode's :class:`RunOption`\\ s, in mode order, one per name (a name two modes share is one setting)."""
    found: dict[str, RunOption] = {}
    for spec in list_modes():
        for option in spec.run_options:
            found.setdefault(option.name, option)
    return tuple(found.values())


def get_mode(mode_id: str) -> ModeSpec:
    """The spec of ``mode_id``; an unknown id is a ValueError that lists the known ones."""
    discover()
    spec = _specs.get(mode_id)
    if spec is None:
        raise ValueError(f"unknown mode {mode_id!r}; expected one of {', '.join(mode_ids())}")
    return spec


_FORK_ID = re.compile(r"^([a-z_]+)@([1-9][0-9]{0,3})$")


def fork_id(mode_id: str, step_index: int) -> str:
    """The panel id of a fork of ``mode_id`` at observation ``step_index`` (0-based): ``react@2``.

    A fork is shown (and exported) beside the run it came from, so it needs an id of its own; the
    mode it continues stays readable from it (:func:`forked_mode`)."""
    return f"{mode_id}@{step_index + 1}"


def forked_mode(panel_id: str) -> tuple[str, int] | None:
    """``react@2`` → ("react", 2) (the mode and the 1-based step it forked at); None for any other id — also for
    a mode no fork can continue, so what :func:`agents.fork.forkable_modes` offers is exactly what replays."""
    discover()
    match = _FORK_ID.match(panel_id) if isinstance(panel_id, str) else None
    spec = _specs.get(match.group(1)) if match is not None else None
    if spec is None or not spec.forkable:
        return None
    return match.group(1), int(match.group(2))


def mode_of(panel_id: str) -> str:
    """The mode a panel runs: ``react`` for ``react`` and for its fork ``react@2`` (a fork's panel continues its
    mode in a follow-up)."""
    forked = forked_mode(panel_id)
    return forked[0] if forked else panel_id


def mode_title(mode_id: str) -> str:
    """The title of a mode (a fork's: "ReAct (fork @2)"), or the id itself for one not registered
    (e.g. in an old recording)."""
    discover()
    spec = _specs.get(mode_id)
    if spec is None and (forked := forked_mode(mode_id)) is not None:
        return f"{_specs[forked[0]].title} (fork @{forked[1]})"
    return spec.title if spec else mode_id


def table_title(mode_id: str) -> str:
    """The benchmark-table name of a mode, or the id itself for one not registered."""
    discover()
    spec = _specs.get(mode_id)
    return spec.table_title if spec else mode_id


def protocol_problem(modes: Iterable[str], protocol: str) -> str | None:
    """One line when ``protocol`` is not the text protocol and a mode of ``modes`` runs under it only."""
    discover()
    titles = [s.title for m in modes if (s := _specs.get(m)) is not None and s.text_only]
    if protocol == "text" or not titles:
        return None
    return (f"{' and '.join(titles)} run{'s' * (len(titles) == 1)} under the text protocol only (the worked example "
            "is in the paper's text format): choose the text protocol, or leave them out.")


def run_mode(mode_id: str, question: str, model: ChatModel, registry: ToolRegistry, config: RunConfig,
             **options: Any) -> Iterator[Event]:
    """Run a mode by id (a fork's panel id runs its mode), passing it only the ``options`` its spec names."""
    spec = get_mode(mode_of(mode_id))
    accepted = {k: v for k, v in options.items() if k in spec.options}
    return spec.run(question, model, registry, config, **accepted)
