"""What one step of the persistent sandbox is (:mod:`tools.sandbox_session`): its limits, its two clocks,
the call records it yields as they happen, its result, and why a process that died ended it."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass

from tools.sandbox_wasm import HostEnd


@dataclass(frozen=True)
class SessionLimits:
    """The persistent sandbox's limits; the memory, output and descriptor ones are the one-shot sandbox's."""

    cpu_s: int = 5  # CPU seconds per step
    session_cpu_s: int = 60  # CPU seconds for all the steps of a run (a hard limit)
    memory_mb: int = 512
    wall_s: float = 8.0  # the program's own time per step; time inside tools is not counted
    step_s: float = 60.0  # a whole step, tools included
    start_s: float = 15.0  # starting the process (not part of a step's time)
    output_chars: int = 4000
    answer_chars: int = 4000
    nofile: int = 64  # the host process's descriptors (the guest has only its three streams)
    max_calls: int = 20  # tool calls per step
    max_frame: int = 262_144  # bytes of one frame from the child

    def __post_init__(self) -> None:
        if self.session_cpu_s <= self.cpu_s:
            raise ValueError("session_cpu_s must be larger than cpu_s")


@dataclass(frozen=True)
class CallStarted:
    """The program called a tool (``index`` counts the step's calls from 1); it waits for the result."""

    index: int
    tool: str
    args: dict


@dataclass(frozen=True)
class CallFinished:
    """What the program got back: the tool's text or the error it raises as ``ToolError``."""

    index: int
    tool: str
    args: dict
    output: str
    is_error: bool = False
    elapsed_s: float = 0.0
    cached: bool = False


@dataclass(frozen=True)
class RoomWait:
    """The run's sandbox waits for memory before it starts: the other guests hold ``APP_SANDBOX_MB``
    (``tools/sandbox_room.py``). It starts, or the step stops, by itself; once it has its room, a second record
    says how long it waited (``waited_s``)."""

    message: str
    waited_s: float | None = None


CallRecord = CallStarted | CallFinished | RoomWait


@dataclass(frozen=True)
class StepResult:
    """``status``: ok | error | refused | timeout | memory | crashed | stopped. ``output`` is what the program
    printed (capped, with a marker), ``error`` the trimmed traceback or the limit that ended it, ``final`` the
    answer given to ``final_answer``; ``restarted``: a fresh process ran it (earlier variables are gone)."""

    status: str
    output: str = ""
    error: str = ""
    final: str | None = None
    elapsed_s: float = 0.0
    tool_s: float = 0.0
    calls: int = 0
    restarted: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Clock:
    """A step's two clocks: the program's own time (paused during tool calls) and the whole step's."""

    def __init__(self, limits: SessionLimits) -> None:
        self.limits = limits
        self.start = self._since = time.monotonic()
        self.child_s = self.tool_s = 0.0
        self._paused_at: float | None = None

    def pause(self) -> None:
        self._paused_at = time.monotonic()
        self.child_s += self._paused_at - self._since

    def resume(self) -> None:
        now = time.monotonic()
        self.tool_s += now - (self._paused_at or now)
        self._since, self._paused_at = now, None

    def child_left(self) -> float:
        return self.limits.wall_s - (self.child_s + time.monotonic() - self._since)

    def total_left(self) -> float:
        return self.limits.step_s - (time.monotonic() - self.start)

    def elapsed(self) -> float:
        return time.monotonic() - self.start


def exit_reason(rc: int | None, err: str, limits: SessionLimits, said: HostEnd | None = None) -> tuple[str, str]:
    """Why the process ended mid-step: a limit's signal, the host's own line (a setup failure, a trap), or the
    guest's exit, whatever status it chose (a guest cannot pass for the host: only its status channel says)."""
    if rc == -signal.SIGXCPU:
        return "timeout", f"Timed out after {limits.cpu_s:g} s (CPU limit). The sandbox was stopped."
    if rc == -signal.SIGKILL:
        return "timeout", f"The run's programs used their whole CPU time ({limits.session_cpu_s} s in all)."
    if rc in (-signal.SIGSEGV, -signal.SIGABRT, -signal.SIGBUS):
        return "crashed", (f"The program crashed ({signal.Signals(-rc).name}), most likely by exhausting the "
                           "memory or stack limit.")
    if said is not None and said.kind == "scratch":  # the program's doing: the run goes on in a fresh sandbox
        return "error", said.message
    if said is not None and said.by_host:
        return "crashed", said.message
    if said is not None:
        return "crashed", f"The program ended the sandbox (exit status {said.code})."
    if rc is None:
        reason = "it did not exit"
    else:
        reason = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
    return "crashed", f"The sandbox process ended unexpectedly ({reason}). {err}".strip()
