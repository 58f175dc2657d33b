"""Replay (ui/recordings/playback.py, reading with ui/recordings/reader.py) costs a bounded amount whatever the file
holds: a condensed replay ends like the recording, a huge one never stalls the event loop and at 1× costs a fraction
of a core, every pause is capped.

Measured numbers (how long other visitors wait) come from ``bench/bench_replay.py``; the bounds
here are loose on purpose (they catch a stall of seconds, not a few milliseconds).
"""

from __future__ import annotations

import asyncio
import json
import time

from agents.events import Action, FinalAnswer, Observation, Thought, TokenDelta, Usage
from agents.trace import Trace
from bench.bench_replay import make_recording
from tests.frames import collect_now, content
from ui.core.modes import PANEL_MODES
from ui.recordings.export import export_dict, to_json
from ui.recordings.playback import play, window_of
from ui.recordings.reader import REPLAY_MODES, open_recording, read_recording


def frame_view(frame) -> tuple:
    """What the page shows, comparable across two replays."""
    def panel(messages):  # a live panel's messages come in the browser's form already
        return [m if isinstance(m, dict) else (m.content, dict(m.metadata)) for m in messages]
    return tuple(panel(p) for p in frame.panels), frame.metrics, frame.table


def busy_trace(mode: str) -> Trace:
    trace = Trace(mode, "What is 17 * 23 + 5?")
    t = 0.0
    for call in range(2):
        for piece in "Thought: I should use the calculator because it is exact.".split(" "):
            t += 0.003
            trace.add(TokenDelta(piece + " ", "reasoning" if call and len(piece) < 3 else "thought"), t)
        trace.add(Usage(10, 20, 0.5), t)
        trace.add(Thought("I should use the calculator"), t)
        trace.add(Action("calculate", "17*23+5"), t + 0.01)
        trace.add(Observation("calculate", "396", elapsed_s=0.01), t + 0.02)
        t += 0.03
    trace.add(FinalAnswer("396"), t)
    return trace


def test_replay_takes_every_panel_mode_and_the_table_only_ones():
    assert REPLAY_MODES == (*PANEL_MODES, "cot_sc", "react_worked", "react_placebo")


def test_condensed_replay_ends_exactly_like_the_recording(tmp_path):
    traces = {m: busy_trace(m) for m in ("think", "act", "react")}
    path = tmp_path / "run.json"
    path.write_text(to_json(export_dict("What is 17 * 23 + 5?", "All", traces, {"model": "m"})), encoding="utf-8")
    plain = collect_now(play(read_recording(str(path)), "instant"))[-1]

    async def condensed(speed):
        rec = await open_recording(str(path), window_of(speed))
        frames = [f async for f in play(rec, speed)]
        assert not rec.schedule_path.exists()  # the schedule file is gone once played
        return frames[-1]

    for speed in ("instant", 4.0):
        final = asyncio.run(condensed(speed))
        assert frame_view(final) == frame_view(plain)
        assert "396" in content(final.panels[2][-1]) and final.metrics[2].startswith("2 steps")


def test_a_huge_recording_never_stalls_the_event_loop(tmp_path):
    path = tmp_path / "huge.json"
    make_recording(path, 100_000)  # ~6 MB; before the fix, ~3 s with the loop blocked

    async def run() -> tuple[float, list]:
        gaps: list[float] = []
        done = asyncio.Event()

        async def ticker():
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        tick = asyncio.create_task(ticker())
        rec = await open_recording(str(path), window_of("instant"))
        frames = [f async for f in play(rec, "instant")]
        done.set()
        await tick
        return max(gaps), frames

    worst, frames = asyncio.run(run())
    assert worst < 1.0, f"the event loop was blocked for {worst:.2f} s"
    assert len(frames) == 2 and all("42" in content(p[-1]) for p in frames[-1].panels[:2])


def test_a_huge_recording_at_1x_costs_a_fraction_of_a_core(tmp_path):
    """At the original pace a 100,000-token recording lasts 50 s; three seconds of its replay cost a small
    share of one core, and the event loop is never blocked."""
    path = tmp_path / "huge.json"
    make_recording(path, 100_000)

    async def run() -> tuple[float, float, int]:
        rec = await open_recording(str(path), window_of(1.0))
        frames, worst, last = 0, 0.0, time.perf_counter()
        cpu, wall = time.process_time(), time.perf_counter()
        player = play(rec, 1.0)
        async for _ in player:
            now = time.perf_counter()
            worst, last, frames = max(worst, now - last), now, frames + 1
            if now - wall > 3.0:
                break
        await player.aclose()
        return (time.process_time() - cpu) / (time.perf_counter() - wall), worst, frames

    share, worst, frames = asyncio.run(run())
    assert frames >= 10, "the replay showed next to nothing in 3 s"
    assert share < 0.5, f"replaying at 1× took {share:.0%} of a core"
    assert worst < 1.5, f"{worst:.2f} s between two frames"


def test_the_panel_beside_opens_from_a_byte_scan(tmp_path):
    from ui.recordings.playback import beside_in_file

    traces = {m: busy_trace(m) for m in ("react", "react@1")}
    data = export_dict("q", "ReAct", traces, {"model": "m"})
    path, old, plain = tmp_path / "fork.json", tmp_path / "old.json", tmp_path / "plain.json"
    path.write_text(to_json({**data, "fork": {"panel": "beside", "trace": "react@1"}}), encoding="utf-8")
    old.write_text(to_json({**data, "fork": {"panel": "fourth", "trace": "react@1"}}), encoding="utf-8")  # older
    plain.write_text(to_json(export_dict("react@1?", "ReAct", {"react": busy_trace("react")}, {})), encoding="utf-8")
    assert beside_in_file(str(path)) == beside_in_file(str(old)) == "react@1"
    assert beside_in_file(str(plain)) is None and beside_in_file(str(tmp_path / "missing.json")) is None


def test_every_pause_is_capped_also_before_the_first_event():
    trace = Trace("react", "q")
    trace.add(Thought("late start"), 100.0)
    trace.add(FinalAnswer("much later"), 5000.0)
    rec = read_recording(json.dumps({"traces": {"react": trace.to_dict()}}))
    started = time.perf_counter()
    frames = collect_now(play(rec, 1.0, max_gap=0.2))
    took = time.perf_counter() - started
    assert 0.4 <= took < 2.0  # two pauses of 0.2 s, not 100 s and 4,900 s
    assert "much later" in content(frames[-1].panels[2][-1])
    assert frames[-1].metrics[2].endswith("5000.0 s")  # the recorded times are kept
