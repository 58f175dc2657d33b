"""A persistent sandbox for CodeAct: one guest per run, programs run step by step, tools called back.

The sandbox of :mod:`tools.sandbox`, extended rather than loosened: every program still passes the static
policy (unless the filters are off) and runs in the same boundary, a guest interpreter in Wasmtime in a host
process of its own (:mod:`tools.sandbox_wasm`), but the guest and its namespace live for the whole run,
and the run's tools are functions that call back over a checked pipe (:mod:`tools.sandbox_channel`), so
they run in the app, through the registry. The session, the channel and the limits per step are described
in docs/tools.md, "CodeAct and the sandbox session".
"""

from __future__ import annotations

import builtins
import concurrent.futures
import keyword
import os
import subprocess
import threading
import time
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path

from tools.hardening import make_non_dumpable
from tools.registry import ToolRegistry, ToolResult
from tools.sandbox import CHILD_SOURCE, filters, guest_settings
from tools.sandbox_channel import ProtocolError, check_call, check_done
from tools.sandbox_io import ChildIO
from tools.sandbox_policy import check_code
from tools.sandbox_room import Lease, pool, remove_scratch, scratch_over
from tools.sandbox_step import (
    CallFinished,
    CallRecord,
    CallStarted,
    Clock,
    RoomWait,
    SessionLimits,
    StepResult,
    exit_reason,
)
from tools.sandbox_wasm import HostLimits, RuntimeMissing, cpu_seconds, make_scratch, raise_cpu_limit, start_host

__all__ = ["CallFinished", "CallRecord", "CallStarted", "SandboxSession", "SessionLimits", "StepResult",
           "callable_tools"]

SESSION_SOURCE = CHILD_SOURCE + "\n\n" + Path(__file__).with_name("_sandbox_session_child.py").read_text("utf-8")
POLL_S = 0.05
MAX_TO_CHILD = 1_000_000  # a program is at most 50,000 characters, ~6 bytes each once escaped
RESERVED = frozenset({"final_answer", "ToolError"})
NOT_CALLABLE = frozenset({"python_repl"})  # the program is Python already: a second sandbox adds nothing
STOPPED = "Stopped."
WAITING_FOR_ROOM = ("waiting for room in the Python sandbox: other runs' programs hold all the memory it may give "
                    "(APP_SANDBOX_MB)")
DEFAULT_LIMITS = SessionLimits()


def callable_tools(registry: ToolRegistry) -> ToolRegistry:
    """The tools a sandboxed program may call: the run's tools whose names are plain, free Python names
    (not a keyword, a builtin, ``final_answer``), except ``python_repl``."""
    names = [t.name for t in registry.tools
             if t.name.isidentifier() and not t.name.startswith("_") and not keyword.iskeyword(t.name)
             and not hasattr(builtins, t.name) and t.name not in RESERVED | NOT_CALLABLE]
    return registry.subset(names)


class SandboxSession:
    """One CodeAct run's sandbox process. ``run(code)`` per step; ``close()`` always (or use ``with``).

    ``check_policy`` / ``restrict`` (the policy / the restricted builtins) default to
    :func:`tools.sandbox.filters_enabled`, as in :func:`tools.sandbox.run_python`.
    """

    def __init__(self, registry: ToolRegistry, limits: SessionLimits = DEFAULT_LIMITS, *,
                 cancel: threading.Event | None = None, check_policy: bool | None = None,
                 restrict: bool | None = None) -> None:
        self.registry, self.limits, self.cancel = callable_tools(registry), limits, cancel
        self.check_policy, self.restrict = filters(check_policy, restrict)
        self._child: ChildIO | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._busy = self._closed = False
        self._starts = self._steps = 0

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def tools(self) -> list[str]:
        return self.registry.names

    @property
    def pid(self) -> int | None:
        """The sandbox process's id while one runs (tests check it is gone after ``close``)."""
        child = self._child
        return child.proc.pid if child is not None else None

    def close(self) -> None:
        """End the session from any thread: a step under way stops within ~50 ms; the process is killed and its
        pipes and folder are removed (by the running step, or here when none runs)."""
        self._stop.set()
        with self._lock:
            self._closed = True
            child = self._child
            if child is not None:
                child.kill()
            if not self._busy:
                self._discard()

    def run(self, code: str) -> Generator[CallRecord, None, StepResult]:
        """Run one program in the session: yields its tool calls as they happen, returns its result."""
        start = time.monotonic()
        if self.check_policy:
            report = check_code(code)
            if not report.ok:
                return StepResult("refused", error=report.message(), elapsed_s=time.monotonic() - start)
        with self._lock:
            if self._closed or self._stopping():
                return StepResult("stopped", error=STOPPED)
            self._busy = True
        finished = False
        try:
            restarted = self._child is None and self._starts > 0
            if self._child is None and (failed := (yield from self._start())) is not None:
                finished = True
                return failed
            self._steps += 1
            result = yield from self._step(code, self._steps)
            finished = True
            return replace(result, restarted=restarted, elapsed_s=time.monotonic() - start)
        finally:
            with self._lock:
                self._busy = False
                if not finished or self._closed:  # abandoned mid-step (the caller stopped iterating) or closed
                    self._discard()

    # -- the process -----------------------------------------------------------------------------------

    def _stopping(self) -> bool:
        return self._stop.is_set() or (self.cancel is not None and self.cancel.is_set())

    def _start(self) -> Generator[CallRecord, None, StepResult | None]:
        """Start the host and its guest once its memory is free (a :class:`RoomWait` record while it is not), and
        wait for the guest's greeting; a StepResult says why it could not."""
        lease = yield from self._room()
        if lease is None:
            return StepResult("stopped", error=STOPPED)
        make_non_dumpable()  # this process may hold a secret (the CLI's); the app and workers did it at start
        to_child, from_child = os.pipe(), os.pipe()
        scratch = make_scratch("codeact-")
        limits = self.limits
        host = HostLimits(memory_mb=limits.memory_mb, cpu_s=limits.cpu_s, cpu_hard=limits.session_cpu_s,
                          nofile=limits.nofile)
        try:
            started = start_host(self._argv(), scratch, host, stdin=subprocess.DEVNULL,
                                 channel=(to_child[0], from_child[1]), lease=lease)
        except (OSError, RuntimeMissing) as exc:
            for fd in (*to_child, *from_child):
                os.close(fd)
            remove_scratch(scratch)
            lease.release()
            reason = str(exc) if isinstance(exc, RuntimeMissing) else f"Could not start the sandbox: {exc}"
            return StepResult("crashed", error=reason)
        os.close(to_child[0])
        os.close(from_child[1])
        self._child = ChildIO(started, from_child[0], to_child[1], self.limits)
        self._starts += 1
        return self._greeting()

    def _room(self) -> Generator[CallRecord, None, Lease | None]:
        """The guest's memory from the sandboxes' budget, waited for as long as it takes (None: stopped); a wait is
        said as it begins and, once the room is there, how long it took."""
        waiting, began = pool().waiting(self.limits.memory_mb, self._stopping), None
        try:
            while True:
                try:
                    next(waiting)
                except StopIteration as done:
                    if began is not None and done.value is not None:
                        yield RoomWait(WAITING_FOR_ROOM, round(time.monotonic() - began, 3))
                    return done.value
                began = time.monotonic()
                yield RoomWait(WAITING_FOR_ROOM)
        finally:
            waiting.close()

    def _argv(self) -> list[str]:
        import json

        limits = self.limits
        cfg = guest_settings(limits.output_chars, self.restrict)
        cfg.update(answer_chars=limits.answer_chars, max_frame=limits.max_frame, max_in=MAX_TO_CHILD,
                   tools=[[t.name, t.param_names] for t in self.registry.tools])
        return ["-I", "-S", "-B", "-c", SESSION_SOURCE, "--session", json.dumps(cfg)]

    def _cpu_allowance(self) -> None:
        """A fresh CPU allowance for the next step: soft limit = used + cpu_s, never above the run's limit."""
        child = self._child
        assert child is not None
        used = cpu_seconds(child.proc.pid)
        soft = min(round(used) + self.limits.cpu_s, self.limits.session_cpu_s)
        raise_cpu_limit(child.proc.pid, soft, self.limits.session_cpu_s)

    def _greeting(self) -> StepResult | None:
        child = self._child
        assert child is not None
        deadline = time.monotonic() + self.limits.start_s
        try:
            while (frame := child.next_frame()) is None:
                if self._stopping():
                    return self._end("stopped", STOPPED)
                if child.eof or time.monotonic() > deadline:
                    said = child.ended() if child.eof else None
                    if said is not None and said.by_host:
                        return self._end("crashed", said.message)
                    err = child.errors() or ("the sandbox did not start in time" if not child.eof else "")
                    return self._end("crashed", f"The sandbox could not be set up. {err}".strip())
                child.pump(POLL_S)
        except ProtocolError as exc:
            return self._end("crashed", f"The sandbox could not be set up: it sent {exc}.")
        if frame.get("op") != "ready":
            return self._end("crashed", "The sandbox could not be set up: it did not greet.")
        return None

    def _discard(self) -> None:
        """Kill the process (if any) and free its pipes and folder. Called with the lock held."""
        child, self._child = self._child, None
        if child is not None:
            child.close()

    def _end(self, status: str, error: str, clock: Clock | None = None, calls: int = 0) -> StepResult:
        """End the step by ending the process: what it printed so far stays in the result."""
        child = self._child
        output = child.output() if child is not None else ""
        if child is not None:
            child.kill()
        with self._lock:
            self._discard()
        elapsed, tool_s = (clock.elapsed(), clock.tool_s) if clock else (0.0, 0.0)
        return StepResult(status, output, error, None, elapsed, tool_s, calls)

    # -- one step ----------------------------------------------------------------------------------------

    def _step(self, code: str, n: int) -> Generator[CallRecord, None, StepResult]:
        child, limits, clock = self._child, self.limits, Clock(self.limits)
        assert child is not None
        calls = 0
        try:
            child.begin_step()
            self._cpu_allowance()
            child.send({"op": "run", "step": n, "code": code})
            while True:
                if (ended := self._over(clock, calls)) is not None:
                    return ended
                child.pump(min(POLL_S, max(0.0, clock.child_left())))
                frame = child.next_frame()
                if frame is None:
                    if child.eof:
                        return self._died(clock, calls)
                    continue
                if frame["op"] == "done":
                    return self._done(frame, n, clock, calls)
                if frame["op"] != "call":
                    raise ProtocolError("a second greeting")
                calls += 1
                if calls > limits.max_calls + 1:
                    return self._end("error", f"Stopped: the program went on calling tools after the limit of "
                                              f"{limits.max_calls} calls in one step.", clock, calls)
                reply = yield from self._call(frame, calls, clock)
                if isinstance(reply, StepResult):
                    return reply
                child.send(reply)
        except ProtocolError as exc:
            return self._end("crashed", f"The program broke the tool channel's protocol ({exc}); it was stopped.",
                             clock, calls)

    def _over(self, clock: Clock, calls: int) -> StepResult | None:
        """The step's end when Stop was pressed or a clock ran out, else None."""
        if self._stopping():
            return self._end("stopped", STOPPED, clock, calls)
        if clock.child_left() <= 0:
            return self._end("timeout", f"Timed out after {self.limits.wall_s:g} s (wall-clock limit; time spent in "
                                        "tools is not counted). The program was stopped.", clock, calls)
        if clock.total_left() <= 0:
            return self._end("timeout", f"Timed out after {self.limits.step_s:g} s in all (tools included). The "
                                        "program was stopped.", clock, calls)
        return None

    def _call(self, frame: dict, index: int, clock: Clock) -> Generator[CallRecord, None, dict | StepResult]:
        """One call: checked, reported as it starts, run through the registry, reported as it ends."""
        call = check_call(frame, self.registry.names, index, self.limits.max_calls)
        yield CallStarted(index, call.tool, call.args)
        clock.pause()
        result = (ToolResult(call.refusal, is_error=True) if call.refusal
                  else self._run_tool(call.tool, call.args, clock, index))
        clock.resume()
        if isinstance(result, StepResult):
            yield CallFinished(index, call.tool, call.args, "(abandoned: the step ended while the tool ran)", True,
                               clock.tool_s)
            return result
        yield CallFinished(index, call.tool, call.args, result.output, result.is_error, result.elapsed_s, result.cached)
        key = "error" if result.is_error else "output"
        return {"op": "reply", "ok": not result.is_error, key: result.output}

    def _run_tool(self, name: str, args: dict, clock: Clock, index: int) -> ToolResult | StepResult:
        """The registry's call, waited for in slices so that Stop and the step's clock still end it."""
        future: concurrent.futures.Future = concurrent.futures.Future()

        def target() -> None:
            try:
                future.set_result(self.registry.call(name, args))
            except BaseException as exc:  # noqa: BLE001 - delivered through the future
                future.set_exception(exc)

        threading.Thread(target=target, name=f"codeact-{name}", daemon=True).start()
        while True:
            try:
                return future.result(timeout=POLL_S)
            except concurrent.futures.TimeoutError:
                if (ended := self._over(clock, index)) is not None:
                    return ended
            except Exception as exc:  # noqa: BLE001 - registry.call never raises; a bug here is the call's error
                return ToolResult(f"{name} failed: {type(exc).__name__}: {exc}", is_error=True)

    def _done(self, frame: dict, n: int, clock: Clock, calls: int) -> StepResult:
        child = self._child
        assert child is not None
        status, error, final = check_done(frame, n, self.limits.answer_chars + 4000)
        child.drain()
        if status == "memory":  # the namespace may hold what filled the memory: start afresh next time
            return self._end("memory", f"Memory limit exceeded ({self.limits.memory_mb} MB).", clock, calls)
        if (over := scratch_over(child.workdir)) is not None:  # passed just before the step ended
            return self._end("error", over, clock, calls)
        return StepResult(status, child.output(), error, final, clock.elapsed(), clock.tool_s, calls)

    def _died(self, clock: Clock, calls: int) -> StepResult:
        """The process ended by itself mid-step: which limit (or crash) ended it."""
        child = self._child
        assert child is not None
        if self._stopping():  # close() from another thread killed it
            return self._end("stopped", STOPPED, clock, calls)
        rc = child.wait_exit(2.0)
        said = child.ended(0) if rc is not None else None
        child.drain()
        status, error = exit_reason(rc, child.errors(), self.limits, said)
        return self._end(status, error, clock, calls)
