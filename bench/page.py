"""docs/performance.md and the README's headline figures, rendered from the results files in bench/results/.

``python -m bench --write`` calls :func:`write`; it runs no benchmark. The page is bench/performance.template.md
with its ``{{name}}`` places filled: the newest full run's table (bench/report_table.py's rows, goals and verdicts)
and where its streamed token's CPU goes, the newest full runs side by side with each one's machine, and one
before/after section per entry of :data:`COMPARISONS`. The README's figures are :data:`HEADLINES`, read from the
newest full run, between its two ``headline figures`` markers. Nothing on the page is written by hand, so a figure
cannot drift from its run.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from bench import run_record
from bench.report_table import figures, goals_table, rows, stages_table, verdict

TEMPLATE = Path(__file__).resolve().parent / "performance.template.md"
PAGE = run_record.ROOT / "docs" / "performance.md"
README = run_record.ROOT / "README.md"
SIDE_BY_SIDE = 8  # the newest full runs, one column each


@dataclass(frozen=True)
class Comparison:
    """Two results files of bench/results/ set side by side as before/after columns, under ``title``."""

    title: str
    before: str
    after: str


# One line per before/after section of the page: Comparison("what changed", "BEFORE.json", "AFTER.json").
COMPARISONS: list[Comparison] = []

# The README's figures: (what a newcomer reads, the row of the newest full run that gives the figure and goal).
HEADLINES = [
    ("All three modes at once against the slowest one alone (wall time)", "All vs slowest mode alone (wall ratio)"),
    ("100 visitors clicking Run at once against one alone (wall time)",
     "short replies: 100 visitors vs 1, mode All (wall ratio, errors)"),
    ("First text on screen after the model's first token, 50 visitors (max)",
     "short replies: first text on screen after the server's first token (50 visitors × 3 panels)"),
    ("A class poll's vote on every phone of a 200-phone room (max)",
     "class poll, 200 phones in one room: a new vote on every other phone of its room (max)"),
    ("A sandboxed Python call (median)", "sandbox call latency (python_repl, trivial program)"),
]
BEGIN = "<!-- headline figures: python -m bench --write puts them here, from the newest full run -->"
END = "<!-- end of headline figures -->"
PLACE = re.compile(r"\{\{(\w+)\}\}")
UNIT = re.compile(r"[≤<≥] (\+?)[\d.]+(?: (ms/s|ms|s|MB|GB))?")


class PageError(ValueError):
    """The template, the README or :data:`COMPARISONS` do not fit: one line saying which and why."""


def brief(value: float | None, goal: str) -> str:
    """A row's value in about three figures and its goal's unit (``0.264 ms``, ``+0.22 s``, ``1.23``); ``errors``
    when errors failed it."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if math.isinf(value):
        return "errors"
    sign, unit = (m.group(1), m.group(2)) if (m := UNIT.search(goal)) else ("", None)
    size = abs(value)
    number = f"{value:.{0 if size >= 100 else 1 if size >= 10 else 2}f}" if size >= 1 else f"{value:.3g}"
    return f"{sign}{number}{' ' + unit if unit else ''}"


def _link(run: dict, text: str | None = None) -> str:
    return f"[{text or run['name']}](../bench/results/{run['name']})"


def describe(run: dict) -> str:
    """The run's line and its file; a run transcribed by hand says so."""
    line = f"{run_record.summary(run)}. Its results file: `bench/results/{run['name']}`."
    if note := run.get("transcribed"):
        line += f"\n\n**Transcribed by hand:** {note}"
    return line


def _newest(runs: list[dict]) -> dict | None:
    full = [run for run in runs if run_record.is_full(run)]
    return full[-1] if full else None


def runs_table(runs: list[dict]) -> str:
    """The newest full runs, oldest on the left: each one's machine, then each goal's value and verdict."""
    full = [run for run in runs if run_record.is_full(run)][-SIDE_BY_SIDE:]
    if not full:
        return "No full run is recorded yet."
    lines = ["| row | goal | " + " | ".join(_link(r, f"{r['date'][:10]} {r['commit'][:7]}") for r in full) + " |",
             "| --- | --- |" + " --- |" * len(full)]
    machine = [("machine speed, `speed_ms` at start → end (lower is faster)",
                lambda m: f"{m['speed_ms']['start']:.1f} → {m['speed_ms']['end']:.1f} ms"),
               ("load average at start → end", lambda m: f"{m['load_average']['start']:.1f} → "
                                                         f"{m['load_average']['end']:.1f}"),
               ("cores", lambda m: str(m["cores"]))]
    for label, shown in machine:
        lines.append(f"| {label} | | " + " | ".join(shown(r["machine"]) for r in full) + " |")
    lines.append("| the run's length | | " + " | ".join(f"{r['seconds']:.0f} s" for r in full) + " |")
    cells: dict[str, dict[str, str]] = {}
    goals: dict[str, str] = {}
    unread = []
    for run in reversed(full):  # the newest run's rows first, in its order
        try:
            found = figures(run["results"])
        except (KeyError, TypeError, AttributeError) as exc:  # a file older than a key today's table reads
            unread.append(f"`bench/results/{run['name']}` ({type(exc).__name__}: {exc})")
            continue
        for measure, value, goal, met in found:
            if goal != "—":
                goals.setdefault(measure, goal)
                fail = " FAIL" if met is False else ""
                cells.setdefault(measure, {})[run["name"]] = brief(value, goal) + fail
    for measure, goal in goals.items():
        lines.append(f"| {measure} | {goal} | " + " | ".join(cells[measure].get(r["name"], "") for r in full) + " |")
    if unread:
        lines += ["", "Today's table cannot read " + "; ".join(reversed(unread)) + "."]
    return "\n".join(lines)


def comparison(runs: list[dict], c: Comparison) -> str:
    """One before/after section: each run's line, then every row's figure and verdict in both."""
    by_name = {run["name"]: run for run in runs}
    missing = [name for name in (c.before, c.after) if name not in by_name]
    if missing:
        raise PageError(f"COMPARISONS ({c.title}): no {', '.join(missing)} in bench/results/")
    before, after = by_name[c.before], by_name[c.after]
    lines = [f"### {c.title}", "", f"Before: {describe(before)}", "", f"After: {describe(after)}", "",
             f"| measure | goal | before ({_link(before, 'file')}) | | after ({_link(after, 'file')}) | |",
             "| --- | --- | --- | --- | --- | --- |"]
    old, new = ({measure: (shown, goal, met) for measure, shown, goal, met in rows(run["results"])}
                for run in (before, after))
    lost, blank = [], ("", "", None)
    for measure in [*new, *(m for m in old if m not in new)]:
        (was, was_goal, was_met), (now, now_goal, now_met) = old.get(measure, blank), new.get(measure, blank)
        lines.append(f"| {measure} | {now_goal or was_goal} | {was} | {verdict(was_met)} | {now} | "
                     f"{verdict(now_met)} |")
        if was_met and now_met is not True:
            lost.append(measure)
    lines += ["", "Goals met before and not after: " + ("; ".join(lost) if lost else "none") + "."]
    return "\n".join(lines)


def headlines(runs: list[dict]) -> str:
    """The README's block: each of :data:`HEADLINES` with its figure and goal, and where the rest is."""
    run = _newest(runs)
    if run is None:
        return "\n".join([BEGIN, "No full run of `python -m bench` is recorded yet: see "
                                 "[docs/performance.md](docs/performance.md).", END])
    found = {measure: (value, goal) for measure, value, goal, _ in figures(run["results"])}
    lines = [BEGIN]
    for text, measure in HEADLINES:
        if measure not in found:
            raise PageError(f"HEADLINES: the newest full run ({run['name']}) has no row {measure!r}")
        value, goal = found[measure]
        lines.append(f"- {text}: **{brief(value, goal)}**; goal {goal}")
    lines += ["", f"From `python -m bench` of commit {run['commit'][:7]} ({run['date'][:10]}, "
                  f"{run['machine']['cores']} cores, a stand-in model); every figure, its goal and how it is "
                  "measured: [docs/performance.md](docs/performance.md).", END]
    return "\n".join(lines)


def render(runs: list[dict], template: str, comparisons: list[Comparison] | None = None) -> str:
    """The page: ``template`` with each ``{{name}}`` filled from ``runs`` (oldest first); ``comparisons``:
    :data:`COMPARISONS`."""
    newest = _newest(runs)
    comparisons = COMPARISONS if comparisons is None else comparisons
    parts = {
        "newest_run": describe(newest) if newest else "No full run of `python -m bench` is recorded yet.",
        "newest_table": goals_table(newest["results"]) if newest else "",
        "stages_table": stages_table(newest["results"]) if newest else "",
        "runs_table": runs_table(runs),
        "comparisons": "\n\n".join(comparison(runs, c) for c in comparisons) or "No comparison is declared yet.",
    }
    unknown = sorted(set(PLACE.findall(template)) - set(parts))
    if unknown:
        raise PageError(f"{TEMPLATE.name}: no such place: {', '.join(unknown)}")
    return PLACE.sub(lambda m: parts[m.group(1)], template)


def with_headlines(readme: str, block: str) -> str:
    """``readme`` with the text between its markers (the markers included) replaced by ``block``."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise PageError(f"README.md has no headline block: the line {BEGIN!r} and, after it, {END!r}")
    return readme[:start] + block + readme[end + len(END):]


def write() -> list[Path]:
    """Render :data:`PAGE` and :data:`README`'s figures from the results files of bench/results/; the paths written.
    Nothing is written when either cannot be made."""
    runs = run_record.load()
    text = render(runs, TEMPLATE.read_text(encoding="utf-8"))
    readme = with_headlines(README.read_text(encoding="utf-8"), headlines(runs))
    PAGE.write_text(text, encoding="utf-8")
    README.write_text(readme, encoding="utf-8")
    return [PAGE, README]
