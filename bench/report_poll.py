"""The class poll's rows of the report (bench_poll.py): issue 32's scale goal, one set of rows per layout.

Each layout (one room of 200 phones; five rooms of 40) holds four rows: the teacher's run with the phones against
the same run without them, a new vote reaching every other phone of its room, page loads meanwhile, and the app's
CPU per phone per second (reported, no goal). A latency or page figure is the worst of every round; the ratio and
the CPU the median round's.
"""

from __future__ import annotations

import math
from typing import Any

LAYOUTS = ("1x200", "5x40")  # what the rows show when the benchmark did not run (its rows then have no figure)


def label(name: str) -> str:
    rooms, _, phones = name.partition("x")
    return f"{phones} phones in one room" if rooms == "1" else f"{rooms} rooms × {phones} phones"


def poll_rows(out: Any, poll: dict) -> None:
    """Four rows per layout (``poll["layouts"]``, keyed "ROOMSxPHONES")."""
    layouts = poll.get("layouts") or dict.fromkeys(LAYOUTS, {})
    for name, s in layouts.items():
        _rows(out, label(name), s)


def _rows(out: Any, who: str, s: dict) -> None:
    def shown(text: Any) -> str:
        return text() if s else "—"

    ok = bool(s) and not s["run_errors"]
    out.add(f"class poll, {who} refreshing at 1 Hz: the teacher's run (All) vs without the phones (wall ratio, "
            "errors)", (s["ratio"] if ok else math.inf) if s else None,
            shown(lambda: f"{s['ratio']:.3f} ({s['ratio_spread'][0]:.3f}–{s['ratio_spread'][1]:.3f}) "
                          f"({s['wall_s']:.1f} s vs {s['wall_alone_s']:.1f} s), {s['run_errors']} errors"),
            "≤ 1.1, 0 errors", lambda v: v <= 1.1)
    ok = bool(s) and not s["errors"] and not s["unseen"] and s["vote_seen_max_s"] is not None
    out.add(f"class poll, {who}: a new vote on every other phone of its room (max)",
            (s["vote_seen_max_s"] if ok else math.inf) if s else None,
            shown(lambda: f"max {_s(s['vote_seen_max_s'])}, p95 {_s(s['vote_seen_p95_s'])}, median "
                          f"{_s(s['vote_seen_median_s'])} ({s['votes']} votes: {s['pairs']} seen, {s['unseen']} "
                          f"unseen); {s['errors']} errors in {s['refreshes']} refreshes ({s['not_modified']} 304s), "
                          f"each ≤ {s['refresh_max_ms']:.0f} ms (p95 {s['refresh_p95_ms']:.1f} ms)"),
            "≤ 2 s, 0 errors", lambda v: v <= 2)
    worst = max(s["page_max_s"], s["phone_page_max_s"], s["join_max_s"] or 0) if s else None
    out.add(f"class poll, {who}: page load meanwhile (teacher's: GET / + JS + CSS; phone's: page + first JSON)", worst,
            shown(lambda: f"teacher's max {s['page_max_s']:.2f} s, p95 {s['page_p95_s']:.2f} s ({s['page_loads']} "
                          f"loads); phone's max {s['phone_page_max_s']:.2f} s ({s['phone_page_loads']} loads); the "
                          f"class joining at once: max {_s(s['join_max_s'])}"),
            "≤ 2 s", lambda v: v <= 2)
    out.add(f"class poll, {who}: the app's CPU per phone per second (app + run workers, beyond idle)",
            s.get("cpu_ms_per_phone_s"),
            shown(lambda: f"{s['cpu_ms_per_phone_s']:.3f} ms while votes come in ({s['vote_rate']:g} a second), "
                          f"{s['quiet_cpu_ms_per_phone_s']:.3f} ms once they stop (304s); idle "
                          f"{s['idle_cpu_ms_per_s']:.1f} ms/s; the phones' own process {s['client_cpu_s']:.1f} s "
                          "CPU a round"),
            "—", None)


def _s(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"
