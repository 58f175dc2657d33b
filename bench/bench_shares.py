"""Fair shares benchmark (issue 48): one address's flood does not take the room, and a class behind one address fits.

The app keeps its own bounds (``APP_RUNS_PER_ADDRESS`` 40, ``APP_POLL_VOTERS_PER_ADDRESS`` 60). ``flood``: a
cookieless script submits ``--flood`` runs at once beside another visitor's one: how many started, how many got
the one line, when the other's began. ``class``: ``--phones`` phones behind one address join and vote at once:
votes counted, the slowest answer. Usage: ``python bench/bench_shares.py [--scenario flood class] [--flood 300]
[--phones 40] [--json]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_app import Stack
from bench.crowd import question
from bench.loadkit import Visit, pct, visit
from bench.report import speed_ms

OTHER = "127.0.0.2"  # another visitor's network (any 127.x address reaches the app)
RUNNING, REFUSED = "● Running", "runs are already going from your network"


def flood(stack: Stack, args: argparse.Namespace) -> dict:
    """The flood scenario of the module's docstring; figures are each round's, and their worst."""
    rounds = []
    visit(stack.url, question(9000))  # warm-up: imports, first connections
    for r in range(args.repeats):
        alone = visit(stack.url, question(9100 + r), source=OTHER)
        rounds.append({"alone": _seen(alone), **_flooded(stack.url, args, base=10_000 * (r + 1))})
    firsts = [x["other"]["first_frame_s"] for x in rounds]
    return {"submissions": args.flood, "share": args.share, "repeats": len(rounds), "rounds": rounds,
            "started_max": max(x["started"] for x in rounds), "refused_min": min(x["refused"] for x in rounds),
            "errors": sum(x["errors"] for x in rounds),
            "other_never_queued": all(x["other"]["running_first"] for x in rounds),
            "other_first_frame_max_s": max(firsts),
            "other_first_frame_alone_max_s": max(x["alone"]["first_frame_s"] for x in rounds),
            "other_done": all(x["other"]["done"] for x in rounds)}


def _flooded(url: str, args: argparse.Namespace, base: int) -> dict:
    """``--flood`` cookieless runs from 127.0.0.1 at once, and meanwhile (once the flood's share is in) one from
    :data:`OTHER`."""
    n = args.flood
    visits: list[Visit | None] = [None] * n

    def one(k: int) -> None:
        visits[k] = visit(url, question(base + k))

    threads = [threading.Thread(target=one, args=(k,), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while sum(v is not None for v in visits) < n - args.share and time.monotonic() < deadline:
        time.sleep(0.05)  # until the refused have their line: the flood's share is in
    other = visit(url, question(base + n), source=OTHER)
    for t in threads:
        t.join(300)
    done = [v for v in visits if v is not None]
    refused = [v for v in done if any(REFUSED in s for s in v.statuses) and not any(v.answers)]
    started = [v for v in done if any(s.startswith(RUNNING) or "in the queue" in s for s in v.statuses)]
    return {"started": len(started), "refused": len(refused), "errors": sum(1 for v in done if v.error),
            "refused_one_line": all(len(v.statuses) == 1 and "\n" not in v.statuses[0] for v in refused),
            "other": _seen(other)}


def _seen(v: Visit) -> dict:
    first_text = min(v.first_text.values(), default=None)
    return {"first_frame_s": round((v.first_update or v.end or v.start) - v.start, 3),
            "first_status": v.statuses[0] if v.statuses else v.error,
            "running_first": bool(v.statuses) and v.statuses[0].startswith(RUNNING),
            "first_text_s": round(first_text - v.start, 3) if first_text else None,
            "wall_s": round((v.end or v.start) - v.start, 3), "done": any(v.answers) and not v.error}


def class_poll(stack: Stack, args: argparse.Namespace) -> dict:
    """The class scenario of the module's docstring."""
    lone = _Phone(stack.url, stack.ask_app("poll-room"))  # one phone alone first: the same tap, unhurried
    lone.open()
    lone.tap(threading.Barrier(1), "act")
    code = stack.ask_app("poll-room")
    phones = [_Phone(stack.url, code) for _ in range(args.phones)]
    for phone in phones:
        phone.open()
    barrier = threading.Barrier(len(phones) + 1)
    threads = [threading.Thread(target=p.tap, args=(barrier, ["think", "act", "react", "none"][k % 4]),
                                daemon=True) for k, p in enumerate(phones)]
    for t in threads:
        t.start()
    barrier.wait()
    for t in threads:
        t.join(60)
    total = _total(stack.url, code)
    taps = [p.took_s for p in phones if p.took_s is not None]
    return {"phones": args.phones, "counted": total, "statuses": sorted({str(p.status) for p in phones}),
            "tap_alone_s": round(lone.took_s or 0, 3),
            "tap_max_s": round(max(taps), 3) if taps else None, "tap_p95_s": round(pct(taps, 0.95), 3) if taps
            else None, "tap_median_s": round(statistics.median(taps), 3) if taps else None}


class _Phone:
    """One phone's browser: its own connection and the cookie the phone page gave it."""

    def __init__(self, url: str, code: str) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        self.code, self.cookie, self.status, self.took_s = code, "", 0, None

    def _ask(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        headers = {"cookie": self.cookie} if self.cookie else {}
        if body is not None:
            headers["content-type"] = "application/json"
        self.conn.request(method, path, body, headers)
        response = self.conn.getresponse()
        data = response.read()
        if not self.cookie and (cookie := response.getheader("set-cookie")):
            self.cookie = cookie.split(";")[0]
        return response.status, data

    def open(self) -> None:
        self._ask("GET", f"/?room={self.code}")

    def tap(self, barrier: threading.Barrier, choice: str) -> None:
        barrier.wait()
        started = time.perf_counter()
        try:
            status, data = self._ask("POST", f"/poll/{self.code}/join", b"")
            if status == 200:
                voter = json.loads(data)["voter"]
                status, _ = self._ask("POST", f"/poll/{self.code}/vote",
                                      json.dumps({"voter": voter, "choice": choice}).encode())
            self.status = status
        except (OSError, ValueError, KeyError) as exc:
            self.status = f"{type(exc).__name__}"
        self.took_s = time.perf_counter() - started
        self.conn.close()


def _total(url: str, code: str) -> int:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request("GET", f"/poll/{code}")
        return int(json.loads(conn.getresponse().read())["rounds"][0]["total"])
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", nargs="+", choices=["flood", "class"], default=["flood", "class"])
    parser.add_argument("--flood", type=int, default=300, help="runs one cookieless client submits at once")
    parser.add_argument("--phones", type=int, default=40, help="phones behind one address, voting at once")
    parser.add_argument("--share", type=int, default=40, help="APP_RUNS_PER_ADDRESS (its default: 40)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the flood (the other visitor alone, then "
                        "beside it)")
    parser.add_argument("--latency", type=float, default=4.0, help="seconds before each reply's first token: long "
                        "enough that none of the flood's runs ends before all of it has arrived")
    parser.add_argument("--token-delay", type=float, default=0.01, help="seconds between 4-character chunks")
    parser.add_argument("--json", action="store_true", help="print one JSON object (for bench/report.py)")
    args = parser.parse_args()
    out: dict = {"speed_ms_before": speed_ms()}
    with Stack(args.latency, args.token_delay, env={"APP_RUNS_PER_ADDRESS": str(args.share)}) as stack:
        if "flood" in args.scenario:
            out["flood"] = flood(stack, args)
        if "class" in args.scenario:
            out["class"] = class_poll(stack, args)
    out["speed_ms_after"] = speed_ms()
    if args.json:
        print(json.dumps(out))
    else:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
