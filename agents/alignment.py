"""The step-aligned map: where the modes of one run did the same thing, and where they first parted ways.

One column per mode, one row per aligned step (:func:`step_map`). Each trace becomes its mode's *moves*
(``agents/moves.py``); moves align where modes use the same tool with the same folded input
(:func:`agents.grounding.folded`), by a longest common subsequence against the rows so far, and every mode keeps
its order. Grounding marks (``agents/grounding.py``) place each claim's sources on their rows.

Pure functions of traces, so any exported run gets a map too.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agents.events import FinalAnswer
from agents.grounding import Claim, claims_of, earlier_observed
from agents.modes.registry import forked_mode, get_mode, mode_title
from agents.moves import Move, MoveKind, Walk, short, verb_of

if TYPE_CHECKING:
    from agents.followup import Previous
    from agents.trace import Trace

@dataclass(frozen=True)
class Row:
    """One aligned step: each mode's move in it, by the move's index in :attr:`StepMap.moves`."""

    kind: MoveKind
    cells: Mapping[str, int]


@dataclass(frozen=True)
class Divergence:
    """The first row (0-based) where the acting modes part ways, and what each did there."""

    row: int
    doing: tuple[tuple[str, str], ...]  # (mode, "computed (17*23)")

    @property
    def text(self) -> str:
        """"Here Act-only computed (17*23+5), ReAct computed (17*23)." """
        return "Here " + ", ".join(f"{mode_title(m)} {what}" for m, what in self.doing) + "."


@dataclass(frozen=True)
class Turn:
    """An earlier turn of a follow-up: its question and each mode's answer (a band above this turn)."""

    n: int
    question: str
    answers: Mapping[str, str | None]


@dataclass(frozen=True)
class StepMap:
    """The map of one run (:func:`step_map`): its columns, rows, first divergence, forks' branch rows, each
    answer's marked claims (sources placed on their rows) and a follow-up's earlier turns."""

    modes: tuple[str, ...]
    moves: Mapping[str, tuple[Move, ...]]
    rows: tuple[Row, ...]
    acting: tuple[str, ...]  # the modes whose parting the divergence names (no Think-only, no fork)
    divergence: Divergence | None
    branches: Mapping[str, int]  # a fork's panel id → the row (0-based) it branches from
    claims: Mapping[str, tuple[Claim, ...]]
    turns: tuple[Turn, ...] = ()
    turn: int = 1

    def cell(self, row: int, mode: str) -> Move | None:
        index = self.rows[row].cells.get(mode)
        return None if index is None else self.moves[mode][index]

    def row_of(self, mode: str, move: int) -> int | None:
        """The row (0-based) of a mode's move."""
        return next((r for r, row in enumerate(self.rows) if row.cells.get(mode) == move), None)


# --- traces → the map ---------------------------------------------------------------------------


def step_map(traces: Mapping[str, Trace], *, previous: Previous | None = None,
             ended: Collection[str] | None = None) -> StepMap:
    """The map of a run's ``traces`` (columns in their order, each fork after the mode it forks).

    ``previous``: a follow-up's earlier turns (bands above; their questions and observations count for the
    marks); ``ended``: the modes that have ended (None: each trace says, by an answer or an error), so a mode
    still running never makes a divergence early."""
    return MapBuilder().map(traces, previous=previous, ended=ended)


class MapBuilder:
    """:func:`step_map` for a run that grows: each trace's moves are read on from where they were, and an answer's
    claims are marked once, so making the map again after every step costs what the new events cost."""

    def __init__(self) -> None:
        self._walks: dict[str, Walk] = {}
        self._claims: dict[str, tuple[Trace, int, int, list[Claim]]] = {}

    def moves(self, mode: str, trace: Trace) -> list[Move]:
        walk = self._walks.get(mode)
        if walk is None or walk.trace is not trace or walk.read > len(trace.events):
            walk = self._walks[mode] = Walk(trace)
        walk.feed()
        return walk.moves

    def version(self, traces: Mapping[str, Trace]) -> tuple[int, ...]:
        """Changes whenever a move of any trace does (the caller makes the map again only then)."""
        for mode, trace in traces.items():
            self.moves(mode, trace)
        return tuple(self._walks[m].version for m in traces)

    def claims(self, trace: Trace, previous: Previous | None) -> list[Claim]:
        """The marked claims of ``trace``'s answer, made again only when its events or ``previous`` change."""
        held = self._claims.get(trace.mode)
        if held is not None and held[0] is trace and held[1] == len(trace.events) and held[2] == id(previous):
            return held[3]
        questions = [str(t.get("question", "")) for t in previous.turns] if previous is not None else []
        base = forked[0] if (forked := forked_mode(trace.mode)) else trace.mode
        history = previous.history.get(base, ()) if previous is not None else ()
        made = claims_of(trace, questions=questions, earlier=earlier_observed(history))
        self._claims[trace.mode] = (trace, len(trace.events), id(previous), made)
        return made

    def map(self, traces: Mapping[str, Trace], *, previous: Previous | None = None,
            ended: Collection[str] | None = None) -> StepMap:
        """As :func:`step_map`."""
        parents = {m: forked[0] for m in traces if (forked := forked_mode(m)) and forked[0] in traces}
        modes = _columns(list(traces), parents)
        moves = {m: tuple(self.moves(m, traces[m])) for m in modes}
        forks = {m: parents[m] for m in modes if m in parents}
        acting = tuple(m for m in modes if m not in forks and self._walks[m].acting)
        rows: list[dict] = []
        for mode in sorted(acting, key=lambda m: not _is_react(m)):  # ReAct's rows first: the others align to them
            _merge(rows, mode, list(moves[mode]))
        for mode in modes:  # reasoning side by side, row by row
            if mode not in forks and mode not in acting:
                for i, move in enumerate(moves[mode]):
                    _place(rows, i, mode, i, move.kind)
        branches = {f: _branch(rows, f, parent, moves[f], parent in acting) for f, parent in forks.items()}
        frozen = tuple(Row(r["kind"], dict(r["cells"])) for r in rows)
        done = set(ended) if ended is not None else {m for m, t in traces.items() if t.of(FinalAnswer) or t.error}
        draft = StepMap(modes, moves, frozen, acting, None, branches, {})
        turns = tuple(Turn(n, str(t.get("question", "")), dict(t.get("answers") or {}))
                      for n, t in enumerate(previous.turns if previous is not None else (), start=1))
        claims = {m: _placed(draft, m, self.claims(traces[m], previous)) for m in modes}
        return replace(draft, divergence=_divergence(draft, done, traces), claims=claims, turns=turns,
                       turn=len(turns) + 1)


def _is_react(mode: str) -> bool:
    """The mode of the paper's ReAct row: the one every other acting mode is aligned against first."""
    try:
        return get_mode(mode).paper_row == "ReAct"
    except ValueError:
        return False


def _columns(modes: list[str], parents: Mapping[str, str]) -> tuple[str, ...]:
    """The columns: each mode in the given order, a fork (``parents``: a fork → its mode) right after its mode."""
    out: list[str] = []
    for mode in modes:
        if mode not in parents:
            out += [mode, *(f for f in modes if parents.get(f) == mode)]
    return tuple(out)


def _merge(rows: list[dict], mode: str, moves: list[Move], low: int = 0) -> None:
    """Put ``mode``'s moves into ``rows`` from row ``low`` on: matched to rows of the same key by a longest
    common subsequence, the others as rows of their own after the unmatched rows around them."""
    rest = rows[low:]
    n, k = len(rest), len(moves)
    same = [[rest[i]["key"] is not None and rest[i]["key"] == moves[j].key for j in range(k)] for i in range(n)]
    lcs = [[0] * (k + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(k - 1, -1, -1):
            lcs[i][j] = 1 + lcs[i + 1][j + 1] if same[i][j] else max(lcs[i + 1][j], lcs[i][j + 1])
    out, i, j = [], 0, 0
    while i < n or j < k:
        if i < n and j < k and same[i][j] and lcs[i][j] == 1 + lcs[i + 1][j + 1]:
            rest[i]["cells"][mode] = j
            out.append(rest[i])
            i, j = i + 1, j + 1
        elif i < n and (j == k or lcs[i + 1][j] >= lcs[i][j + 1]):
            out.append(rest[i])
            i += 1
        else:
            out.append({"kind": moves[j].kind, "key": moves[j].key, "cells": {mode: j}})
            j += 1
    rows[low:] = out


def _place(rows: list[dict], row: int, mode: str, move: int, kind: MoveKind) -> None:
    """``mode``'s move in row ``row``, a new last row when there are not that many."""
    if row < len(rows):
        rows[row]["cells"][mode] = move
    else:
        rows.append({"kind": kind, "key": None, "cells": {mode: move}})


def _branch(rows: list[dict], fork: str, parent: str, moves: tuple[Move, ...], acting: bool) -> int:
    """A fork's moves: up to its edit in its parent's rows (the same steps), then aligned after that row (side by
    side, row by row, for a fork of reasoning); returns the row (0-based) it branches from."""
    at = next((i for i, m in enumerate(moves) if m.edited), 0)
    where = {row["cells"][parent]: r for r, row in enumerate(rows) if parent in row["cells"]}
    if not acting or not all(i in where for i in range(min(at + 1, len(moves)))):
        if acting:
            _merge(rows, fork, list(moves))
        else:
            for i, move in enumerate(moves):
                _place(rows, i, fork, i, move.kind)
        return next((r for r, row in enumerate(rows) if row["cells"].get(fork) == at), 0)
    for i in range(min(at + 1, len(moves))):
        rows[where[i]]["cells"][fork] = i
    branch = where[at] if moves else len(rows)
    _merge(rows, fork, list(moves[at + 1:]), branch + 1)
    for row in rows[branch + 1:]:  # _merge numbers the moves after the edit from 0
        if fork in row["cells"]:
            row["cells"][fork] += at + 1
    return branch


def _divergence(sm: StepMap, ended: set[str], traces: Mapping[str, Trace]) -> Divergence | None:
    """The first row of actions that not every acting mode took; None while it is not known yet (a running mode
    may still take it) or when they never part."""
    if len(sm.acting) < 2:
        return None
    for r, row in enumerate(sm.rows):
        present = [m for m in sm.acting if m in row.cells and sm.cell(r, m).kind in ("action", "votes")]  # type: ignore[union-attr]
        if not present or len(present) == len(sm.acting):
            continue
        doing = []
        for mode in sm.acting:
            move = sm.cell(r, mode) if mode in present else _next_action(sm, mode, r)
            if move is None and mode not in ended:
                return None  # it has not made its next move yet
            doing.append((mode, _what(move, traces[mode])))
        return Divergence(r, tuple(doing))
    return None


def _next_action(sm: StepMap, mode: str, after: int) -> Move | None:
    return next((m for r in range(after + 1, len(sm.rows)) if (m := sm.cell(r, mode)) is not None
                 and m.kind in ("action", "votes")), None)


def _what(move: Move | None, trace: Trace) -> str:
    """What a mode did at the divergence, in words: "computed (17*23)", "voted", "answered", "failed"."""
    if move is None:
        return "answered" if trace.answer else "failed" if trace.error else "stopped"
    if move.kind == "votes":
        return "voted over its CoT-SC samples"
    return f"{verb_of(move.tool)} ({short(move.input, 40)})"


def _placed(sm: StepMap, mode: str, claims: list[Claim]) -> tuple[Claim, ...]:
    """A mode's claims, each source put on the row of the move that shows its observation."""
    shown = {i: n for n, move in enumerate(sm.moves[mode]) for i in move.observations}
    placed = []
    for claim in claims:
        source = claim.source
        if source is not None and source.index in shown:
            claim = replace(claim, source=replace(source, row=_row_number(sm, mode, shown[source.index])))
        placed.append(claim)
    return tuple(placed)


def _row_number(sm: StepMap, mode: str, move: int) -> int | None:
    row = sm.row_of(mode, move)
    return None if row is None else row + 1
