"""The export keeps an evidence test: its change and verdict under ``evidence``, read back by a replay and written
in the report; the strict reader refuses a bad block in one line."""

from __future__ import annotations

import json

import pytest

from agents.evidence import evidence_block, test_evidence, verdict_line
from agents.llm.scripted import ScriptedModel
from agents.modes.registry import fork_id
from tests.agents.test_evidence import CONFIG, REGISTRY, follows, original
from ui.recordings.checks import RecordingError
from ui.recordings.export import export_dict, export_markdown, to_json
from ui.recordings.reader import read_recording


def exported() -> tuple[dict, str]:
    trace = original("hall")
    change, rerun, verdict = test_evidence(trace, ScriptedModel([follows("hall")]), REGISTRY, CONFIG)
    panel = fork_id("react", change.step)
    rerun.mode = "react"
    block = evidence_block("react", change, verdict)
    data = export_dict(trace.question, "ReAct", {"react": trace, panel: rerun}, {"protocol": "text"},
                       evidence={panel: block})
    return data, panel


def test_the_export_keeps_the_test_and_a_replay_reads_it_back():
    data, panel = exported()
    line = "Evidence test: 396 → 515 — the answer followed the evidence (396 → 515)"
    assert verdict_line(data["evidence"][panel]) == line
    recording = read_recording(to_json(data))
    assert recording.evidence == data["evidence"]
    assert f"`{panel}`: {line}" in export_markdown(data)


@pytest.mark.parametrize(("bad", "message"), [
    ([], "must be an object of panels"),
    ({"react@1": {"source": "react", "change": {}, "verdict": {}}}, "is not one: the evidence test's change"),
    ({"react@9": "x"}, "is not one"),
])
def test_a_bad_evidence_block_is_one_clear_line(bad, message):
    data, panel = exported()
    data = json.loads(to_json(data))
    data["evidence"] = bad
    with pytest.raises(RecordingError, match=message):
        read_recording(json.dumps(data))


def test_a_test_of_a_panel_the_file_lacks_is_refused():
    data, panel = exported()
    data = json.loads(to_json(data))
    data["evidence"] = {"react@7": data["evidence"][panel]}
    with pytest.raises(RecordingError, match="names a panel it lacks"):
        read_recording(json.dumps(data))
