"""An export made before the step-aligned map existed (``tests/data/before_map``) gets the map and the grounding
marks when it is replayed, shared or exported again: both are computed from the traces."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import tests.app.map_kit  # noqa: F401 - declares the scripted run's tool (its verb: "looked it up")
from tests.app.map_kit import claims_shown
from tests.frames import collect, compare_outputs
from ui.compare.handlers import CompareTab
from ui.core.lesson import Shown, Turn
from ui.recordings.export import export_dict, export_markdown
from ui.recordings.reader import read_recording
from ui.share.handlers import ShareHandlers
from ui.share.store import ShareStore

OLD = Path(__file__).resolve().parents[2] / "data" / "before_map" / "run-three-modes.json"
DIVERGENCE = "Here Act-only looked it up (Gustave Eiffel), ReAct computed (330 * 3.28084)."
MARKS = {"990": "unbacked", "Alexandre Eiffel": "unbacked", "1900": "unbacked", "World&#x27;s Fair": "unbacked",
         "1,083": "backed", "Gustave Eiffel": "backed", "Paris": "backed", "1082.6772": "backed", "1889": "backed"}


def test_the_old_export_has_no_map_of_its_own():
    data = json.loads(OLD.read_text(encoding="utf-8"))
    assert "grounding" not in data and "claims" not in data["comparison"]["rows"][0]


def test_replaying_it_shows_the_map_with_its_divergence_and_marks():
    tab = CompareTab(None, None, compare_outputs())  # type: ignore[arg-type]  # replay needs no backend
    frames = asyncio.run(collect(tab.play(str(OLD), "instant")))
    html = frames[-1][-1]  # /replay's last output
    assert DIVERGENCE in html and claims_shown(html) == MARKS
    assert "Claims |" in frames[-1][7] and "4\u00a0unbacked" in frames[-1][7]  # the table's column
    assert "· claims: 4 unbacked · ✗ F1 0.00" in frames[-1][3]  # Think-only's metrics line: claims, then verdict


def test_a_share_link_of_it_opens_with_the_map(tmp_path):
    handlers = ShareHandlers(compare_outputs(), ShareStore(tmp_path / "share", 10_000_000, 86400))
    page = SimpleNamespace(headers={}, client=None, session_hash="map-page")
    handlers.lessons.of(page).show(Shown("replay", str(OLD), (Turn(read_recording(OLD).question),)))  # on screen
    link = asyncio.run(handlers.share(page))
    run_id = link.split("?run=")[1].split(")")[0].split("]")[0]
    values = asyncio.run(handlers.open(SimpleNamespace(query_params={"run": run_id})))
    html = values[len(compare_outputs().all()) - 1]
    assert DIVERGENCE in html and claims_shown(html) == MARKS


def test_exported_again_it_carries_each_claim_with_its_source_row():
    recording = read_recording(OLD)
    data = export_dict(recording.question, recording.selection, recording.traces, recording.settings,
                       expected=recording.expected)
    react = data["grounding"]["react"]
    assert react["counts"] == {"backed": 4, "given": 0, "unbacked": 0}
    computed = next(c for c in react["claims"] if c["text"] == "1082.6772")
    assert computed["source"] == {"mode": "react", "row": 2, "turn": None, "observation": 1, "tool": "calculate",
                                  "input": "330 * 3.28084", "excerpt": "1082.6772"}
    assert data["comparison"]["rows"][0]["claims"] == {"backed": 0, "given": 0, "unbacked": 4}
    report = export_markdown(data, recording.traces)
    assert "## Step by step" in report and "| 2 ⋔ |" in report and "1082.6772 ✓" in report
