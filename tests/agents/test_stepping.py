"""Step gating: one step per ``step()``, nothing in flight or timing out while paused, ``close()`` ends it."""

from __future__ import annotations

import threading
import time

import pytest

from agents.comparison import ComparisonRun
from agents.events import FinalAnswer, LLMError, Paused, Resumed, Retry, Usage, Waiting
from agents.llm import watchdog
from agents.llm.gate import gate_for
from agents.llm.hf import HFInferenceModel
from agents.llm.scripted import ScriptedModel
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from agents.modes import RunConfig
from agents.trace import Trace
from tools.calculator import calculate
from tools.registry import ToolRegistry

QUESTION = "What is 17 * 23 + 5?"
REGISTRY = ToolRegistry([calculate])
LOOP = ["Thought: compute.\nAction: calculate\nAction Input: 17 * 23", "Thought: add.\nAction: calculate\n"
        "Action Input: 391 + 5", "Thought: done.\nFinal Answer: 396"]
SCRIPTS = {"think": ["Thought: 17 × 23 = 391; +5.\nFinal Answer: 396"], "act": LOOP, "react": LOOP}


def scripted_factory(models: dict[str, ScriptedModel]):
    """One ScriptedModel per mode, chosen by the mode's thread (ComparisonRun names them mode-<name>)."""
    def make() -> ScriptedModel:
        mode = threading.current_thread().name.removeprefix("mode-")
        models[mode] = ScriptedModel(list(SCRIPTS[mode]))
        return models[mode]
    return make


def drain(run: ComparisonRun, traces: dict[str, Trace], until, limit: float = 10.0) -> None:
    """Collect events until ``until(run)`` holds (checked when no event is waiting) or the run is done."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        item = run.poll(timeout=0.02)
        if item is not None:
            traces[item[0]].add(item[1])
        elif run.done or until(run):
            return
    raise AssertionError(f"timed out; paused={run.paused}")


def calls(traces: dict[str, Trace]) -> dict[str, int]:
    return {m: t.llm_calls for m, t in traces.items()}


def stepping_run(modes=("think", "act", "react"), **kw) -> tuple[ComparisonRun, dict[str, Trace]]:
    run = ComparisonRun(QUESTION, modes, registry=REGISTRY, stepping=True, **kw).start()
    return run, {m: Trace(m, QUESTION) for m in modes}


def test_step_advances_exactly_one_step_per_unfinished_mode_and_resume_finishes():
    models: dict[str, ScriptedModel] = {}
    run, traces = stepping_run(model_factory=scripted_factory(models))
    try:
        drain(run, traces, lambda r: r.waiting_for_step)
        assert calls(traces) == {"think": 1, "act": 1, "react": 1}
        assert traces["think"].answer == "396" and sorted(run.paused) == ["act", "react"]  # Think ends in one step
        assert traces["act"].of(Paused) == [Paused(1)] and not traces["think"].of(Paused)
        run.step()
        drain(run, traces, lambda r: r.waiting_for_step and len(traces["act"].of(Paused)) == 2)
        assert calls(traces) == {"think": 1, "act": 2, "react": 2}
        assert traces["react"].of(Paused)[-1] == Paused(2) and len(traces["react"].of(Resumed)) == 1
        run.resume()
        drain(run, traces, lambda r: False)
        assert run.done and not run.paused
        assert all(t.answer == "396" and t.error is None for t in traces.values())
        assert calls(traces) == {"think": 1, "act": 3, "react": 3}  # the metrics count only what ran
        for model in models.values():
            model.assert_done()
    finally:
        run.close()


def test_close_while_paused_ends_promptly():
    run, traces = stepping_run(model_factory=scripted_factory({}))
    drain(run, traces, lambda r: r.waiting_for_step)
    started = time.monotonic()
    run.close()
    assert time.monotonic() - started < 1.0
    assert not any(t.is_alive() for t in run._threads)
    drain(run, traces, lambda r: False, limit=2.0)
    assert run.done and not any(t.of(LLMError) for t in traces.values())  # a stop is not an error
    assert traces["act"].answer is None and traces["act"].llm_calls == 1


def test_pause_switches_a_running_run_to_stepping():
    gate_open = threading.Event()

    def slow_first(request):
        gate_open.wait(5)
        return LOOP[0]

    model = ScriptedModel([slow_first, *LOOP[1:]])
    run, traces = ComparisonRun(QUESTION, ["react"], registry=REGISTRY, model_factory=lambda: model).start(), {
        "react": Trace("react", QUESTION)}
    try:
        run.pause()
        gate_open.set()
        drain(run, traces, lambda r: r.waiting_for_step)
        assert traces["react"].llm_calls == 1 and run.paused == ["react"]
        run.resume()
        drain(run, traces, lambda r: False)
        assert traces["react"].answer == "396"
    finally:
        run.close()


@pytest.mark.parametrize("protocol", ["text", "tools"])
def test_over_http_a_paused_run_holds_no_request_no_slot_and_outlives_the_timeouts(protocol):
    """The real client against the stub server: LLM_TIMEOUT, LLM_MAX_DURATION and LLM_MAX_CONCURRENT are tiny."""
    with StubLLMServer() as server:
        # Small limits, yet roomy enough for a real call on a loaded 2-core machine; the pause outlasts both.
        settings = LLMSettings(base_url=server.url, model="stub", timeout_s=1.0, max_duration_s=1.5, max_concurrent=1)
        run, traces = stepping_run(model_factory=lambda: HFInferenceModel(settings),
                                   config=RunConfig(protocol=protocol))
        try:
            drain(run, traces, lambda r: r.waiting_for_step)
            assert sorted(run.paused) == ["act", "react"]
            deadline = time.monotonic() + 2.0
            while server.in_flight and time.monotonic() < deadline:  # the handler may still be closing the body
                time.sleep(0.01)
            assert server.in_flight == 0
            assert gate_for(settings.server_key(), 1).in_flight == 0  # no LLM_MAX_CONCURRENT slot held
            assert not watchdog._watchdog._watches  # no call's clock is running
            time.sleep(2.0)  # longer than both limits: nothing may fire while the class talks
            errors = {m: t.error for m, t in traces.items()}
            assert run.waiting_for_step and not any(t.of(LLMError) for t in traces.values()), errors
            requests = len(server.requests)
            run.step()
            drain(run, traces, lambda r: False)
            assert len(server.requests) == requests + 2  # one more call each for act and react
            for mode in ("act", "react"):
                trace = traces[mode]
                assert trace.error is None and trace.answer is not None and "396" in trace.answer, trace.to_markdown()
                assert trace.elapsed_s < 2.0  # the pause is not counted as running time
                assert isinstance(trace.of(FinalAnswer)[0], FinalAnswer) and trace.llm_calls == len(trace.of(Usage))
        finally:
            run.close()


def test_a_mode_is_no_longer_paused_the_moment_it_is_let_go():
    """A caller that polls right after step() must not see the same pause again (it would step twice)."""
    from agents.stepping import StepGate

    gate = StepGate(threading.Event())
    assert list(gate.before_call()) == []  # the first call is always allowed
    seen: list = []
    worker = threading.Thread(target=lambda: seen.extend(gate.before_call()))
    worker.start()
    deadline = time.monotonic() + 5
    while not gate.waiting and time.monotonic() < deadline:
        time.sleep(0.005)
    assert gate.waiting and seen == [Paused(1)]  # the event was handed over before the mode counts as waiting
    gate.grant()
    assert not gate.waiting  # at once, before the waiting thread has even run again
    worker.join(5)
    assert isinstance(seen[-1], Resumed) and gate.started == 2


CODEACT = ["Thought: multiply first.\n<code>\nx = calculate('17 * 23')\nprint(x)\n</code>",
           "Thought: x is still here.\n<code>\nfinal_answer(int(x) + 5)\n</code>"]
REFLEXION = ["Thought: I know it.\nFinal Answer: 390", "I guessed; compute with the calculator next time.",
             "Thought: compute.\nAction: calculate\nAction Input: 17 * 23 + 5", "Final Answer: 396"]


@pytest.mark.parametrize(("mode", "script", "steps"), [("codeact", CODEACT, 2), ("reflexion", REFLEXION, 4)])
def test_codeact_and_reflexion_step_one_model_reply_at_a_time(mode, script, steps):
    """A step is one model reply in the newer modes too: a CodeAct program (its tool calls inside it), a trial's
    reply, a reflection."""
    model = ScriptedModel(list(script))
    run, traces = stepping_run((mode,), model_factory=lambda: model, options={"expected": "396", "trials": 2})
    try:
        for n in range(1, steps):
            drain(run, traces, lambda r, n=n: r.waiting_for_step and len(traces[mode].of(Paused)) == n)
            assert traces[mode].llm_calls == n and traces[mode].answer != "396"
            run.step()
        drain(run, traces, lambda r: False)
        assert run.done and traces[mode].answer == "396" and traces[mode].llm_calls == steps
        assert len(traces[mode].of(Paused)) == steps - 1
        model.assert_done()
    finally:
        run.close()


def test_step_state_reads_who_waits_from_the_events_and_lets_them_go_once_per_pause():
    """The one bookkeeping of both run handles (and the Compare status line): Paused, Resumed and ends in."""
    from agents.stepping import StepState

    state = StepState(["think", "act", "react"])
    noted: list = []
    state.add("think", None, lambda mode, event: noted.append((mode, event, state.pause_step())))
    state.add("act", Paused(1), lambda mode, event: noted.append((mode, event, state.paused)))
    assert noted == [("think", None, None), ("act", Paused(1), ["act"])]  # whoever gets a pause finds it noted
    assert state.pause_step() is None  # react still runs
    state.add("react", Usage(reply="…"))  # other events change nothing
    state.add("react", Paused(2))
    assert state.paused == ["act", "react"] and state.pause_step() == 2
    assert state.let_go(once=True) and not state.paused and state.pause_step() is None  # at once, before Resumed
    assert not state.let_go(once=True)  # a double click: no pause left to end, so no second step
    for mode in ("act", "react"):
        state.add(mode, Resumed(0.5))
    state.add("act", Paused(2))
    state.add("react", LLMError("cut off", "interrupted"))  # waits for its turn to run again: not running, in the
    assert state.pause_step() == 2 and state.paused == ["act"]  # run's process and in the app's HostedRun alike
    state.add("react", Retry("running it again"))
    assert state.pause_step() is None
    assert state.pause_step(["act", "react"], lambda m: m == "react") == 2  # the caller's own "not running"
    state.add("act", None)
    assert state.paused == [] and state.pause_step() is None  # an ended mode is never paused
    state.add("react", Paused(3))
    state.let_go()  # Continue: let go whatever the others do
    assert state.paused == []


@pytest.mark.parametrize("hosted", [False, True])
def test_a_mode_waiting_to_run_again_does_not_keep_a_stepping_run_from_asking_for_the_next_step(hosted):
    """A mode cut off by a one-request-at-a-time server waits for the others' first attempts; those pause meanwhile,
    and Next step moves them, in the run's own process and through the app's handle (which knows only events)."""
    from agents.hosting.host import HostedRun, LocalHost
    from agents.hosting.worker import RunSpec
    from agents.llm.base import LLMFailure
    from agents.request import RunRequest

    attempts = [[LLMFailure("cut off", reason="interrupted")], [LOOP[-1]]]  # act's first attempt, then its retry

    def make(_settings=None) -> ScriptedModel:
        mode = threading.current_thread().name.removeprefix("mode-")
        return ScriptedModel(attempts.pop(0) if mode == "act" else list(LOOP))

    if hosted:
        spec = RunSpec(RunRequest(QUESTION, ("act", "react"), stepping=True), LLMSettings(), registry=REGISTRY,
                       model_factory=make)
        run, traces = HostedRun(spec, LocalHost()).start(), {m: Trace(m, QUESTION) for m in ("act", "react")}
    else:
        run, traces = stepping_run(("act", "react"), model_factory=make)
    try:
        drain(run, traces, lambda r: r.waiting_for_step)
        held = traces["act"].of(Waiting)
        assert run.paused == ["react"] and held and held[0].rerun  # act is held: it does not run
        assert traces["act"].error is None  # ...and waits to run again: no error is shown meanwhile
        run.step()
        drain(run, traces, lambda r: r.waiting_for_step and len(traces["react"].of(Paused)) == 2)
        run.resume()
        drain(run, traces, lambda r: False)
        assert run.done and traces["react"].answer == "396" and traces["act"].answer == "396"
    finally:
        run.close()
