"""The tool calls of one native reply run at the same time (agents/modes/tool_protocol.run_calls)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from agents.events import Action, Observation
from agents.fork import fork
from agents.llm.scripted import ScriptedModel, ScriptedReply
from agents.modes import RunConfig, act_only, react
from agents.stepping import Stopped
from agents.trace import Trace, metrics_line
from tools.registry import STOP, ToolRegistry, tool

STARTED: list[str] = []
_LOCK = threading.Lock()


@tool(timeout_s=5)
def nap(label: str, seconds: float) -> str:
    """Sleep ``seconds``, then say which call it was."""
    with _LOCK:
        STARTED.append(label)
    time.sleep(seconds)
    return f"{label} slept {seconds:g} s"


@tool
def stop_seen(query: str) -> str:
    """Whether the run's Stop reached this tool's thread."""
    return "stop" if STOP.get() is not None else "none"


REGISTRY = ToolRegistry([nap, stop_seen])
THREE = ScriptedReply("Three at once.", tool_calls=(
    ("nap", {"label": "a", "seconds": 1.0}), ("nap", {"label": "b", "seconds": 0.6}),
    ("nap", {"label": "c", "seconds": 0.8})))


@pytest.fixture(autouse=True)
def _fresh() -> None:
    STARTED.clear()


def run(steps: list, mode=react, config: RunConfig | None = None) -> tuple[Trace, ScriptedModel, list[float]]:
    """The run's trace, its model, and when (seconds from the start) each Observation was yielded."""
    model = ScriptedModel(list(steps))
    trace = Trace("react", "Who slept?")
    start, times = time.perf_counter(), []
    for event in mode(trace.question, model, REGISTRY, config or RunConfig(protocol="tools", max_steps=4)):
        trace.add(event)
        if isinstance(event, Observation):
            times.append(time.perf_counter() - start)
    model.assert_done()
    return trace, model, times


def test_three_calls_of_one_reply_run_at_once_and_stream_as_they_finish():
    trace, model, times = run([THREE, "Final Answer: a, b and c"])
    assert times[-1] <= 1.3  # one after another they would take 2.4 s
    assert [o.output for o in trace.of(Observation)] == ["b slept 0.6 s", "c slept 0.8 s", "a slept 1 s"]
    assert times[0] < 0.9 and times[1] < 1.0  # each observation as its call finished, not with the last one
    assert sorted(STARTED) == ["a", "b", "c"] and trace.tool_calls == 3
    assert trace.step_count == 1 and metrics_line(trace).startswith("1 step · 2 LLM calls · 3 tool calls")  # one step
    events = [e for _, e in trace.events if isinstance(e, Action | Observation)]  # each Action by its Observation
    assert [(e.kind, e.input["label"] if isinstance(e, Action) else e.output[0]) for e in events] == [
        ("action", "b"), ("observation", "b"), ("action", "c"), ("observation", "c"),
        ("action", "a"), ("observation", "a")]
    assert all(a.thought == "Three at once." for a in trace.of(Action))


def test_the_next_request_lists_the_results_in_call_order():
    _, model, _ = run([THREE, "Final Answer: a, b and c"])
    messages = model.requests[1].messages
    asked = messages[-4]
    assert asked["role"] == "assistant" and len(asked["tool_calls"]) == 3
    results = messages[-3:]
    assert [m["tool_call_id"] for m in results] == [c["id"] for c in asked["tool_calls"]]
    assert [m["content"] for m in results] == ["a slept 1 s", "b slept 0.6 s", "c slept 0.8 s"]


def test_two_identical_calls_in_one_reply_run_once():
    same = ScriptedReply("Twice.", tool_calls=(("nap", {"label": "x", "seconds": 0.3}),
                                               ("nap", {"label": "x", "seconds": 0.3})))
    trace, model, _ = run([same, "Final Answer: x"])
    assert STARTED == ["x"]
    first, second = trace.of(Observation)
    assert first.output == "x slept 0.3 s" and not first.is_error
    assert second.is_error and "x slept 0.3 s" in second.output  # the repeat is answered with the first's result
    contents = [m["content"] for m in model.requests[1].messages[-2:]]
    assert contents == [first.output, second.output]


def test_act_only_runs_them_at_once_too():
    trace, _, times = run([ScriptedReply("", tool_calls=THREE.tool_calls), "Final Answer: done"], mode=act_only)
    assert times[-1] <= 1.3 and len(trace.of(Observation)) == 3


def test_stop_ends_the_wait_for_running_calls_promptly():
    config = RunConfig(protocol="tools", max_steps=4)
    slow = ScriptedReply("", tool_calls=(("nap", {"label": "s", "seconds": 3}), ("nap", {"label": "t", "seconds": 3})))
    threading.Timer(0.3, config.cancel.set).start()
    start = time.perf_counter()
    with pytest.raises(Stopped):
        run([slow, "Final Answer: never"], config=config)
    assert time.perf_counter() - start < 1.0


def test_the_runs_stop_reaches_each_calls_thread():
    reply = ScriptedReply("", tool_calls=(("stop_seen", {"query": "1"}), ("stop_seen", {"query": "2"})))
    trace, _, _ = run([reply, "Final Answer: seen"])
    assert [o.output for o in trace.of(Observation)] == ["stop", "stop"]


def test_a_fork_replays_calls_that_finished_out_of_order_byte_for_byte():
    script = [THREE, ScriptedReply("", tool_calls=(("nap", {"label": "d", "seconds": 0.1}),)), "Final Answer: d"]
    original, model, _ = run(script)
    for step in range(3):  # each observation of the parallel reply, edited to itself
        live = ScriptedModel(list(script[1:]))
        forked = list(fork(original, step, original.of(Observation)[step].output, live, REGISTRY,
                           RunConfig(protocol="tools", max_steps=4)))
        live.assert_done()
        assert json.dumps(live.requests[0].messages) == json.dumps(model.requests[1].messages)
        assert forked
    edited = ScriptedModel(list(script[1:]))
    list(fork(original, 0, "b never woke", edited, REGISTRY, RunConfig(protocol="tools", max_steps=4)))
    assert [m["content"] for m in edited.requests[0].messages[-3:]] == ["a slept 1 s", "b never woke", "c slept 0.8 s"]


def test_the_panel_shows_the_reply_as_one_step_with_its_calls_numbered_in_call_order():
    from ui.core.render import Panel

    trace, _, _ = run([THREE, ScriptedReply("One more.", tool_calls=(("nap", {"label": "d", "seconds": 0}),)),
                       "Final Answer: a, b and c"])
    panel = Panel("react")
    for _, event in trace.events:
        panel.add(event)
    panel.finish()
    titles = [m.metadata.get("title") for m in panel.messages if m.metadata.get("title")]
    steps = [t for t in titles if not t.startswith(("✍", "⋯"))]
    assert steps == ["✎ Thought", "⚙ Action 1: 3 tool calls at once",
                     "⚙ Action 1.2: nap", "↳ Observation 1.2 · nap", "⚙ Action 1.3: nap", "↳ Observation 1.3 · nap",
                     "⚙ Action 1.1: nap", "↳ Observation 1.1 · nap",
                     "✎ Thought", "⚙ Action 2: nap", "↳ Observation 2 · nap"]
    header = next(m for m in panel.messages if m.metadata.get("title") == "⚙ Action 1: 3 tool calls at once")
    assert header.metadata["status"] == "done" and header.content.count("`nap`") == 3


def test_a_stopped_step_closes_its_line():
    from ui.core.render import Panel

    trace, _, _ = run([THREE, "Final Answer: a, b and c"])
    events = [e for _, e in trace.events]
    cut = next(i for i, e in enumerate(events) if isinstance(e, Observation))  # stopped after the first call
    panel = Panel("react")
    for event in events[: cut + 1]:
        panel.add(event)
    panel.finish(stopped=True)
    header = next(m for m in panel.messages if "tool calls at once" in m.metadata.get("title", ""))
    assert header.metadata["title"].endswith("not all calls finished") and header.metadata["status"] == "done"


def test_a_fork_of_a_parallel_call_is_numbered_as_the_panel_numbers_it():
    """The Fork box lists the calls of a reply as "step 1.2" and the forked panel marks "Observation 1.2 edited",
    the numbers the panel shows, not the order the calls finished in."""
    from ui.core.render import Panel
    from ui.fork.screen import observations

    script = [THREE, ScriptedReply("", tool_calls=(("nap", {"label": "d", "seconds": 0}),)), "Final Answer: d"]
    original, _, _ = run(script)
    labels = [label.split(" · ")[0] for label, _ in observations(original)]
    assert labels == ["step 1.2", "step 1.3", "step 1.1", "step 2"]  # b, c then a finished first
    live = ScriptedModel(list(script[1:]))
    forked = list(fork(original, 1, "c never woke", live, REGISTRY, RunConfig(protocol="tools", max_steps=4)))
    panel = Panel("react")
    for event in forked:
        panel.add(event)
    titles = [m.metadata.get("title", "") for m in panel.messages]
    assert "✎ Observation 1.3 edited by the teacher — forked here" in titles
