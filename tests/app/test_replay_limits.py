"""Replay in a launched app ends when the visitor leaves and keeps to its caps over REST: a day-long gap replays in
seconds at 1×, and closing the connection ends the replay and frees its slot (replay itself, no server:
tests/ui/recordings/test_playback.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

import app
from agents.events import FinalAnswer, Thought, TokenDelta
from agents.trace import Trace
from ui.core.stream import live_count
from ui.recordings.reader import REPLAY_DIR


@pytest.fixture(scope="module")
def url(kit):
    from agents.llm.settings import LLMSettings

    demo = app.build_demo(settings=LLMSettings(model="stub", base_url="http://127.0.0.1:9/v1"), registry=kit.registry())
    with kit.launched(demo) as local_url:
        yield local_url.rstrip("/")


def upload(url: str, path: Path) -> dict:
    with path.open("rb") as f:
        uploaded = httpx.post(f"{url}/gradio_api/upload", files={"files": (path.name, f)}, timeout=60).json()
    return {"path": uploaded[0], "meta": {"_type": "gradio.FileData"}}


def day_long(path: Path, events: int = 2) -> Path:
    trace = Trace("react", "A long day?")
    trace.add(TokenDelta("Thought: waiting for tomorrow"), 0.0)
    for i in range(1, events - 1):
        trace.add(Thought(f"still waiting {i}"), i * 3600.0)
    trace.add(FinalAnswer("tomorrow"), 86_400.0)
    path.write_text(json.dumps({"question": "A long day?", "selection": "ReAct", "traces": {"react": trace.to_dict()}}),
                    encoding="utf-8")
    return path


def test_a_day_long_gap_replays_at_1x_in_seconds(url, tmp_path):
    file_data = upload(url, day_long(tmp_path / "day.json"))
    started = time.perf_counter()
    posted = httpx.post(f"{url}/gradio_api/call/replay", json={"data": [file_data, "1× (original pace)"]}).json()
    last = None
    with httpx.stream("GET", f"{url}/gradio_api/call/replay/{posted['event_id']}", timeout=60) as stream:
        for line in stream.iter_lines():
            if line.startswith("data: "):
                last = line
    took = time.perf_counter() - started
    assert took < 10, f"a one-day gap took {took:.1f} s at 1×"  # capped at 5 s
    assert "tomorrow" in last and "Replay finished" in last


def test_closing_the_connection_ends_the_replay_and_frees_its_slot(url, tmp_path):
    file_data = upload(url, day_long(tmp_path / "day.json", events=25))  # ~2 minutes at 1× even with gaps capped
    before = set(REPLAY_DIR.glob("*.jsonl"))
    posted = httpx.post(f"{url}/gradio_api/call/replay", json={"data": [file_data, "1× (original pace)"]}).json()
    with httpx.stream("GET", f"{url}/gradio_api/call/replay/{posted['event_id']}", timeout=60) as stream:
        for n, _line in enumerate(stream.iter_lines()):
            if n >= 4:
                break  # the visitor closes the tab
    assert live_count() >= 1  # still replaying when the connection closed
    deadline = time.monotonic() + 10
    while (live_count() or set(REPLAY_DIR.glob("*.jsonl")) - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_count() == 0  # the generator ended (its finally ran): the slot is free
    assert not set(REPLAY_DIR.glob("*.jsonl")) - before
