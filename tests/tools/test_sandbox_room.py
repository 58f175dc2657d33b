"""The room the sandboxes share (tools/sandbox_room.py): the guests' memory budget across processes, sized from a
container's memory, and each run's scratch folder bounded in bytes and files, attacked with the filters off (the
layer in front removed) through python_repl's one-shot sandbox and a CodeAct session."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from tests.tools.session_kit import REGISTRY, drive
from tools import sandbox_room
from tools.sandbox import Limits, run_python
from tools.sandbox_room import Pool
from tools.sandbox_session import RoomWait, SandboxSession, SessionLimits

MB = 1 << 20
OPEN = {"check_policy": False, "restrict": False}  # the filters off: a program meets the boundary alone
SESSION = SessionLimits(cpu_s=5, session_cpu_s=30, memory_mb=256, wall_s=8, step_s=30)


# -- the budget ------------------------------------------------------------------------------------------------------
def test_the_budget_is_half_the_container_s_memory_else_the_machine_s(tmp_path: Path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.max").write_text("8589934592\n")  # an 8 GiB container
    assert sandbox_room.memory_limit(v2) == 8 << 30 and sandbox_room.default_budget_mb(v2) == 4096
    (v2 / "memory.max").write_text("max\n")
    assert sandbox_room.memory_limit(v2) is None
    assert sandbox_room.default_budget_mb(v2) == (sandbox_room.machine_memory() // 2) >> 20
    v1 = tmp_path / "v1" / "memory"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    assert sandbox_room.memory_limit(tmp_path / "v1") is None
    (v1 / "memory.limit_in_bytes").write_text(str(700 << 20))  # smaller than one guest: still one guest
    assert sandbox_room.default_budget_mb(tmp_path / "v1") == sandbox_room.GUEST_MB
    assert sandbox_room.memory_limit(tmp_path / "none") is None


def test_bad_values_are_one_line():
    for read, name, raw in ((sandbox_room.budget_mb, "APP_SANDBOX_MB", "100"),
                            (sandbox_room.budget_mb, "APP_SANDBOX_MB", "lots"),
                            (sandbox_room.scratch_bounds, "APP_SANDBOX_SCRATCH_FILES", "-1")):
        with pytest.raises(ValueError) as bad:
            read({name: raw})
        assert str(bad.value).startswith(name) and "\n" not in str(bad.value)
    assert sandbox_room.scratch_bounds({}) == (64 * MB, 256)


# -- the pool ----------------------------------------------------------------------------------------------------------
def test_leases_stay_within_the_budget_and_waiters_go_in_order(tmp_path: Path):
    pool = Pool(tmp_path / "pool", 1024)
    first, second = pool.try_take(512), pool.try_take(512)
    assert first and second and pool.try_take(512) is None and pool.held_mb() == 1024
    order: list[str] = []

    def wait(name: str) -> None:
        lease = pool.take(512)
        order.append(name)
        time.sleep(0.05)
        lease.release()

    early = threading.Thread(target=wait, args=("early",))
    early.start()
    time.sleep(0.3)
    late = threading.Thread(target=wait, args=("late",))
    late.start()
    time.sleep(0.3)
    assert pool.try_take(512, keep_free_mb=0) is None  # a newcomer never passes a waiting guest
    first.release()
    first.release()  # twice gives back once
    early.join(5)
    late.join(5)
    assert order == ["early", "late"]
    assert pool.take(512, wait_s=0.3) is not None and pool.held_mb() == 1024  # the second's half, and this one
    started = time.monotonic()
    assert pool.take(512, wait_s=0.3) is None and time.monotonic() - started >= 0.3  # full: waited, then gave up


def _hold_and_die(folder: str, ready) -> None:
    pool = Pool(Path(folder), 1024)
    pool.try_take(512)
    ready.set()
    time.sleep(0.3)
    os._exit(0)  # no release: the lease's lock goes with the process


def test_the_pool_is_shared_across_processes_and_a_dead_holder_frees_its_room(tmp_path: Path):
    folder = tmp_path / "pool"
    pool = Pool(folder, 1024)
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    holder = context.Process(target=_hold_and_die, args=(str(folder), ready))
    holder.start()
    assert ready.wait(60)
    mine = pool.try_take(512)
    assert mine is not None and pool.try_take(512) is None and pool.held_mb() == 1024  # the other process's half
    holder.join(30)
    assert pool.held_mb() == 512 and pool.try_take(512) is not None  # swept: its holder is gone
    assert len(list(folder.iterdir())) == 2


@pytest.fixture
def small_pool(monkeypatch, tmp_path: Path) -> Pool:
    """This process's pool, in a folder of the test's own, with room for two of the tests' 256 MB guests."""
    name = os.environ.get(sandbox_room.POOL_VAR) or f"pid-{os.getpid()}"
    pool = Pool(tmp_path / name, 512)
    monkeypatch.setattr(sandbox_room, "_pool", pool)
    return pool


def test_a_session_waits_for_room_says_so_and_starts_when_another_ends(small_pool: Pool):
    with SandboxSession(REGISTRY, SESSION) as first, SandboxSession(REGISTRY, SESSION) as second:
        assert drive(first, "print(1)")[1].ok  # holds 256 of 512
        assert drive(second, "print(2)")[1].ok  # the other 256
        third = SandboxSession(REGISTRY, SESSION)
        threading.Timer(0.5, first.close).start()
        started = time.monotonic()
        records, result = drive(third, "print('third')")
        third.close()
    assert result.ok and result.output == "third\n" and time.monotonic() - started >= 0.4
    assert isinstance(records[0], RoomWait) and "APP_SANDBOX_MB" in records[0].message
    assert records[0].waited_s is None and isinstance(records[1], RoomWait) and records[1].waited_s >= 0.4
    from agents.events import SANDBOX, Waited, Waiting
    from agents.modes.codeact import room_wait

    assert room_wait(records[0]) == Waiting(records[0].message, SANDBOX)  # the panel's notice, then its end:
    assert room_wait(records[1]) == Waited(records[1].waited_s, SANDBOX)  # the wait is not the mode's own time
    assert small_pool.held_mb() == 0 and sandbox_room.pool() is small_pool  # every session gave its memory back


def test_a_one_shot_call_waits_a_little_then_says_the_sandbox_is_full(monkeypatch, small_pool: Pool):
    monkeypatch.setattr("tools.sandbox.ROOM_WAIT_S", 0.5)
    hog = small_pool.try_take(512)
    result = run_python("print(1)", Limits(memory_mb=256))
    assert result.status == "timeout" and "sandbox is full" in result.error and "\n" not in result.error
    hog.release()
    assert run_python("print(1)", Limits(memory_mb=256)).output == "1\n"


# -- the scratch folder ---------------------------------------------------------------------------------------------
MANY_FILES = """
import sys
for i in range(1000):
    with open(f'/f{i}', 'w') as f:
        f.write('x')
    sys.stdout.write(f'{i} ')
    sys.stdout.flush()
"""
MANY_BYTES = """
import sys
for i in range(25):  # 100 MB in 4 MB files, each under the 8 MB a file may hold
    with open(f'/b{i}', 'wb') as f:
        f.write(b'x' * (4 << 20))
    sys.stdout.write(f'{i} ')
    sys.stdout.flush()
"""
DEEP = """
import os, sys
path = ''
for i in range(3000):
    path += '/d'
    os.mkdir(path)
"""


def _last(output: str) -> int:
    return int(output.split()[-1]) if output.split() else -1


@pytest.mark.parametrize("code, bound, made", [(MANY_FILES, "more than 256 files and folders", 256),
                                               (MANY_BYTES, "more than 64 MB", 16)])
def test_a_one_shot_program_is_stopped_at_its_scratch_bound(code, bound, made):
    result = run_python(code, Limits(output_chars=64_000), **OPEN)
    assert result.status == "error" and bound in result.error and "\n" not in result.error.strip()
    assert made - 1 <= _last(result.output) <= made + 16  # within a few writes of the bound, not at the loop's end


@pytest.mark.parametrize("code, bound", [(MANY_FILES, "more than 256 files and folders"),
                                         (MANY_BYTES, "more than 64 MB"), (DEEP, "more than 256 files")])
def test_a_codeact_step_is_stopped_at_its_run_s_scratch_bound_and_the_run_goes_on(code, bound):
    with SandboxSession(REGISTRY, SESSION, **OPEN) as session:
        _, result = drive(session, code)
        assert result.status == "error" and bound in result.error
        _, after = drive(session, "print('still here')")  # a fresh sandbox: the run goes on
        assert after.ok and after.output == "still here\n" and after.restarted


def test_the_bound_is_for_the_whole_run_not_one_step():
    step = "for k in range(5):\n    open(f'/s{n}-{k}', 'wb').write(b'x' * (6 << 20))"  # 30 MB a step
    with SandboxSession(REGISTRY, SESSION, **OPEN) as session:
        results = [drive(session, step.replace("{n}", str(n)))[1] for n in range(3)]
    assert results[0].ok and results[1].ok  # 30, then 60 MB: within the run's 64
    assert results[2].status == "error" and "more than 64 MB" in results[2].error


def test_a_deep_tree_is_stopped_and_deleted():
    import tempfile

    result = run_python(DEEP, Limits(), **OPEN)
    assert result.status == "error" and "more than 256 files and folders" in result.error
    assert not list(Path(tempfile.gettempdir()).glob("repl-*/d/d/d"))  # nothing left behind, however deep


# -- each look at the scratch folder, without the others ------------------------------------------------------------
WATCHED = """
import ctypes, os, sys, time
from tools.sandbox_wasm import HOST_SOURCE

host = {"__name__": "sandbox_host"}
exec(HOST_SOURCE.rsplit("\\nmain()", 1)[0], host)  # the host's functions, without starting a guest
if sys.argv[2] == "polling":
    def no_inotify(*args, **kwargs):
        raise OSError("no inotify on this machine")
    ctypes.CDLL = no_inotify
status_r, status_w = os.pipe()
host["_watch_scratch"]({"scratch": sys.argv[1], "scratch_bytes": 64 << 20, "scratch_files": 256, "status_fd": status_w})
for i in range(20_000):  # a file a millisecond: what a watch that looks every 50 ms must catch up with
    with open(os.path.join(sys.argv[1], f"f{i}"), "w") as f:
        f.write("x")
    time.sleep(0.001)
sys.exit(0)  # never reached while the watch holds
"""


@pytest.mark.parametrize("how, slack", [("inotify", 16), ("polling", 1500)])
def test_the_host_s_watch_stops_a_writer_with_or_without_inotify(tmp_path: Path, how: str, slack: int):
    """The host process's own watch (the guest's sandbox and the app's look at a step's end out of the way): with
    inotify, within a write or two of the bound; without it, by looking every 50 ms."""
    import subprocess
    import sys

    folder = tmp_path / "scratch"
    folder.mkdir()
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", WATCHED, str(folder), how], cwd=root, timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == 6, done.stderr[-500:]  # EXIT_SCRATCH: the watch ended the process
    assert 256 < len(list(folder.iterdir())) <= 256 + slack


def test_the_session_s_look_at_a_step_s_end_holds_alone(tmp_path: Path):
    """The app's own look (``scratch_over``, after each CodeAct step), with the host's watch out of the way: a folder
    past either bound, however it is nested, is one line; one within them is None."""
    within, files, heavy, deep = (tmp_path / name for name in ("within", "files", "heavy", "deep"))
    for folder in (within, files, heavy):
        folder.mkdir()
    for i in range(200):
        (within / f"f{i}").write_bytes(b"x" * 1000)
    for i in range(300):
        (files / f"f{i}").touch()
    for i in range(9):
        (heavy / f"b{i}").write_bytes(b"x" * (8 * MB))
    nested = deep
    for _ in range(300):
        nested = nested / "d"
    nested.mkdir(parents=True)
    assert sandbox_room.scratch_over(str(within)) is None
    for folder, line in ((files, "more than 256 files and folders"), (heavy, "more than 64 MB"),
                         (deep, "more than 256 files and folders")):
        why = sandbox_room.scratch_over(str(folder))
        assert why is not None and line in why and "\n" not in why
    sandbox_room.remove_scratch(str(deep))
    assert not deep.exists()
