"""The expected answer through ``/compare`` (its 10th input): ✓ / ✗ and F1 in the table, the metrics lines and
the export, replayed from the export; old callers that omit it keep working. Reflexion's trials (the 11th)."""

from __future__ import annotations

import json

import pytest
from gradio_client import Client, handle_file

import app
from agents.llm.stub_server import StubLLMServer
from tests.gradio_rest import call

QUESTION = "What is 17 * 23 + 5?"
NINE = [QUESTION, "All", "stub", "text", 5, 0.2, ["calculate"], "None", None]  # /compare's inputs before `expected`


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(latency=0.02, token_delay=0.001) as server:
        yield server


@pytest.fixture(scope="module")
def url(stub, kit):
    demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
    with kit.launched(demo) as base:
        yield base


@pytest.fixture(scope="module")
def client(url):
    return Client(url, verbose=False)


def rest(url: str, data: list) -> tuple[str, object]:
    """``/compare`` over Gradio's raw REST route: (last event, its data)."""
    return call(url, "compare", data)


def test_expected_marks_each_mode_in_table_metrics_and_export(client):
    result = client.predict(question=QUESTION, mode="All", expected="396", api_name="/compare")
    table = result[7]
    assert "| Correct | F1 |" in table and "**Expected answer:** 396 — 2 of 3 right." in table
    rows = {line.split("|")[1].strip(" *"): line for line in table.splitlines() if line.startswith("| **")}
    assert "| ✗ | 0.00 |" in rows["Think-only"]
    assert "| ✓ | 1.00 |" in rows["Act-only"] and "| ✓ | 1.00 |" in rows["ReAct"]
    assert result[3].endswith("✗ F1 0.00") and result[5].endswith("✓ F1 1.00")
    export = json.load(open(next(p for p in result[8] if p.endswith(".json")), encoding="utf-8"))
    assert export["expected"] == "396" and export["verdicts"]["react"]["mark"] == "✓"
    markdown = open(next(p for p in result[8] if p.endswith(".md")), encoding="utf-8").read()
    assert "| Correct | F1 |" in markdown
    # the export replays with its correctness column
    replayed = client.predict(handle_file(next(p for p in result[8] if p.endswith(".json"))), "instant",
                              api_name="/replay")
    assert "| Correct | F1 |" in replayed[7] and replayed[5].endswith("✓ F1 1.00")


def test_without_expected_nothing_changes(client):
    result = client.predict(question=QUESTION, mode="ReAct", api_name="/compare")
    assert "Correct" not in result[7] and "✓" not in result[5]
    export = json.load(open(next(p for p in result[8] if p.endswith(".json")), encoding="utf-8"))
    assert export["expected"] is None and export["verdicts"] == {}


def test_an_old_export_without_expected_still_replays(client, tmp_path):
    result = client.predict(question=QUESTION, mode="ReAct", expected="396", api_name="/compare")
    data = json.load(open(next(p for p in result[8] if p.endswith(".json")), encoding="utf-8"))
    for key in ("expected", "verdicts"):
        del data[key]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data), encoding="utf-8")
    replayed = client.predict(handle_file(str(old)), "instant", api_name="/replay")
    assert "396" in str(replayed[2]) and "Correct" not in replayed[7] and "Replay finished" in replayed[6]


def test_rest_callers_with_the_nine_old_inputs_still_work(url):
    event, data = rest(url, NINE)
    assert event == "complete" and "Done" in data[6] and "Correct" not in data[7]
    event, data = rest(url, [*NINE, "396"])
    assert event == "complete" and "| Correct | F1 |" in data[7]


@pytest.mark.parametrize("bad, why", [(396, "must be text"), (["396"], "must be text"), ("9" * 501, "limit is 500")])
def test_bad_expected_is_one_clear_line_without_a_model_call(url, stub, bad, why):
    stub.requests.clear()
    event, data = rest(url, [*NINE, bad])
    assert event == "complete" and why in data[6]
    assert stub.requests == []


def test_eight_inputs_are_still_refused_by_gradio(url):
    event, _ = rest(url, NINE[:8])
    assert event == "error"  # only the optional last input may be left out


def panel_text(panel: list) -> str:
    return json.dumps(panel, ensure_ascii=False)


@pytest.mark.parametrize("trials", [1, 2])
def test_trials_bound_reflexion_named_by_the_older_fourth_input(url, trials):
    """The 11th input: how many attempts Reflexion makes (here every one is graded wrong against "42"); Reflexion
    named by the older positional ``fourth`` input is returned at output 9, as before the mode picker."""
    event, data = rest(url, [QUESTION, "Think", "stub", "text", 5, 0.2, ["calculate"], "Reflexion", None, "42",
                             trials])
    assert event == "complete", data
    shown = panel_text(data[9])
    assert f"Trial {trials} of {trials}" in shown and f"Trial {trials + 1}" not in shown
    assert shown.count("⚖ Trial verdict (graded against the expected answer)") == trials


@pytest.mark.parametrize("bad", [0, 11, 2.5, "many", [3]])
def test_bad_trials_are_one_clear_line_without_a_model_call(url, stub, bad):
    stub.requests.clear()
    event, data = rest(url, [*NINE, "396", bad])
    assert event == "complete" and "Reflexion trials must be a whole number from 1 to 10" in data[6], data[6]
    assert stub.requests == []
