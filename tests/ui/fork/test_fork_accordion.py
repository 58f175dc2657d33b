"""Fork from here, from the handlers (no browser): choices from the run on screen, a fork in a new panel
and in place, the export that records it and replays it, and every bad input as one status line."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from agents.events import Forked
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply, toy_policy
from agents.trace import Trace
from tests.frames import collect, compare_outputs
from ui.compare.handlers import CompareTab
from ui.core.frame import Outputs
from ui.core.lesson import Shown, Turn
from ui.core.modes import PANEL_MODES
from ui.fork.accordion import BUSY, STALE, ForkTab
from ui.fork.screen import NOTHING, Screen, choice_value, load_screen, path_of, screen_of, step_choices
from ui.recordings.export import EXPORT_DIR
from ui.recordings.playback import beside_in_file, beside_of, play
from ui.recordings.reader import read_recording

STATUS, TABLE, FILES, BESIDE, BESIDE_COL = 6, 7, 8, 9, 2 * len(PANEL_MODES) + 6  # the column: after every output
STEP_MAP = BESIDE_COL - 1  # the step-aligned map: the last Compare output
REACT = 2  # the ReAct panel's position among the outputs
QUESTION = "What is 17 × 23 + 5?"


def responder(body: dict) -> StubReply:
    """The toy policy (ReAct answers with the calculator's last observation); Think-only, asked again after
    an edited chain of thought, answers with the last number of that reasoning."""
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "user" and "a teacher may have changed it" in str(
            messages[-1].get("content")):
        reasoning = str(messages[-2].get("content"))
        return StubReply(text=f"Final Answer: {re.findall(r'[0-9]+', reasoning)[-1]}")
    if messages and "Observation: slowly" in str(messages[-1].get("content")):
        return StubReply(text="Thought: " + "pondering " * 300, token_delay=0.05)
    return toy_policy(body)


@pytest.fixture(scope="module")
def stub():
    with StubLLMServer(responder, latency=0.01, token_delay=0.001) as server:
        yield server


def outputs() -> Outputs:
    return compare_outputs()


def tabs(stub, registry) -> tuple[CompareTab, ForkTab]:
    settings, out = LLMSettings(model="stub", base_url=stub.url), outputs()
    compare = CompareTab(settings, registry, out)
    return compare, ForkTab(settings, registry, out, stops=compare.stops, lessons=compare.lessons)


PAGES = itertools.count()


def showing(tab: ForkTab, exports, source: str = "run") -> SimpleNamespace:
    """A page (its request) whose lesson shows the run of ``exports`` (the export files, or one path)."""
    request = SimpleNamespace(session_hash=f"page-{next(PAGES)}")
    path = path_of(exports) if not isinstance(exports, str) else exports
    if path is not None:
        tab.lessons.of(request).show(Shown(source, path, (Turn(QUESTION),)))  # type: ignore[arg-type]
    return request


def text_of(panel) -> str:
    panel = panel.get("value", panel) if isinstance(panel, dict) else panel
    messages = [m if isinstance(m, dict) else {"content": m.content, "metadata": m.metadata} for m in panel]
    messages = [{**m, "content": "".join(p.get("text", "") for p in m["content"])} if isinstance(m.get("content"), list)
                else m for m in messages]  # a live panel's messages are in the browser's form
    return " ".join(str(m.get("content")) + str((m.get("metadata") or {}).get("title", "")) for m in messages)


def skipped(value) -> bool:
    return value == gr.skip()


def export_of(frame: list) -> dict:
    path = path_of(frame[FILES])
    assert path is not None
    return json.loads(Path(path).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def run_on_screen(stub):
    """One finished "All" run of the arithmetic question: its last frame (with the export)."""
    from tools.calculator import calculate
    from tools.registry import ToolRegistry

    compare, _ = tabs(stub, ToolRegistry([calculate]))
    return asyncio.run(collect(compare.compare(question=QUESTION, mode="All")))[-1]


def fork(stub, registry, exports, *, panel="react", step=None, text="400", where="new", source="run"):
    _, tab = tabs(stub, registry)
    path = exports if isinstance(exports, str) else path_of(exports)
    if step is None and path is None:
        step = "0:x"
    if step is None:
        screen = load_screen(path)
        step = step_choices(screen.traces[panel])[0][1] if panel in screen.traces else "0:x"
    return asyncio.run(collect(tab.fork(panel, step, text, where, request=showing(tab, exports, source))))


def test_choices_list_each_observation_and_the_reasoning(run_on_screen, stub, registry):
    _, tab = tabs(stub, registry)
    page = showing(tab, run_on_screen[FILES])
    panel, step, text = asyncio.run(tab.refresh(None, None, page))
    assert panel.value == "react" and [k for _, k in panel.choices] == ["think", "act", "react"]
    assert [label for label, _ in step.choices] == ["step 1 · calculate(17 × 23 + 5) → 396"] and text == "396"
    assert step.label == "Observation"  # the box names what the chosen panel's steps are
    step2, text2 = asyncio.run(tab.pick_panel("think", page))
    assert step2.choices[0][0].startswith("step 1 · reasoning → ") and text2.startswith("Without a calculator")
    assert step2.label == "Reasoning"
    assert asyncio.run(tab.pick_panel("act", page))[0].label == "Observation"


def in_event(coro):
    """Run a handler as Gradio runs it, inside an event: there a ``gr.Dropdown(...)`` it makes is only an
    update, whose ``.value`` was never set (reading it back crashed the second refresh in the browser)."""
    from gradio.context import LocalContext

    async def go():
        LocalContext.in_event_listener.set(True)
        return await coro
    return asyncio.run(go())


def test_a_second_refresh_keeps_the_teachers_edit(run_on_screen, stub, registry):
    """The status line may change twice as a run ends: the second refresh must not reset an edit in progress."""
    _, tab = tabs(stub, registry)
    page = showing(tab, run_on_screen[FILES])
    panel, step, text = asyncio.run(tab.refresh(None, None, page))
    again = asyncio.run(tab.refresh(panel.value, step.value, page))
    assert again[0].value == "react" and again[1].value == step.value and skipped(again[2])
    other = asyncio.run(tab.refresh(panel.value, "0:stale", page))  # not on screen any more
    assert other[1].value == step.value and other[2] == "396"
    # the same inside an event, as the page calls it
    assert skipped(in_event(tab.refresh(panel.value, step.value, page))[2])
    assert in_event(tab.refresh(panel.value, "0:stale", page))[2] == "396"


def test_fork_in_a_new_panel_follows_the_edit_and_the_export_replays_it(run_on_screen, stub, registry):
    frames = fork(stub, registry, run_on_screen[FILES])
    last = frames[-1]
    assert all(skipped(v) for v in last[:6]), "the original panels are left as they are"
    assert "Final answer" in text_of(last[BESIDE]) and "400" in text_of(last[BESIDE])
    assert "edited by the teacher" in text_of(last[BESIDE]) and "396" in text_of(last[BESIDE])
    assert frames[0][BESIDE]["label"] == "ReAct (fork @1)" and frames[0][BESIDE_COL]["visible"] is True
    assert len(frames[0]) == BESIDE_COL + 1 and all(skipped(v) for v in last[BESIDE + 2:STEP_MAP])
    assert "fork @1" in last[STEP_MAP] and "edited by the teacher" in last[STEP_MAP]  # its column branches
    assert "**ReAct (fork @1)** | 400" in last[TABLE] and "**ReAct** | 396" in last[TABLE]
    data = export_of(last)
    assert data["fork"] == {"panel": "beside", "trace": "react@1"} and set(data["traces"]) == {"think", "act", "react",
                                                                                               "react@1"}
    forked = Trace.from_dict(data["traces"]["react@1"])
    assert forked.of(Forked) == [Forked(0, "396", "400")] and forked.answer == "400"
    assert "LLM_API_KEY" not in json.dumps(data) and "token" not in data["settings"]

    path = path_of(last[FILES])
    recording = read_recording(Path(path))
    assert beside_of(recording) == "react@1" and beside_in_file(path) == "react@1"
    replayed = asyncio.run(collect(play(recording, "instant")))[-1]
    assert "edited by the teacher" in text_of(replayed.beside) and "400" in text_of(replayed.beside)
    assert "edited by the teacher" not in text_of(replayed.panels[REACT]) and "396" in text_of(replayed.panels[REACT])

    # a fork of the fork, read back from its own export: the edit history stays in the trace
    again = fork(stub, registry, last[FILES], panel="react@1", text="401")[-1]
    data2 = export_of(again)
    assert data2["fork"]["trace"] == "react@1" and set(data2["traces"]) == {"think", "act", "react", "react@1"}
    assert [f.edited for f in Trace.from_dict(data2["traces"]["react@1"]).of(Forked)] == ["400", "401"]
    assert "401" in text_of(again[BESIDE])


def test_fork_in_place_keeps_the_original_in_the_table_and_the_export(run_on_screen, stub, registry):
    last = fork(stub, registry, run_on_screen[FILES], where="in place", text="123")[-1]
    assert "123" in text_of(last[REACT]) and "edited by the teacher" in text_of(last[REACT])
    assert last[3 + REACT].startswith("**✎ ReAct \\(fork @1\\)** · ")  # under the panel: it shows the fork
    assert skipped(last[0]) and skipped(last[1]) and skipped(last[BESIDE])
    data = export_of(last)
    assert data["fork"] == {"panel": "react", "trace": "react@1"}
    assert Trace.from_dict(data["traces"]["react"]).answer == "396"
    recording = read_recording(Path(path_of(last[FILES])))
    assert beside_of(recording) is None and recording.slots == {"react": "react@1"}
    assert screen_of(recording).forkable()[-2:] == [("ReAct (original)", "react"), ("ReAct (fork @1)", "react@1")]
    replayed = asyncio.run(collect(play(recording, "instant")))[-1]
    assert "123" in text_of(replayed.panels[REACT]) and replayed.beside == []
    assert replayed.metrics[REACT].startswith("**✎ ReAct \\(fork @1\\)** · ") and "✎" not in replayed.metrics[1]
    assert "**ReAct (fork @1)** | 123" in replayed.table and "**ReAct** | 396" in replayed.table


def test_think_only_reasoning_is_edited_and_the_answer_asked_again(run_on_screen, stub, registry):
    last = fork(stub, registry, run_on_screen[FILES], panel="think", text="17 × 23 = 391; plus 5 makes 400")[-1]
    assert "Final answer" in text_of(last[BESIDE]) and "400" in text_of(last[BESIDE])
    assert Trace.from_dict(export_of(last)["traces"]["think@1"]).answer == "400"


def test_a_replayed_file_is_forked_like_the_live_run(run_on_screen, stub, registry, tmp_path):
    path = path_of(run_on_screen[FILES])
    last = fork(stub, registry, path, step=step_choices(load_screen(path).traces["react"])[0][1], source="replay")[-1]
    assert "400" in text_of(last[BESIDE])


@pytest.mark.parametrize(("kw", "why"), [
    ({"exports": None}, NOTHING),
    ({"panel": "react", "step": "0:0000000000"}, STALE),
    ({"panel": "react", "step": "7:abc"}, STALE),
    ({"panel": "react", "step": "nonsense"}, "Pick the observation"),
    ({"text": "   "}, "Type the edited text"),
    ({"panel": "weather"}, "Pick a panel"),
    ({"where": "sideways"}, "Choose where the fork continues"),
])
def test_bad_input_is_one_status_line_and_nothing_else(run_on_screen, stub, registry, kw, why):
    stub.requests.clear()
    exports = kw.pop("exports", run_on_screen[FILES])
    frames = fork(stub, registry, exports, **kw)
    assert len(frames) == 1 and why in frames[0][STATUS]
    assert all(skipped(v) for i, v in enumerate(frames[0]) if i != STATUS) and stub.requests == []


def test_a_hybrid_panel_and_an_old_export_are_refused_in_one_line(run_on_screen, stub, registry, tmp_path):
    data = export_of(run_on_screen)
    data["traces"]["react_cot_sc"] = {**data["traces"]["react"], "mode": "react_cot_sc"}
    hybrid = EXPORT_DIR / "test-fork" / "hybrid.json"
    hybrid.parent.mkdir(parents=True, exist_ok=True)
    hybrid.write_text(json.dumps(data), encoding="utf-8")
    frames = fork(stub, registry, [str(hybrid)], panel="react_cot_sc", step="0:x")
    assert len(frames) == 1 and "cannot be forked: it combines several runs" in frames[0][STATUS]

    for trace in data["traces"].values():  # as saved before runs kept the model's replies
        trace["events"] = [{k: v for k, v in e.items() if k not in ("reply", "tool_calls")} for e in trace["events"]]
    old = hybrid.with_name("old.json")
    old.write_text(json.dumps(data), encoding="utf-8")
    frames = fork(stub, registry, [str(old)])
    assert len(frames) == 1 and "saved before runs could be forked" in frames[0][STATUS]


def test_a_file_outside_the_apps_folders_is_not_read(tmp_path):
    outside = tmp_path / "run.json"
    outside.write_text("{}", encoding="utf-8")
    assert path_of([str(outside)]) is None and path_of({"path": "/etc/passwd"}) is None


def test_a_running_run_blocks_a_fork_and_a_paused_one_is_forked(stub, registry):
    compare, tab = tabs(stub, registry)
    request = SimpleNamespace(session_hash="s1")

    async def scenario() -> tuple[str, list, list]:
        gen = compare.step_compare(question=QUESTION, mode="ReAct", request=request)
        frames = []
        async for frame in gen:
            frames.append(frame)
            if frame[STATUS].startswith("⏸"):
                break
        assert frames[-1][STATUS].startswith("⏸")
        screen = await tab.screen(request)
        assert isinstance(screen, Screen) and "react" in screen.traces
        panel, step, text = await tab.refresh(None, None, request)
        assert text == "396"
        rest = asyncio.ensure_future(collect(gen))  # the paused run's stream goes on (and is stopped by the fork)
        forked = await collect(tab.fork("react", step.value, "400", "new", request=request))
        return (await rest)[-1][STATUS], forked, frames

    stopped, forked, _ = asyncio.run(scenario())
    assert stopped.startswith("■ Stopped") and "400" in text_of(forked[-1][BESIDE])
    assert compare.stops.live("s1", "compare") == []


def test_a_fork_while_a_run_streams_is_refused(stub, registry):
    compare, tab = tabs(stub, registry)
    request = SimpleNamespace(session_hash="s2")
    with compare.stops.signal("s2", "compare") as stop:
        compare.lessons.of(request).begin("run", stop)  # a run streams on this page
        frames = asyncio.run(collect(tab.fork("react", "0:x", "1", "new", request=request)))
    assert len(frames) == 1 and BUSY in frames[0][STATUS]


def test_stop_ends_a_fork_and_its_export_says_so(run_on_screen, stub, registry):
    compare, tab = tabs(stub, registry)
    request = showing(tab, run_on_screen[FILES])
    step = choice_value(0, "396")

    async def scenario() -> list:
        frames = []
        async for values in tab.fork("react", step, "slowly", "new", request=request):
            frames.append(values)
            if "pondering" in text_of(values[BESIDE]) and compare.stops.live(request.session_hash, "compare"):
                await compare.stop(request)  # the Compare tab's Stop button
        return frames

    frames = asyncio.run(scenario())
    assert frames[-1][STATUS].startswith("■ Stopped") and "Stopped" in text_of(frames[-1][BESIDE])
    assert export_of(frames[-1])["stopped"] is True


def test_a_fork_waits_for_a_compare_slot_like_a_run(run_on_screen, stub, registry):
    from ui.core.admission import Admission

    _, tab = tabs(stub, registry)
    tab.admission = Admission(1, 2)
    step = choice_value(0, "396")
    request = showing(tab, run_on_screen[FILES])

    async def scenario() -> list:
        held = tab.admission.ticket()  # another visitor's run holds the only slot
        frames = []
        async for values in tab.fork("react", step, "400", "new", request=request):
            frames.append(values)
            if len(frames) == 1:
                held.release()
        return frames

    frames = asyncio.run(scenario())
    assert "**number 1** in the queue" in frames[0][STATUS] and all(skipped(v) for v in frames[0][:6])
    assert "400" in text_of(frames[-1][BESIDE]) and tab.admission.running == 0


def test_codeact_is_offered_and_forks_at_a_programs_output(stub):
    """The Fork list offers CodeAct; its steps are its programs' outputs (the calls inside a program are not steps),
    and an edited output reaches the model, which continues from it."""
    from tools.calculator import calculate
    from tools.registry import ToolRegistry

    registry = ToolRegistry([calculate])
    compare, tab = tabs(stub, registry)
    last = asyncio.run(collect(compare.compare(question=QUESTION, mode=["react", "codeact"])))[-1]
    page = showing(tab, last[FILES])
    panel, _, _ = asyncio.run(tab.refresh(None, None, page))
    assert [k for _, k in panel.choices] == ["react", "codeact"]
    step, text = asyncio.run(tab.pick_panel("codeact", page))
    labels = [label for label, _ in step.choices]
    assert len(labels) == 2 and labels[0].startswith("step 1 · python(") and labels[0].endswith("→ 396")
    assert text == "396" and not any("calculate(" in label.split("·")[1][:11] for label in labels)
    frames = asyncio.run(collect(tab.fork("codeact", step.choices[0][1], "400", "new", request=page)))
    beside = text_of(frames[-1][BESIDE])
    assert "edited by the teacher" in beside and "Final answer" in beside and "400" in beside, beside


def test_a_fork_counts_against_its_visitor_s_live_runs(run_on_screen, stub, registry):
    """A visitor whose address already has its most live runs is refused a fork in one line, and nothing runs."""
    from types import SimpleNamespace

    from ui.core.admission import Admission, RunQuota
    from ui.core.visitors import Visitor

    _, tab = tabs(stub, registry)
    tab.admission = Admission(4, 4, RunQuota(per_browser=3, per_address=1))
    request = showing(tab, run_on_screen[FILES])
    request.client, request.headers = SimpleNamespace(host="10.9.9.9"), {}
    before = len(stub.requests)

    async def scenario() -> list:
        held = tab.admission.ticket(Visitor(None, "10.9.9.9"))  # the address's one live run
        try:
            return [v async for v in tab.fork("react", choice_value(0, "396"), "400", "new", request=request)]
        finally:
            held.release()

    frames = asyncio.run(scenario())
    assert len(frames) == 1 and "runs are already going from your network" in frames[0][STATUS]
    assert len(stub.requests) == before and tab.admission.running == 0
