"""Class poll benchmark (issue 32's scale goal): a class's phones on the poll while the teacher's run streams.

For each layout (``--layouts 1x200 5x40``: rooms × phones), ``--repeats`` rounds: the run alone; the app idle;
polls started (``APP_POLL_ROOMS`` raised to the rooms' count); phones join, refresh and vote while the run streams
again; phones alone. Measured: the run's wall against the first, the app's CPU per phone per second, a vote's
delay to the room's other phones. Usage: ``python bench/bench_poll.py [--layouts 1x200 5x40] [--repeats 3]
[--json]``; goals: bench/report_poll.py.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import statistics
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_app import BROWSER, Stack, get_text
from bench.crowd import crowd, measured_crowd, question
from bench.loadkit import MODES, get, pct
from bench.phones import phones_main


def gradio_event(url: str, elem_id: str, trigger: str) -> dict:
    """The ``fn_index`` and trigger of the page's ``trigger`` event on ``#elem_id``, or (a timer has no id) whose
    first output is ``#elem_id`` (from ``/config``)."""
    with urllib.request.urlopen(url.rstrip("/") + "/config", timeout=30) as response:
        config = json.loads(response.read())
    ids = {c["id"] for c in config["components"] if (c.get("props") or {}).get("elem_id") == elem_id}
    for dep in config["dependencies"]:
        for target, kind in dep["targets"]:
            if kind == trigger and (target in ids or dep["outputs"][:1] and dep["outputs"][0] in ids):
                return {"fn_index": dep["id"], "trigger_id": target}
    raise LookupError(f"no {trigger} event on #{elem_id}")


def post_event(url: str, event: dict, data: list, session: str) -> list:
    body = json.dumps({**event, "data": data, "event_data": None, "session_hash": session}).encode()
    request = urllib.request.Request(url.rstrip("/") + "/gradio_api/run/predict", body,
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["data"]


class Teacher:
    """One teacher's page (a Gradio session, whose lesson holds its room): **Start a class poll** for the question and
    the modes on screen, the split hidden."""

    def __init__(self, url: str, start: dict) -> None:
        self.url, self.start_event, self.session, self.handle = url, start, uuid.uuid4().hex, ""

    def start(self, text: str) -> str:
        """A new room (the page's earlier one ends): its code, read off the join box."""
        join = post_event(self.url, self.start_event, [text, list(MODES), False], self.session)[1]
        found = re.search(r'id="poll-code">([^<]+)<', join) if isinstance(join, str) else None
        if found is None:
            raise RuntimeError(f"Start a class poll was refused: {str(join)[:200]!r}")
        self.handle = found.group(1)
        return self.handle


def page_loads(url: str, codes: list[str], stop: threading.Event, teacher: list[float], phone: list[float],
               every: float = 0.25) -> None:
    """The teacher's page (HTML, JS, CSS) and a late phone's (page, first JSON), in turn, each from a new
    connection; seconds per full load (``inf`` when one failed)."""
    html = get_text(url, "/")
    assets = [a.lstrip(".") for a in re.findall(r'(?:src|href)="(\./assets/[^"]+\.(?:js|css))"', html)]
    k = 0
    while not stop.is_set():
        start = time.perf_counter()
        ok = get(url, "/", headers=BROWSER)[0] == 200 and all(get(url, a, headers=BROWSER)[0] == 200 for a in assets)
        teacher.append(time.perf_counter() - start if ok else float("inf"))
        code, k = codes[k % len(codes)], k + 1
        start = time.perf_counter()
        ok = get(url, f"/?room={code}")[0] == 200 and get(url, f"/poll/{code}")[0] == 200
        phone.append(time.perf_counter() - start if ok else float("inf"))
        stop.wait(every)


class Phones:
    """The phones' process (bench/phones.py), driven through its pipe."""

    def __init__(self, url: str) -> None:
        ctx = mp.get_context("spawn")
        self.conn, end = ctx.Pipe()
        self.proc = ctx.Process(target=phones_main, args=(url, end), daemon=True)
        self.proc.start()

    def ask(self, command: object, timeout: float = 120) -> object:
        self.conn.send(command)
        if not self.conn.poll(timeout):
            raise TimeoutError(f"the phones did not answer {command!r} in {timeout:.0f} s")
        answer = self.conn.recv()
        if isinstance(answer, dict) and "failed" in answer:
            raise RuntimeError(f"the phones failed: {answer['failed']}")
        return answer

    def close(self) -> None:
        try:
            self.conn.send("quit")
        except OSError:
            pass
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.terminate()


def cpu_ms(stack: Stack, seconds: float) -> float:
    """The app's CPU (app + run workers) over ``seconds`` of wall, in ms."""
    before = stack.cpu()
    time.sleep(seconds)
    after = stack.cpu()
    return (after["app"] - before["app"] + after["workers"] - before["workers"]) * 1000


def one_round(stack: Stack, phones: Phones, teachers: list[Teacher], tick: dict, args: argparse.Namespace,
              n: int, base: int) -> dict:
    """Steps 1–7 of the module docstring, once."""
    alone = measured_crowd(stack, 1, base=base)
    time.sleep(1.0)
    idle_ms = cpu_ms(stack, args.window_s)
    codes = [t.start(f"{question(base + k)} (class {k + 1})") for k, t in enumerate(teachers)]
    plan = {"codes": codes, "phones": n, "teachers": [(t.handle, t.session) for t in teachers], "tick": tick,
            "vote_rate": args.vote_rate, "choices": [*MODES, "none"], "join_spread_s": 1.0}
    assert phones.ask(("go", plan)) == "joined"
    time.sleep(1.0)
    stop, teacher_loads, phone_loads = threading.Event(), [], []
    loader = threading.Thread(target=page_loads, args=(stack.url, codes, stop, teacher_loads, phone_loads),
                              daemon=True)
    phones.ask("vote")
    loader.start()
    loaded = measured_crowd(stack, 1, base=base + 1)
    stop.set()
    loader.join(30)
    voting_ms = cpu_ms(stack, args.window_s)
    phones.ask("hush")
    time.sleep(2.5)  # the last votes reach every phone
    quiet_ms = cpu_ms(stack, args.window_s)
    seen = phones.ask("stop")
    per = len(codes) * n * args.window_s
    return {**seen, "wall_alone_s": alone["wall_s"], "wall_s": loaded["wall_s"],
            "ratio": round(loaded["wall_s"] / alone["wall_s"], 3), "run_errors": alone["errors"] + loaded["errors"],
            "run_error_samples": alone["error_samples"] + loaded["error_samples"],
            "idle_cpu_ms_per_s": round(idle_ms / args.window_s, 2),
            "cpu_ms_per_phone_s": round((voting_ms - idle_ms) / per, 4),
            "quiet_cpu_ms_per_phone_s": round((quiet_ms - idle_ms) / per, 4),
            "teacher_page_loads": teacher_loads, "phone_page_loads": phone_loads}


def layout(args: argparse.Namespace, rooms: int, n: int) -> dict:
    """One layout's rounds, folded: the ratio, CPU and counts the median round's (spread beside the ratio);
    latencies and page loads the worst over every round."""
    # every phone of the bench comes from one address (loopback), as a lecture hall behind one network would
    env = {"APP_POLL_ROOMS": str(max(3, rooms)), "APP_POLL_PHONES": str(max(300, n)),
           "APP_POLL_VOTERS_PER_ADDRESS": str(max(60, n * rooms))}
    with Stack(args.latency, args.token_delay, stub=args.stub, words=args.words, env=env) as stack:
        crowd(stack.url, [question(9000 + k) for k in range(2)])  # warm-up: imports, first connections
        start, tick = gradio_event(stack.url, "poll-start", "click"), gradio_event(stack.url, "poll-board", "tick")
        teachers = [Teacher(stack.url, start) for _ in range(rooms)]
        phones = Phones(stack.url)
        try:
            rounds = [one_round(stack, phones, teachers, tick, args, n, 100_000 * r) for r in range(args.repeats)]
        finally:
            phones.close()
    return fold(rounds, rooms, n, args)


def fold(rounds: list[dict], rooms: int, n: int, args: argparse.Namespace) -> dict:
    mid = sorted(rounds, key=lambda r: r["ratio"])[(len(rounds) - 1) // 2]
    teacher = [s for r in rounds for s in r["teacher_page_loads"]]
    phone = [s for r in rounds for s in r["phone_page_loads"]]

    def worst(key: str) -> float | None:
        values = [r[key] for r in rounds if r.get(key) is not None]
        return round(max(values), 3) if values else None

    def median(key: str) -> float:
        return round(statistics.median(r[key] for r in rounds), 4)

    return {"rooms": rooms, "phones": n, "repeats": len(rounds), "vote_rate": args.vote_rate,
            "words": args.words, "latency_s": args.latency,
            "ratio": median("ratio"), "ratio_spread": [min(r["ratio"] for r in rounds),
                                                        max(r["ratio"] for r in rounds)],
            "wall_alone_s": mid["wall_alone_s"], "wall_s": mid["wall_s"],
            "run_errors": sum(r["run_errors"] for r in rounds),
            "votes": sum(r["votes"] for r in rounds), "pairs": sum(r["pairs"] for r in rounds),
            "unseen": sum(r["unseen"] for r in rounds), "vote_seen_max_s": worst("vote_seen_max_s"),
            "vote_seen_p95_s": worst("vote_seen_p95_s"), "vote_seen_median_s": median("vote_seen_median_s")
            if all(r["vote_seen_median_s"] is not None for r in rounds) else None,
            "refreshes": sum(r["refreshes"] for r in rounds), "fresh": sum(r["fresh"] for r in rounds),
            "not_modified": sum(r["not_modified"] for r in rounds), "refresh_p95_ms": worst("refresh_p95_ms"),
            "refresh_max_ms": worst("refresh_max_ms"), "join_max_s": worst("join_max_s"),
            "teacher_ticks": sum(r["teacher_ticks"] for r in rounds),
            "errors": sum(r["errors"] for r in rounds) + sum(r["run_errors"] for r in rounds),
            "error_samples": [e for r in rounds for e in r["error_samples"] + r["run_error_samples"]][:3],
            "page_max_s": round(max(teacher, default=float("nan")), 3), "page_p95_s": round(pct(teacher, 0.95), 3),
            "page_loads": len(teacher), "phone_page_max_s": round(max(phone, default=float("nan")), 3),
            "phone_page_p95_s": round(pct(phone, 0.95), 3), "phone_page_loads": len(phone),
            "idle_cpu_ms_per_s": median("idle_cpu_ms_per_s"), "cpu_ms_per_phone_s": median("cpu_ms_per_phone_s"),
            "quiet_cpu_ms_per_phone_s": median("quiet_cpu_ms_per_phone_s"),
            "client_cpu_s": median("client_cpu_s")}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", nargs="+", choices=["phones"], default=["phones"])
    parser.add_argument("--layouts", nargs="+", default=["1x200", "5x40"], metavar="ROOMSxPHONES",
                        help="rooms × phones in each, one layout after the other (each on a fresh app)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds per layout (run alone, then with phones)")
    parser.add_argument("--vote-rate", type=float, default=4.0, help="new votes a second, over all the rooms")
    parser.add_argument("--window-s", type=float, default=10.0, help="seconds of each CPU window (idle, votes, quiet)")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds before each reply's first token")
    parser.add_argument("--token-delay", type=float, default=0.01, help="seconds between 4-character chunks (≈ tokens)")
    parser.add_argument("--words", type=int, default=300, help="every thought this many words longer (long replies)")
    parser.add_argument("--stub", choices=["async", "thread"], default="async", help="the stand-in model")
    parser.add_argument("--json", action="store_true", help="print one JSON object (for bench/report.py)")
    args = parser.parse_args(argv)
    result: dict = {"cores": os.cpu_count(), "loadavg": os.getloadavg()[0], "layouts": {}}
    for name in args.layouts:
        rooms, _, n = name.partition("x")
        result["layouts"][name] = layout(args, int(rooms), int(n))
        if not args.json:
            print(f"== {name} ==\n{json.dumps(result['layouts'][name], indent=1)}", flush=True)
    if args.json:
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
