"""A slow one-request-at-a-time server, as the page shows it: through the Compare tab's handler, the real client
and the stand-in that closes a reply when another request arrives (llama-cpp-python's default).

While a mode waits for the server its panel says so with a spinner and its metrics line is still running (never a
final-looking error); the status line says once that the app now sends that server one request at a time; when
the run ends the metrics split the waiting from the mode's own time, and the table's Time is the mode's own.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, toy_policy
from tests.frames import collect, compare_outputs
from ui.compare.handlers import CompareTab
from ui.core.notices import ONE_AT_A_TIME_NOTE

STATUS, TABLE = 6, 7
PANELS = {"think": 0, "act": 1, "react": 2}
METRICS = {mode: i + 3 for mode, i in PANELS.items()}


def slow_toy(body):
    reply = toy_policy(body)
    reply.first_token_delay, reply.token_delay = 0.4, 0.02
    return reply


def titled(panel: list) -> list[tuple[str, str, str]]:
    return [(str((m.get("metadata") or {}).get("title", "")), str((m.get("metadata") or {}).get("status", "")),
             "".join(p.get("text", "") for p in m["content"]) if isinstance(m.get("content"), list)
             else str(m.get("content"))) for m in panel]


@pytest.fixture
def frames(monkeypatch, registry):
    monkeypatch.setenv("APP_RUN_WORKERS", "0")  # this process's gate learns: the autouse fixture forgets it after
    with StubLLMServer(slow_toy, one_at_a_time=True) as stub:
        tab = CompareTab(LLMSettings(model="stub", base_url=stub.url), registry, compare_outputs())
        yield asyncio.run(collect(tab.compare(question="What is 17 * 23 + 5?", mode="All"))), stub


def test_a_mode_waiting_for_the_server_shows_waiting_and_the_status_says_so_once(frames):
    shown, stub = frames
    assert any(r.cut for r in stub.requests), "the stand-in closed no reply"
    spinning = "⏳ Waiting for the model server"
    waiting = [(frame, mode) for frame in shown for mode, i in PANELS.items()
               if any(t.startswith(spinning) and s == "pending" for t, s, _ in titled(frame[i]))]
    assert waiting, "no panel ever showed it was waiting"
    for frame, mode in waiting:
        assert frame[METRICS[mode]].startswith("●"), frame[METRICS[mode]]  # still running, not a finished line
        assert not any("Model error" in text for _, _, text in titled(frame[PANELS[mode]]))
    assert all("Model error" not in text for frame in shown for i in PANELS.values() for _, _, text in titled(frame[i]))
    said = [frame[STATUS] for frame in shown if ONE_AT_A_TIME_NOTE in frame[STATUS]]
    assert said and all(s.count(ONE_AT_A_TIME_NOTE) == 1 for s in said)


def test_the_metrics_split_the_waiting_and_the_table_times_the_modes_own_work(frames):
    shown, _ = frames
    last = shown[-1]
    assert "Done" in last[STATUS], last[STATUS]
    waited = {m: re.search(r"([\d.]+) s, ([\d.]+) s of it waiting for the model server", last[METRICS[m]])
              for m in PANELS}
    assert any(waited.values()), [last[i] for i in METRICS.values()]
    lines = last[TABLE].splitlines()
    header = next([c.strip() for c in line.split("|")] for line in lines if line.startswith("| Mode"))
    time_column = header.index("Time")
    rows = {line.split("|")[1].strip(" *"): [c.strip() for c in line.split("|")]
            for line in lines if line.startswith("| **")}
    for mode, title in (("think", "Think-only"), ("act", "Act-only"), ("react", "ReAct")):
        if waited[mode] is None:
            continue
        wall, wait = float(waited[mode].group(1)), float(waited[mode].group(2))
        table_s = float(rows[title][time_column].replace("\xa0", " ").split()[0])
        assert wait > 0 and abs(table_s - (wall - wait)) <= 0.15, (mode, wall, wait, table_s)
