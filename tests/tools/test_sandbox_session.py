"""The persistent sandbox (CodeAct's): state across steps, tools as functions, live call records, limits
per step, and a Stop or close that leaves nothing behind."""

from __future__ import annotations

import os
import threading
import time

import pytest
from session_kit import CALLS, FAST, REGISTRY, alive, drive, finished, later, open_fds, started

from tools import default_registry
from tools.registry import ToolRegistry
from tools.sandbox_session import CallFinished, CallStarted, SandboxSession, SessionLimits, callable_tools


@pytest.fixture
def session():
    CALLS.clear()
    s = SandboxSession(REGISTRY, FAST)
    yield s
    s.close()


def test_variables_imports_and_functions_persist_across_steps(session):
    assert drive(session, "import math\nx = 6\ndef sq(n):\n    return n * n")[1].ok
    records, result = drive(session, "print(sq(x), math.floor(2.5))\nx + 1")
    assert result.ok and result.output == "36 2\n7\n" and records == [] and not result.restarted


def test_a_tool_is_a_function_whose_call_is_reported_as_it_starts_and_ends(session):
    records, result = drive(session, "r = calculate('2+3')\nprint('sum', r, type(r).__name__)")
    assert result.ok and result.output == "sum 5 str\n" and result.calls == 1
    assert records == [CallStarted(1, "calculate", {"expression": "2+3"}),
                       CallFinished(1, "calculate", {"expression": "2+3"}, "5", False, records[1].elapsed_s, False)]
    assert CALLS == [("calculate", {"expression": "2+3"})]


def test_positional_keyword_and_default_arguments(session):
    records, result = drive(session, "print(echo('ab', 2), echo(text='c'), echo('d', times=3))")
    assert result.output == "abab c ddd\n"
    assert [r.args for r in records if isinstance(r, CallStarted)] == [
        {"text": "ab", "times": 2}, {"text": "c"}, {"text": "d", "times": 3}]
    _, wrong = drive(session, "echo('a', 1, 2)")
    assert wrong.status == "error" and "echo() takes 2 positional argument(s) (text, times), 3 given" in wrong.error


def test_records_are_live_the_tool_runs_only_after_its_start_was_seen(session):
    seen: list[str] = []

    def on_record(record):
        seen.append(f"{type(record).__name__}:{len(CALLS)}")

    drive(session, "calculate('1+1')\ncalculate('2+2')", on_record)
    assert seen == ["CallStarted:0", "CallFinished:1", "CallStarted:1", "CallFinished:2"]


def test_a_tool_error_is_raised_in_the_program_as_ToolError_and_can_be_caught(session):
    records, result = drive(session, "print('before')\nbroken('x')")
    assert result.status == "error" and result.output == "before\n"
    assert "ToolError: broken failed: RuntimeError: backend exploded" in result.error
    assert finished(records)[0].is_error and "backend exploded" in finished(records)[0].output
    _, caught = drive(session, "try:\n    broken('y')\nexcept ToolError as e:\n    print('caught:', e)")
    assert caught.ok and caught.output.startswith("caught: broken failed")


def test_the_registry_is_the_same_one_cache_and_truncation_included(session):
    records, _ = drive(session, "lookup('a')\nlookup('A ')")
    assert [r.cached for r in finished(records)] == [False, True] and CALLS == [("lookup", {"query": "a"})]
    records, result = drive(session, "len(echo('x', 5000))")
    assert finished(records)[0].output.endswith("[truncated 1000 more characters]") and result.output == "4034\n"


def test_final_answer_ends_the_program_at_once(session):
    _, result = drive(session, "print('checking')\nfinal_answer(6 * 7)\nprint('never')")
    assert result.ok and result.final == "42" and result.output == "checking\n"
    _, next_step = drive(session, "print('next')")
    assert next_step.final is None


def test_a_refused_program_never_reaches_the_process(session):
    _, result = drive(session, "import os\nos.system('id')")
    assert result.status == "refused" and "import of 'os'" in result.error and session.pid is None


def test_errors_keep_their_output_and_a_trimmed_traceback_that_names_the_step(session):
    drive(session, "def f(n):\n    return 10 / n")
    _, result = drive(session, "print('a')\nf(0)")
    assert result.status == "error" and result.output == "a\n"
    assert 'File "<step 2>", line 2, in <module>' in result.error and 'File "<step 1>", line 2, in f' in result.error
    assert "return 10 / n" in result.error and result.error.rstrip().endswith("ZeroDivisionError: division by zero")
    _, bye = drive(session, "raise SystemExit(3)")
    assert bye.status == "error" and bye.error == "SystemExit: 3"
    assert drive(session, "print('still here')")[1].output == "still here\n"  # the process lives on


def test_output_is_capped_per_step(session):
    _, flood = drive(session, "for i in range(10000):\n    print('spam' * 10)")
    assert flood.output.startswith("spamspam") and "output truncated" in flood.output and len(flood.output) < 4300
    assert drive(session, "print('fresh')")[1].output == "fresh\n"


def test_time_inside_tools_is_not_on_the_programs_wall_clock():
    limits = SessionLimits(cpu_s=2, session_cpu_s=30, wall_s=1.5, step_s=20)
    with SandboxSession(REGISTRY, limits) as s:
        _, result = drive(s, "nap(1)\nnap(1)\nprint('done')")
        assert result.ok and result.output == "done\n" and result.tool_s >= 2 > limits.wall_s
        _, slow = drive(s, "import time\ntime.sleep(5)")
        assert slow.status == "timeout" and "wall-clock limit" in slow.error and slow.elapsed_s < 3


def test_a_whole_step_is_bounded_tools_included():
    limits = SessionLimits(cpu_s=2, session_cpu_s=30, wall_s=4, step_s=1.5)
    with SandboxSession(REGISTRY, limits) as s:
        start = time.monotonic()
        records, result = drive(s, "for i in range(5):\n    nap(0.6)")
        assert result.status == "timeout" and "1.5 s in all (tools included)" in result.error
        assert time.monotonic() - start < 2.5
        assert finished(records)[-1].is_error and "abandoned" in finished(records)[-1].output


def test_cpu_is_limited_per_step_and_a_step_that_hits_it_restarts_the_sandbox():
    limits = SessionLimits(cpu_s=1, session_cpu_s=30, wall_s=10, step_s=20)
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6:\n    pass"
    with SandboxSession(REGISTRY, limits) as s:
        for _ in range(3):  # 1.8 s of CPU in all: each step has its own budget
            assert drive(s, burn)[1].ok
        drive(s, "keep = 1")
        _, spin = drive(s, "while True:\n    pass")
        assert spin.status == "timeout" and "CPU limit" in spin.error and spin.elapsed_s < 4
        _, after = drive(s, "print(keep)")
        assert after.restarted and "NameError: name 'keep' is not defined" in after.error


def test_the_memory_limit_ends_the_step_and_the_next_starts_afresh(session):
    drive(session, "keep = 1")
    _, result = drive(session, "x = 'a' * 10**9")
    assert result.status == "memory" and "256 MB" in result.error
    _, after = drive(session, "print('ok')")
    assert after.ok and after.restarted


def test_stop_from_another_thread_ends_a_running_program_promptly():
    cancel = threading.Event()
    with SandboxSession(REGISTRY, FAST, cancel=cancel) as s:
        drive(s, "x = 1")
        pid = s.pid
        later(0.3, cancel.set)
        start = time.monotonic()
        _, result = drive(s, "import time\ntime.sleep(30)")
        assert result.status == "stopped" and time.monotonic() - start < 1.0
        assert not alive(pid) and s.pid is None
        assert drive(s, "print(1)")[1].status == "stopped"  # a stopped run starts nothing new


def test_stop_during_a_tool_call_does_not_wait_for_the_tool():
    cancel = threading.Event()
    with SandboxSession(REGISTRY, FAST, cancel=cancel) as s:
        drive(s, "x = 1")  # started first: the Stop below lands while the tool runs, not while the guest boots
        later(0.3, cancel.set)
        start = time.monotonic()
        records, result = drive(s, "nap(3)")
        assert result.status == "stopped" and time.monotonic() - start < 1.0
        assert isinstance(records[-1], CallFinished) and records[-1].is_error


def test_close_from_another_thread_mid_step_and_nothing_is_left_behind():
    fds, threads = open_fds(), threading.active_count()
    s = SandboxSession(REGISTRY, FAST)
    drive(s, "x = 1")
    pid, workdir = s.pid, s._child.workdir
    later(0.3, s.close)
    _, result = drive(s, "while True:\n    pass")
    assert result.status == "stopped" and not alive(pid) and not os.path.exists(workdir)
    time.sleep(0.1)
    assert open_fds() == fds and threading.active_count() == threads


def test_close_when_idle_and_an_abandoned_step_kill_the_process():
    fds = open_fds()
    s = SandboxSession(REGISTRY, FAST)
    drive(s, "x = 1")
    pid = s.pid
    s.close()
    s.close()  # twice is fine
    assert not alive(pid) and open_fds() == fds
    s = SandboxSession(REGISTRY, FAST)
    step = s.run("nap(0.2)\nimport time\ntime.sleep(30)")
    assert isinstance(next(step), CallStarted)
    pid = s.pid
    step.close()  # the consumer stops iterating mid-step (the mode's generator was closed)
    assert not alive(pid) and s.pid is None
    s.close()
    assert open_fds() == fds


def test_callable_tools_are_plain_names_and_python_repl_is_left_out():
    names = callable_tools(default_registry()).names
    assert names == ["duckduckgo_search", "wikipedia_search", "get_weather", "calculate"]
    with SandboxSession(ToolRegistry([]), FAST) as s:
        _, result = drive(s, "final_answer(1 + 1)")
        assert result.final == "2" and s.tools == []
        assert started(drive(s, "calculate('1+1')")[0]) == []
