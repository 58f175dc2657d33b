"""Bad input through the app's API, as an attacker would send it: one clear line, no model call, nothing leaked.

Raw JSON over Gradio's REST route (``/gradio_api/call/<name>``), since gradio_client cannot send
``1e400`` or ``NaN``; the app runs against the local stub model server.
"""

from __future__ import annotations

import csv
import json
import os
import re

import httpx
import pytest

import app
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from tests.gradio_rest import call
from ui.benchmark import tab as bt

QUESTION = "What is 17 * 23 + 5?"
BASE = [QUESTION, "All", "stub", "text", 5, 0.2, ["calculate"], "None", None]  # REST needs every input


def text_of(panel: list) -> str:
    out = []
    for message in panel or []:
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"text": content}]
        out += [str(p.get("text") or "") for p in parts if isinstance(p, dict)]
    return "\n".join(out)


def strings(value: object) -> list[str]:
    """Every string inside a JSON-like value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def upload(url: str, path: str) -> dict:
    with open(path, "rb") as f:
        response = httpx.post(f"{url}/gradio_api/upload", files={"files": (os.path.basename(path), f)}, timeout=60)
    assert response.status_code == 200, response.text
    return {"path": response.json()[0], "meta": {"_type": "gradio.FileData"}}


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(toy_policy) as server:
        yield server


@pytest.fixture(scope="module")
def url(stub, kit):
    demo = app.build_demo(settings=kit.settings(stub, token="hf_SECRET_TOKEN_XYZ"), registry=kit.registry())
    with kit.launched(demo) as local_url:
        yield local_url.rstrip("/")


def with_(index: int, raw: str) -> str:
    """BASE as JSON text with element ``index`` replaced by literal JSON ``raw`` (``1e400``, ``NaN``...)."""
    parts = [json.dumps(v) for v in BASE]
    parts[index] = raw
    return "[" + ", ".join(parts) + "]"


@pytest.mark.parametrize(("index", "raw", "why"), [
    (4, "1e400", "Max steps must be a number from 1 to 10 (got inf)"),
    (4, "Infinity", "Max steps must be a number from 1 to 10 (got inf)"),
    (4, "NaN", "Max steps must be a number from 1 to 10 (got nan)"),
    (4, '"Infinity"', "Max steps must be a number from 1 to 10 (got inf)"),
    (4, '"many"', "Max steps must be a number from 1 to 10 (got 'many')"),
    (5, "-Infinity", "Temperature must be a number from 0 to 2 (got -inf)"),
    (1, "5", "The modes must be a list of mode ids, e.g. ['think', 'act', 'react'], or one of Think, Act, ReAct, All "
             "(got a number)"),
    (1, '["All"]', "Unknown mode 'All': choose from think, act, react"),
    (1, '[]', "Pick at least one mode to run."),
    (1, '[["react"]]', "The modes must be mode ids (text)"),
    (1, '{"a": 1}', "The modes must be a list of mode ids, e.g. ['think', 'act', 'react'], or one of Think, Act, "
                    "ReAct, All (got an object)"),
    (0, "42", "The question must be text, not a number"),
    (0, '["What?"]', "The question must be text, not a list"),
    (0, '{"q": "What?"}', "The question must be text, not an object"),
    (0, '"\\u0000\\u0000"', "That question has no visible characters"),
    (0, '"\\u0001\\n\\u001b"', "That question has no visible characters"),
    (6, '["nope", "calculate", "rm -rf"]', "Unknown tool(s): 'nope', 'rm -rf'. Available tools: calculate"),
    (6, '"calculate"', "Enabled tools must be a list of tool names"),
    (3, '["text"]', "Unknown protocol ['text']: choose text or tools"),
    (2, '{"model": 1}', "The model must be a model id (text), not an object"),
    (7, '["x"]', "`fourth` must be a mode id (text), not a list: choose from react_cot_sc"),
    (8, "1e400", "Max tokens must be a number from 1 to 32768 (got inf)"),
    (8, '"lots"', "Max tokens must be a number from 1 to 32768 (got 'lots')"),
    # out of range: refused, never clamped or passed on as sent
    (2, json.dumps("m" * 10_000), "The model id must be at most 200 characters (got 10,000)"),
    (2, '"org/model\\r\\nX-Injected: 1"', "The model id must be one line without control characters"),
    (8, "-5", "Max tokens must be a whole number from 1 to 32768 (got -5)"),
    (8, "1000000", "Max tokens must be a whole number from 1 to 32768 (got 1000000)"),
    (8, "2.5", "Max tokens must be a whole number from 1 to 32768 (got 2.5)"),
    (4, "0", "Max steps must be a whole number from 1 to 10 (got 0)"),
    (4, "11", "Max steps must be a whole number from 1 to 10 (got 11)"),
    (4, '"2.5"', "Max steps must be a whole number from 1 to 10 (got '2.5')"),
    (5, "-0.5", "Temperature must be a number from 0 to 2 (got -0.5)"),
    (5, "2.5", "Temperature must be a number from 0 to 2 (got 2.5)"),
])
def test_compare_refuses_bad_values_with_one_clear_line(url, stub, index, raw, why):
    stub.requests.clear()
    event, data = call(url, "compare", with_(index, raw))
    assert event == "complete", data  # a message, never {"error": null}
    status = data[6]
    assert why in status.replace("\\", ""), status
    assert why.split(" (")[0] in text_of(data[1]).replace("\\", "")
    assert "internal error" not in json.dumps(data) and "Traceback" not in json.dumps(data)
    assert stub.requests == []  # no model call


@pytest.mark.parametrize(("index", "raw", "why"), [
    (2, json.dumps("m" * 10_000), "The model id must be at most 200 characters (got 10,000)"),
    (8, "-5", "Max tokens must be a whole number from 1 to 32768 (got -5)"),
    (5, "9", "Temperature must be a number from 0 to 2 (got 9)"),
])
def test_step_through_refuses_the_same_values(url, stub, index, raw, why):
    """``/compare_step`` takes ``/compare``'s inputs, and the same check (no run starts, nothing pauses)."""
    stub.requests.clear()
    event, data = call(url, "compare_step", with_(index, raw))
    assert event == "complete" and why in data[6].replace("\\", ""), data[6]
    assert stub.requests == []


def test_values_at_the_ends_of_each_range_run_as_sent(url, stub):
    """The ends are accepted and reach the model unchanged (a 200-character model id, 32768 tokens, 0 and 2)."""
    stub.requests.clear()
    edge = list(BASE)
    edge[1], edge[4], edge[5], edge[8] = "Think", 1, 2, 32768
    event, data = call(url, "compare", edge)
    assert event == "complete" and data[6].startswith("✔ Done"), data[6]
    assert [(r.body["max_tokens"], r.body["temperature"]) for r in stub.requests] == [(32768, 2)]
    stub.requests.clear()
    edge[2], edge[5] = "m" * 200, 0
    event, data = call(url, "compare", edge)
    assert event == "complete" and [(r.body["model"], r.body["temperature"]) for r in stub.requests] == [
        ("m" * 200, 0)]


def test_good_values_still_run(url, stub):
    stub.requests.clear()
    event, data = call(url, "compare", with_(4, '"3"'))  # numeric text is a number
    assert event == "complete" and "396" in text_of(data[2]) and data[6].startswith("✔ Done")


def all_fail(body: dict) -> StubReply:
    return StubReply(status=401, error_body="bad token")


def think_fails(body: dict) -> StubReply:
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    return StubReply(status=401, error_body="bad token") if "without any tools" in system else toy_policy(body)


@pytest.mark.parametrize(("responder", "expected", "not_expected"), [
    (all_fail, "⚠ The run failed", "Done"),
    (think_fails, "but 1 of 3 modes failed: Think-only", "✔"),
])
def test_status_says_when_modes_failed(kit, responder, expected, not_expected):
    with StubLLMServer(responder) as server:
        demo = app.build_demo(settings=kit.settings(server), registry=kit.registry())
        with kit.launched(demo) as local_url:
            event, data = call(local_url.rstrip("/"), "compare", BASE)
    status = data[6]
    assert event == "complete" and expected in status and not_expected not in status, status
    assert "401" in status and status.count("\n") == 0  # one line, with the reason


def test_upload_larger_than_the_limit_is_refused(url, tmp_path):
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(app.MAX_UPLOAD_BYTES + 1_000_000)
    with big.open("rb") as f:
        response = httpx.post(f"{url}/gradio_api/upload", files={"files": ("big.json", f)}, timeout=60)
    assert response.status_code in (400, 413), response.status_code
    assert "size" in response.text.lower() or "large" in response.text.lower()
    small = tmp_path / "small.json"
    small.write_text("{}", encoding="utf-8")
    assert upload(url, str(small))["path"]  # the limit leaves normal files alone


# --- /replay ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "why"), ids=["deep", "text-type", "t-inf", "deep-input", "question-type", "mode"],
                         argvalues=[
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"traces": {"react": {"events": [{"t": 0, "kind": "answer", "text": {"a": 1}}]}}}', "'text' has the wrong type"),
    ('{"traces": {"react": {"events": [{"t": 1e400, "kind": "answer", "text": "x"}]}}}', "1e400 is too large a number"),
    ('{"traces": {"react": {"events": [{"t": 0, "kind": "action", "tool": "x", "input": ' + '{"a":' * 50 + "1"
     + "}" * 50 + "}]}}}", "nested too deeply"),
    ('{"question": ["q"], "traces": {"react": {"events": []}}}', "'question' must be text"),
    ('{"traces": {"telepathy": {"events": []}}}', "Unknown mode(s) in the file: telepathy"),
])
def test_replay_refuses_bad_recordings_with_one_clear_line(url, tmp_path, content, why):
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    event, data = call(url, "replay", [upload(url, str(bad)), "instant"])
    assert event == "complete", data
    assert why in data[6] and why in text_of(data[0]), data[6]


def test_replay_refuses_too_many_steps(url, tmp_path):
    from ui.recordings.checks import MAX_STEPS

    events = [{"t": i * 0.001, "kind": "thought", "text": "x"} for i in range(MAX_STEPS + 1)]
    path = tmp_path / "steps.json"
    path.write_text(json.dumps({"traces": {"react": {"events": events}}}), encoding="utf-8")
    event, data = call(url, "replay", [upload(url, str(path)), "instant"])
    assert event == "complete" and f"replay shows at most {MAX_STEPS:,}" in data[6]


def test_replay_path_traversal_is_refused(url):
    """A path that was not uploaded never reaches the handler: Gradio refuses it (the browser only sends uploads)."""
    for path in ("/etc/passwd", "../../../../etc/passwd", os.path.abspath(app.__file__), "/tmp"):
        for value in ({"path": path, "meta": {"_type": "gradio.FileData"}}, path):
            event, data = call(url, "replay", [value, "instant"])
            shown = json.dumps(data)
            assert event == "error" and "root:" not in shown and "build_demo" not in shown, shown


XSS = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'


def test_replayed_html_is_text(url, tmp_path):
    events = [{"t": 0.0, "kind": "token", "text": XSS, "channel": "thought"},
              {"t": 0.1, "kind": "action", "tool": XSS, "input": XSS, "thought": XSS},
              {"t": 0.2, "kind": "observation", "tool": XSS, "output": XSS},
              {"t": 0.3, "kind": "answer", "text": XSS}]
    path = tmp_path / "xss.json"
    path.write_text(json.dumps({"question": XSS, "selection": XSS, "settings": {"backend": XSS},
                                "traces": {"react": {"events": events}}}), encoding="utf-8")
    event, data = call(url, "replay", [upload(url, str(path)), "instant"])
    assert event == "complete"
    # all but the question box (plain text, not HTML), the run options (numbers) and the picker; the map (last) too
    texts = strings([*data[:-4], data[-1]])
    live_tags = [t for t in texts if re.search(r"(?<![\\`])<(img|script)", t) and "```" not in t]
    assert live_tags == []  # every tag is escaped (&lt; or \<) or inside a code fence
    assert "&lt;img" in text_of(data[2]) and "&lt;img" in data[-1]  # shown, as text


# --- /benchmark --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bench_url(kit):
    import gradio as gr

    with StubLLMServer(toy_policy, latency=0.05) as server:
        with gr.Blocks() as demo:
            bt.build_benchmark_tab(kit.settings(server), kit.registry(), refresh_s=0.2)
        with kit.launched(demo) as local_url:
            yield local_url.rstrip("/"), server


def bench_call(url: str, upload_data: dict | None, **changes) -> tuple[str, object]:
    args = {"dataset": bt.UPLOAD, "upload": upload_data, "n": 10, "modes": ["act"], "concurrency": 2, "sc_n": 1,
            "model": "stub", "protocol": "text", "max_steps": 3, "temperature": 0.2, "tools": ["calculate"],
            "trials": None, "k": None}
    raw = {k: json.dumps(v) for k, v in args.items()}
    raw.update(changes)
    return call(url, "benchmark", "[" + ", ".join(v for v in raw.values() if v is not OMIT) + "]")


OMIT = object()  # bench_call(..., k=OMIT): a caller from before the k input (trials=OMIT too: before trials)


def write(path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("name", "content", "why"), ids=["long", "nul", "nul2", "huge-cell", "deep", "dict"],
                         argvalues=[
    ("long.csv", "question,answer\nWhat is 2+2?,4\n\"" + "x" * 100_021 + "\",1\n",
     "item 2 (id 'long-2'): That question is 100,021 characters long; the limit is 2,000"),
    ("nul.jsonl", '{"question": "What is 2+2?", "answer": "4"}\n{"question": "\\u0000\\u0000", "answer": "1"}\n',
     "item 2 (id '"),  # Gradio renames an upload called "nul" (a Windows device name)
    ("nul2.jsonl", '{"question": "What is 2+2?", "answer": "4"}\n{"question": "\\u0000\\u0000", "answer": "1"}\n',
     "item 2 (id 'nul2-2'): That question has no visible characters"),
    ("huge.csv", "question,answer\n\"" + "y" * 140_000 + "\",1\n", "a cell is longer than 131,072 characters"),
    ("deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    ("dict.jsonl", '{"question": {"a": 1}, "answer": "1"}\n', "the question must be text"),
])
def test_benchmark_checks_every_question_before_any_model_call(bench_url, tmp_path, name, content, why):
    url, server = bench_url
    server.requests.clear()
    event, data = bench_call(url, upload(url, write(tmp_path / name, content)))
    assert event == "complete", data
    assert data[0].startswith("⚠") and why in data[0].replace("\\", ""), data[0]
    assert server.requests == []


@pytest.mark.parametrize(("key", "raw", "why"), [
    ("n", "1e400", "N must be a number from 1 to 200 (got inf)"),
    ("n", "500", "greater than maximum value 200"),  # a finite number out of range: Gradio's own clear check
    ("concurrency", "NaN", "Concurrency must be a number from 1 to 8 (got nan)"),
    ("sc_n", '"lots"', "CoT-SC samples must be a number from 1 to 21 (got 'lots')"),
    ("max_steps", "Infinity", "Max steps must be a number from 1 to 10 (got inf)"),
    ("max_steps", '"many"', "Max steps must be a number from 1 to 10 (got 'many')"),
    ("temperature", "NaN", "Temperature must be a number from 0 to 2 (got nan)"),
    ("tools", '["nope"]', "nope"),
    ("model", "[1]", "The model must be a model id (text), not a list"),
    ("model", json.dumps("m" * 10_000), "The model id must be at most 200 characters (got 10,000)"),
    ("max_steps", "11", "greater than maximum value 10"),  # the slider's own check (this event preprocesses)
    ("max_steps", "2.5", "Max steps must be a whole number from 1 to 10 (got 2.5)"),
    ("temperature", "2.5", "greater than maximum value 2"),
    ("k", "2.5", "k (tries per item) must be a whole number from 1 to 10 (got 2.5)"),
    ("k", '"lots"', "k (tries per item) must be a number from 1 to 10 (got 'lots')"),
    ("k", "11", "greater than maximum value 10"),
])
def test_benchmark_refuses_bad_knobs(url, stub, tmp_path, key, raw, why):
    """One clear line, ours or Gradio's own input check (the event preprocesses: uploads must be checked paths).

    The whole app, so the Settings accordion's values are inputs of ``/benchmark`` too."""
    server = stub
    server.requests.clear()
    ok = upload(url, write(tmp_path / "ok.jsonl", '{"question": "What is 2+2?", "answer": "4"}\n'))
    event, data = bench_call(url, ok, **{key: raw})
    message = data[0] if event == "complete" else (data or {}).get("error")
    assert message and why in str(message).replace("\\", ""), data
    assert server.requests == []


def test_benchmark_refuses_n_times_k_over_the_limit_before_any_call(url, stub):
    """N × k counts against BENCH_MAX_N: 100 HotpotQA items × 3 tries is refused in one line, and nothing is sent."""
    stub.requests.clear()
    event, data = bench_call(url, None, dataset='"hotpotqa"', n="100", k="3")
    assert event == "complete", data
    assert data[0].replace("\\", "") == ("⚠ N × k = 100 × 3 = 300 tries of each mode, over this app's limit of 200 "
                                         "(BENCH_MAX_N): lower N or k."), data[0]
    assert stub.requests == []


@pytest.mark.parametrize("left_out", [("k",), ("trials", "k")], ids=["before-k", "before-trials"])
def test_a_benchmark_caller_may_leave_out_the_trials_and_k(url, tmp_path, left_out):
    ok = upload(url, write(tmp_path / "ok.jsonl", '{"question": "What is 2+2?", "answer": "4"}\n'))
    event, data = bench_call(url, ok, **dict.fromkeys(left_out, OMIT))
    assert event == "complete" and data[0].startswith("✔ Done: 1 / 1 pairs"), data


def test_benchmark_results_csv_cannot_run_formulas(bench_url, tmp_path):
    url, _ = bench_url
    rows = [("=HYPERLINK(\"http://evil.example\",\"click\")", "=cmd|' /C calc'!A0"), ("+SUM(1,2) what is 1+2?", "3"),
            ("@SUM(1,2) what is 1+2?", "-3"), ("-2+5 is what?", "\t=1+1")]
    path = tmp_path / "formulas.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["question", "answer"])
        writer.writerows(rows)
    event, data = bench_call(url, upload(url, str(path)))
    assert event == "complete" and data[0].startswith("✔"), data[0]
    results = next(p for p in (f["path"] for f in data[4]) if p.endswith("results.csv"))
    with open(results, encoding="utf-8") as f:
        cells = [c for row in csv.reader(f) for c in row]
    dangerous = [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r")
                 or (c.startswith("-") and not c[1:].replace(".", "").isdigit())]
    assert dangerous == [], dangerous
    assert "'=HYPERLINK(\"http://evil.example\",\"click\")" in cells and "'=cmd|' /C calc'!A0" in cells
    assert "-3" in cells  # a negative number stays a number


def test_benchmark_says_when_every_pair_failed(kit, tmp_path):
    import gradio as gr

    with StubLLMServer(all_fail) as server:
        with gr.Blocks() as demo:
            bt.build_benchmark_tab(kit.settings(server), kit.registry(), refresh_s=0.2)
        with kit.launched(demo) as local_url:
            url = local_url.rstrip("/")
            ok = upload(url, write(tmp_path / "ok.jsonl", '{"question": "What is 2+2?", "answer": "4"}\n'))
            event, data = bench_call(url, ok)
    assert event == "complete" and data[0].startswith("⚠ The run failed: every pair ended in an error"), data[0]
    assert "401" in data[0]
