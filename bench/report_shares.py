"""Fair shares' rows of the report (bench_shares.py, issue 48): one address's flood, and a class behind one address.

The flood's row holds the worst round: the most of the flood's runs that started or waited (at most
``APP_RUNS_PER_ADDRESS``), the fewest told the one line, and the other visitor's first frame, which must be its run
starting, not a place in the queue. The class's row: every phone's vote counted, and the slowest tap to its answer.
"""

from __future__ import annotations

import math
from typing import Any


def shares_rows(out: Any, shares: dict) -> None:
    flood, poll = shares.get("flood") or {}, shares.get("class") or {}
    ok = bool(flood) and flood["started_max"] <= flood["share"] and not flood["errors"] \
        and flood["other_never_queued"] and flood["other_done"]
    out.add(f"one address's flood of {flood['submissions'] if flood else 300} runs without cookies: another "
            "network's run starts (its first frame)",
            (flood["other_first_frame_max_s"] if ok else math.inf) if flood else None,
            f"{flood['started_max']} of the flood started or waited (its address's {flood['share']}), "
            f"{flood['refused_min']} told the line, {flood['errors']} errors; the other visitor "
            f"{'never' if flood['other_never_queued'] else 'was'} queued, {'' if flood['other_done'] else 'not '}"
            f"done, first frame ≤ {flood['other_first_frame_max_s']:.2f} s (alone: "
            f"{flood['other_first_frame_alone_max_s']:.2f} s), {flood['repeats']} rounds" if flood else "—",
            "≤ APP_RUNS_PER_ADDRESS started, never queued, ≤ 5 s", lambda v: v <= 5)
    ok = bool(poll) and poll["counted"] == poll["phones"] and poll["tap_max_s"] is not None
    out.add(f"a class of {poll['phones'] if poll else 40} phones behind one address, voting at once: the slowest "
            "tap to its answer", (poll["tap_max_s"] if ok else math.inf) if poll else None,
            f"{poll['counted']} of {poll['phones']} counted; max {poll['tap_max_s']} s, p95 {poll['tap_p95_s']} s, "
            f"median {poll['tap_median_s']} s (one phone alone: {poll['tap_alone_s']} s)" if poll else "—",
            "all counted, ≤ 2 s", lambda v: v <= 2)
