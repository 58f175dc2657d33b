"""``/evidence_test`` through the real app's HTTP queue: a ``/compare`` run's export is tested against the local
stub server (the real ``InferenceClient``), and the verdict is the one the engine gives for the same run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import app
import ui.core.settings
from agents.evidence import plan_change
from agents.llm.stub_server import StubLLMServer
from tests.gradio_rest import call, last_frame
from ui.core.settings import AppSettings
from ui.recordings.reader import read_recording
from ui.share.store import ShareStore

FILES = 8


@pytest.fixture(scope="module")
def served(kit):
    with StubLLMServer(latency=0.01, token_delay=0.001) as stub:
        demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
        with kit.launched(demo) as base:
            yield demo, base.rstrip("/"), stub


def exported(base: str) -> str:
    data = ["What is 17 * 23 + 5?", "ReAct", None, "text", 5, 0.2, ["calculate"], "None", None, ""]
    run = last_frame(base, "compare", data)
    path = next(f["path"] for f in run[FILES] if str(f.get("path", "")).endswith(".json"))
    return Path(path).read_text(encoding="utf-8")


def test_the_api_tests_an_export_and_its_verdict_is_the_engines(served):
    _, base, stub = served
    export = exported(base)
    stub.requests.clear()
    event, payload = call(base, "evidence_test", [export, "react", None], timeout=120)
    assert event == "complete", payload
    out = json.loads(payload[0])
    assert out["change"] == "396 → 515" and out["claim"] == "396"
    assert out["verdict"] == "the answer followed the evidence (396 → 515)"
    assert len(stub.requests) == 1 and "515" in json.dumps(stub.requests[0].body)  # one live call, after the edit
    trace = read_recording(export).traces["react"]
    change = plan_change(trace)
    assert out["evidence"]["change"] == change.to_dict()
    assert out["statement"] == change.line()  # what the page states before it runs


def test_a_share_id_names_the_run_too(served, tmp_path, monkeypatch):
    _, base, _ = served
    monkeypatch.setattr(ui.core.settings, "_current", AppSettings(share_dir=str(tmp_path / "store")))
    saved = tmp_path / "run.json"
    saved.write_text(exported(base), encoding="utf-8")
    run_id = ShareStore.from_settings().put(saved)
    event, payload = call(base, "evidence_test", [run_id, "react", "396"], timeout=120)
    assert event == "complete", payload
    assert json.loads(payload[0])["verdict"] == "the answer followed the evidence (396 → 515)"


@pytest.mark.parametrize(("run", "mode", "claim", "line"), [
    ("", "react", None, "run must be a share id or the JSON"),
    ("not json", "react", None, "run must be a share id or the JSON"),
    ("{\"traces\": 3}", "react", None, "traces must be a list or an object"),
    ("a" * 20, "react", None, "That shared run is unknown or has expired"),
    ([1], "react", None, "run must be a share id or the JSON"),
])
def test_bad_input_is_one_clear_line(served, run, mode, claim, line):
    _, base, _ = served
    assert refused(base, [run, mode, claim], line)


def refused(base: str, data: list, line: str) -> bool:
    event, payload = call(base, "evidence_test", data)
    assert event == "error" and line in str(payload), payload
    assert "Traceback" not in str(payload)
    return True


def test_an_unknown_mode_or_claim_is_one_line(served):
    _, base, _ = served
    export = exported(base)
    assert refused(base, [export, "cot", None], "mode must be one of the run's panels: react")
    assert refused(base, [export, "react", "17"], "no backed claim '17'")
