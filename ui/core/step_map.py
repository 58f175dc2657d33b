"""The step-aligned map as the Compare tab shows it (a ``gr.HTML``): the engine's :class:`~agents.alignment.StepMap`
rendered, nothing computed here but words.

One column per mode, one row per aligned step (a follow-up's earlier turns above), the first row where the acting
modes part ways marked in words, and a last row of answers whose claims are marked backed ✓ / given ◇ / unbacked ?
(a word, a symbol and a colour). Every text from a model, a tool or a recording is escaped: the map is shown,
never run, and never makes the page fetch anything. On a phone the rows become cards (``ui/page/theme.css``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from agents.alignment import StepMap
from agents.grounding import UNBACKED_MEANS, Claim
from agents.modes.registry import mode_title
from agents.moves import Cost, Move, short
from agents.trace import Trace
from ui.core.safe_text import plain

SYMBOLS = {"backed": "✓", "given": "◇", "unbacked": "?"}
MEANS = {"backed": "found in an observation this mode received", "given": "in the question",
         "unbacked": UNBACKED_MEANS}
MAX_ANSWER_CHARS = 600
TITLE = "Step by step: where the modes part ways"
EMPTY = "The map fills as the modes take their steps."
_ID = re.compile(r"[^a-z0-9_-]")


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


@dataclass(frozen=True)
class _Page:
    """What every cell of one map reads: the map, each column's title and id, each move's trial."""

    sm: StepMap
    titles: Mapping[str, str]  # escaped
    ids: Mapping[str, str]
    trials: Mapping[str, list[int]]  # per mode, the Reflexion trial of each move (0: none)


def map_html(sm: StepMap, traces: Mapping[str, Trace], *, running: Collection[str] = ()) -> str:
    """The whole map; ``running``: the modes still running (their header says so, and no answer is shown yet)."""
    if not sm.modes:
        return ""
    page = _Page(sm, {m: esc(mode_title(m)) for m in sm.modes}, {m: _ID.sub("-", m.lower()) for m in sm.modes},
                 {m: _trials(sm.moves[m]) for m in sm.modes})
    head = "".join(f'<th scope="col">{page.titles[m]}{" ●" if m in running else ""}</th>' for m in sm.modes)
    bodies = [_earlier(page, n) for n in range(len(sm.turns))]
    bodies.append(_this_turn(page, traces, running))
    return (f'<section class="step-map" aria-label="{esc(TITLE)}">{_styles(page)}'
            f'<h2 class="sm-title">{esc(TITLE)}</h2>{_divergence(sm, running)}'
            f'<table class="sm-table"><thead><tr><th scope="col" class="sm-step">Step</th>'
            f'{head}</tr></thead>{"".join(bodies)}</table>{LEGEND}</section>')


def _trials(moves: tuple[Move, ...]) -> list[int]:
    """The Reflexion trial each move is in (0: the mode has no trials)."""
    out, trial = [], 0
    for move in moves:
        trial = int(move.band.split()[1]) if move.band.startswith("Trial ") else trial
        out.append(trial)
    return out


def _divergence(sm: StepMap, running: Collection[str]) -> str:
    if sm.divergence is not None:
        return (f'<p class="sm-divergence"><span aria-hidden="true">⋔</span> <strong>Row '
                f'{sm.divergence.row + 1}:</strong> {esc(sm.divergence.text)}</p>')
    if len(sm.acting) < 2 or not any(sm.moves[m] for m in sm.acting):
        return f'<p class="sm-note">{esc(EMPTY)}</p>' if not any(sm.moves.values()) else ""
    if any(m in running for m in sm.acting):
        return '<p class="sm-note">The acting modes have taken the same steps so far.</p>'
    return '<p class="sm-note">The acting modes took the same steps.</p>'


def _legend() -> str:
    marks = " · ".join(f'<span class="claim {mark}">{esc(mark)}<span aria-hidden="true" class="sm-sym">'
                       f'{SYMBOLS[mark]}</span></span> {esc(MEANS[mark])}' for mark in SYMBOLS)
    return f'<p class="sm-legend">Claims in each answer: {marks}.</p>'


LEGEND = _legend()


def _earlier(page: _Page, n: int) -> str:
    """An earlier turn of a follow-up: its question, then each mode's answer in that turn."""
    sm, turn = page.sm, page.sm.turns[n]
    cells = "".join(f'<td data-label="{page.titles[m]}">{esc(short(_answer_of(turn.answers, m), 120))}</td>'
                    for m in sm.modes)
    return (f'<tbody class="sm-turn"><tr class="sm-band"><th scope="rowgroup" colspan="{len(sm.modes) + 1}">Turn '
            f'{turn.n} · {esc(short(turn.question, 140))}</th></tr><tr class="sm-answer"><th scope="row" '
            f'class="sm-step">Answer</th>{cells}</tr></tbody>')


def _answer_of(answers: Mapping[str, str | None], mode: str) -> str:
    base = mode.split("@", 1)[0]
    said = answers.get(mode, answers.get(base))
    return "—" if said is None else str(said)


def _this_turn(page: _Page, traces: Mapping[str, Trace], running: Collection[str]) -> str:
    sm = page.sm
    band = (f'<tr class="sm-band"><th scope="rowgroup" colspan="{len(sm.modes) + 1}">Turn {sm.turn} · '
            f'{esc(short(next(iter(traces.values())).question, 140))}</th></tr>') if sm.turns else ""
    last: dict[str, Cost] = {}
    rows = [_row(page, r, last) for r in range(len(sm.rows))]
    return f'<tbody>{band}{"".join(rows)}{_answers(page, traces, running)}</tbody>'


def _row(page: _Page, r: int, last: dict[str, Cost]) -> str:
    sm = page.sm
    parting = sm.divergence is not None and sm.divergence.row == r
    mark = ' <span class="sm-fork-mark" aria-label="the modes part here">⋔</span>' if parting else ""
    cells = "".join(_cell(page, r, m, last) for m in sm.modes)
    return (f'<tr class="sm-row{" sm-diverge" if parting else ""}"><th scope="row" class="sm-step">{r + 1}{mark}'
            f'</th>{cells}</tr>')


def _cell(page: _Page, r: int, mode: str, last: dict[str, Cost]) -> str:
    sm, label = page.sm, page.titles[mode]
    index = sm.rows[r].cells.get(mode)
    if index is None:
        return f'<td class="sm-empty" data-label="{label}"></td>'
    move = sm.moves[mode][index]
    branch = sm.branches.get(mode)
    if branch is not None and r < branch:  # a fork, before its edit: the steps of the mode it forks
        return f'<td class="sm-same" data-label="{label}">┆ as {esc(mode_title(mode.split("@", 1)[0]))}</td>'
    trial = page.trials[mode][index]
    classes = f"sm-{move.kind}" + (f" sm-trial-{'even' if trial % 2 == 0 else 'odd'}" if trial else "")
    band = f'<span class="sm-band">{esc(move.band)}</span> ' if move.band else ""
    edit = '<span class="sm-edit">✎ edited by the teacher:</span> ' if move.edited else ""
    cost = _cost(move.cost, last.get(mode))
    last[mode] = move.cost
    shown = move.observation or (move.input if move.kind == "reasoning" else "")
    tip = f' title="{esc(short(shown, 300))}"' if shown else ""
    return (f'<td id="sm-{r + 1}-{page.ids[mode]}" class="{classes}" data-label="{label}">{band}{edit}'
            f'<span class="sm-line"{tip}>{esc(move.line)}</span>{cost}</td>')


def _cost(cost: Cost, before: Cost | None) -> str:
    """The cost so far under a cell, when it grew since the cell above in that column."""
    if before is not None and (cost.tokens, cost.tool_calls) == (before.tokens, before.tool_calls):
        return ""
    calls = f"{cost.tool_calls} tool call{'' if cost.tool_calls == 1 else 's'}"
    return (f'<span class="sm-cost">Σ {"~" if cost.estimated else ""}{cost.tokens} tokens · {calls} · '
            f'{cost.seconds:.1f} s</span>')


def _answers(page: _Page, traces: Mapping[str, Trace], running: Collection[str]) -> str:
    cells = []
    for mode in page.sm.modes:
        trace, label = traces[mode], page.titles[mode]
        if mode in running and not trace.answer:
            cells.append(f'<td class="sm-empty" data-label="{label}">…</td>')
            continue
        said = marked(trace.answer or "", page.sm.claims.get(mode, ()), page.ids[mode]) if trace.answer else \
            esc("⚠ " + short(trace.error, 120)) if trace.error else "—"
        total = Cost(trace.prompt_tokens + trace.completion_tokens, trace.tokens_estimated, trace.tool_calls,
                     trace.elapsed_s)
        cells.append(f'<td class="sm-final" data-label="{label}"><span class="sm-said">{said}</span>'
                     f'{_cost(total, None)}</td>')
    return f'<tr class="sm-answer"><th scope="row" class="sm-step">Answer</th>{"".join(cells)}</tr>'


def marked(answer: str, claims: Sequence[Claim], ident: str) -> str:
    """``answer`` as HTML with each claim marked (ids under ``ident``), its source shown on hover or focus."""
    text = answer if len(answer) <= MAX_ANSWER_CHARS else answer[: MAX_ANSWER_CHARS - 1] + "…"
    spans = sorted((s, e, n, claim) for n, claim in enumerate(claims) for s, e in claim.spans if e <= len(text))
    out, pos = [], 0
    for start, end, n, claim in spans:
        if start < pos:
            continue
        name = f"sm-c-{ident}-{n}-{start}"
        out += [esc(text[pos:start]),
                f'<span class="claim {claim.mark}" tabindex="0" id="{name}" aria-describedby="{name}-why">'
                f'{esc(text[start:end])}<span class="sm-sym" aria-hidden="true">{SYMBOLS[claim.mark]}</span>'
                f'<span class="sm-sr"> ({claim.mark})</span><span class="sm-why" role="tooltip" id="{name}-why">'
                f'{esc(_tip(claim))}</span></span>']
        pos = end
    out.append(esc(text[pos:]))
    return "".join(out)


def _tip(claim: Claim) -> str:
    """What a claim's hover says: where its observation is (row and cell), and the words around the match."""
    source = claim.source
    if claim.mark != "backed" or source is None:
        return MEANS[claim.mark].capitalize() + "."
    where = f"row {source.row}" if source.row is not None else f"turn {source.turn}" if source.turn else "earlier"
    call = f"{source.tool}({short(source.input, 60)})" if source.tool else "an observation"
    return f"Backed by {where}, {mode_title(source.mode)}: {call} → “{source.excerpt}”"


def map_markdown(sm: StepMap, claims: Mapping[str, Sequence[tuple[str, str]]]) -> str:
    """The map for the Markdown report: the divergence in words, a row per aligned step, and each answer's claims
    (``claims``: per mode, ``(text, mark)`` as the export's ``grounding`` holds them)."""
    if not sm.rows:
        return ""
    head = "| Step | " + " | ".join(plain(mode_title(m)) for m in sm.modes) + " |"
    rule = "|---:|" + "---|" * len(sm.modes)
    rows = [f"| {r + 1}{' ⋔' if sm.divergence and sm.divergence.row == r else ''} | "
            + " | ".join(plain(move.line) if (move := sm.cell(r, m)) is not None else "" for m in sm.modes) + " |"
            for r in range(len(sm.rows))]
    marks = " | ".join(plain(" · ".join(f"{text} {SYMBOLS.get(mark, '')}" for text, mark in claims.get(m, ()))) or "—"
                       for m in sm.modes)
    said = f"⋔ Row {sm.divergence.row + 1}: {sm.divergence.text}" if sm.divergence else "The acting modes did not part."
    legend = (f"Claims: {SYMBOLS['backed']} backed ({MEANS['backed']}) · {SYMBOLS['given']} given ({MEANS['given']}) · "
              f"{SYMBOLS['unbacked']} unbacked ({UNBACKED_MEANS}).")
    return "\n".join([plain(said), "", head, rule, *rows, f"| Claims | {marks} |", "", plain(legend), ""])


def _styles(page: _Page) -> str:
    """Per backed claim, a rule that outlines its observation's cell while the claim is hovered or focused."""
    rules = []
    for mode, claims in page.sm.claims.items():
        for n, claim in enumerate(claims):
            if claim.mark == "backed" and claim.source is not None and claim.source.row is not None:
                for start, _ in claim.spans:
                    name = f"sm-c-{page.ids[mode]}-{n}-{start}"
                    rules.append(f".step-map:has(#{name}:hover,#{name}:focus) #sm-{claim.source.row}-{page.ids[mode]}"
                                 "{outline:3px solid #1e3a8a;outline-offset:-3px}")
    return f"<style>{''.join(rules)}</style>" if rules else ""
