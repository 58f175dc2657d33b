"""Replay benchmark: does one huge recording stall everyone else?

The app runs in this process; a second process uploads a recording of many tiny token events (by default
320,000, about 19 MB, under the 20 MB cap), starts ``/replay`` on it, and meanwhile asks the app a trivial
question (``GET /gradio_api/queue/status``) every 20 ms. Per speed it prints ``stall``, the max and p95 latency
of that request (goal: max < 0.25 s), and ``replay``, its time ("instant") or frames sent in the window (1×).

Usage: ``python bench/bench_replay.py [--events 320000] [--seconds 15] [--speeds instant,1x]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SPEED_LABELS = {"instant": "instant", "1x": "1× (original pace)", "4x": "4×"}


def make_recording(path: Path, events: int, step_s: float = 0.0005) -> int:
    """An export with ``events`` one-character token deltas spread over the three modes, then answers."""
    modes = ("think", "act", "react")
    per = {m: [] for m in modes}
    for i in range(events):
        per[modes[i % 3]].append(f'{{"t":{i * step_s:.4f},"kind":"token","text":"a","channel":"thought"}}')
    end = events * step_s
    traces = {}
    for m in modes:
        tail = [f'{{"t":{end:.4f},"kind":"usage","prompt_tokens":1,"completion_tokens":1,'
                '"elapsed_s":0.1,"estimated":false}',
                f'{{"t":{end:.4f},"kind":"answer","text":"42","forced":false}}']
        events_json = ",\n".join(per[m] + tail)
        traces[m] = f'{{"mode":"{m}","question":"q","elapsed_s":{end:.4f},"events":[{events_json}]}}'
    body = ",".join(f'"{m}":{t}' for m, t in traces.items())
    text = f'{{"format":"think-act-react/run@1","question":"q","selection":"All","settings":{{}},"traces":{{{body}}}}}'
    path.write_text(text, encoding="utf-8")
    return len(text.encode())


def probe(url: str, path: str, speed: str, seconds: float, out: mp.Queue) -> None:
    """The other process: start the replay, poll a trivial endpoint, report latencies. At 1× the replay is cut
    after ``seconds`` (closing the connection, as a visitor who leaves)."""
    import httpx

    with httpx.Client(timeout=120) as client:
        uploaded = client.post(f"{url}/gradio_api/upload", files={"files": ("huge.json", open(path, "rb"))}).json()
        file_data = {"path": uploaded[0], "meta": {"_type": "gradio.FileData"}}
        latencies: list[float] = []
        stop = threading.Event()

        def poll() -> None:
            with httpx.Client(timeout=120) as c:
                while not stop.is_set():
                    t0 = time.perf_counter()
                    c.get(f"{url}/gradio_api/queue/status")
                    latencies.append(time.perf_counter() - t0)
                    time.sleep(0.02)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        time.sleep(1.0)  # idle baseline
        idle = len(latencies)
        started = time.perf_counter()
        event_id = client.post(f"{url}/gradio_api/call/replay", json={"data": [file_data, speed]}).json()["event_id"]
        frames, finished = 0, False
        with client.stream("GET", f"{url}/gradio_api/call/replay/{event_id}") as stream:
            for line in stream.iter_lines():
                if line.startswith("event: generating"):
                    frames += 1
                elif line.startswith(("event: complete", "event: error")):
                    finished = True
                    break
                if time.perf_counter() - started > seconds:
                    break  # leave, as a visitor closing the tab
        took = time.perf_counter() - started
        time.sleep(0.5)
        stop.set()
        poller.join()
        out.put({"idle": latencies[:idle], "busy": latencies[idle:], "took": took, "frames": frames,
                 "finished": finished})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=320_000)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--speeds", default="instant,1x")
    args = parser.parse_args()

    from bench.loadkit import launched_app  # the app's modules load once the arguments are read (--help is quick)

    path = Path(tempfile.mkdtemp()) / "huge.json"
    size = make_recording(path, args.events)
    print(f"recording: {args.events:,} token events, {size / 1e6:.1f} MB")
    demo = launched_app()
    url = demo.local_url.rstrip("/")
    ctx = mp.get_context("spawn")
    try:
        for speed in args.speeds.split(","):
            out: mp.Queue = ctx.Queue()
            proc = ctx.Process(target=probe, args=(url, str(path), SPEED_LABELS[speed], args.seconds, out))
            proc.start()
            result = out.get(timeout=3600)
            proc.join()
            busy = sorted(result["busy"]) or [0.0]
            idle = statistics.median(result["idle"] or [0.0])
            p95 = busy[int(0.95 * (len(busy) - 1))]
            state = "finished" if result["finished"] else "cut (visitor left)"
            print(f"{speed:>8}: trivial request while replaying: max {max(busy) * 1000:.0f} ms, "
                  f"p95 {p95 * 1000:.0f} ms (idle median {idle * 1000:.0f} ms, {len(busy)} probes) · "
                  f"replay {state} after {result['took']:.1f} s, {result['frames']} frames")
    finally:
        demo.close()
        print(json.dumps({"events": args.events, "bytes": size}))


if __name__ == "__main__":
    main()
