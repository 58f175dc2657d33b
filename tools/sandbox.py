"""The ``python_repl`` sandbox: the policy (the teaching layer), then a program per call inside the boundary.

:func:`run_python` applies the static policy (:mod:`tools.sandbox_policy`) first, then sends accepted code on
stdin to a fresh guest interpreter: CPython for WASI in Wasmtime (:mod:`tools.sandbox_wasm`), running
:mod:`tools._sandbox_child` (restricted builtins, module proxies) in a host process of its own, killed as a
group at the wall-clock deadline. ``APP_SANDBOX_FILTERS=off`` skips the policy and the restricted builtins, so
the boundary can be attacked alone (never on a Space). docs/tools.md, "The Python sandbox".
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from settings import read
from tools.hardening import make_non_dumpable
from tools.registry import STOP
from tools.sandbox_policy import ALLOWED_MODULES, ALLOWED_SUBMODULES, BLOCKED_ATTRS, BLOCKED_NAMES, check_code
from tools.sandbox_room import Lease, pool, remove_scratch
from tools.sandbox_wasm import Host, HostEnd, HostLimits, RuntimeMissing, make_scratch, start_host

CHILD_SOURCE = (Path(__file__).with_name("_sandbox_child.py")).read_text(encoding="utf-8")
EXIT_OK, EXIT_ERROR, EXIT_MEMORY = 0, 1, 3
OUTPUT_READ_CAP = 64_000  # bytes kept from the guest's stdout; the guest itself caps at Limits.output_chars
ROOM_WAIT_S = 4.0  # a call waits this long for the sandboxes' memory (APP_SANDBOX_MB); python_repl's timeout is 13 s
SPARE_IDLE_S = 60.0  # a spare nobody took gives its memory back after this long
ROOM_BUSY = ("The Python sandbox is full right now: other programs hold all the memory it may give "
             "(APP_SANDBOX_MB). Nothing was run; try again in a moment.")
FILTERS_VAR = "APP_SANDBOX_FILTERS"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 5
    memory_mb: int = 512
    wall_s: float = 8.0
    output_chars: int = 4000
    nofile: int = 64  # the host process's descriptors (the guest has only its three streams)

    def host(self) -> HostLimits:
        return HostLimits(memory_mb=self.memory_mb, cpu_s=self.cpu_s, cpu_hard=self.cpu_s + 1, nofile=self.nofile)


@dataclass(frozen=True)
class RunResult:
    """``status``: ok | error | refused | timeout | memory | crashed | stopped. ``output`` is what the program printed
    (capped, with a marker); ``error`` the trimmed traceback or the limit that ended it."""

    status: str
    output: str = ""
    error: str = ""
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


_said_kept = False


def filters_enabled() -> bool:
    """Whether the policy and the restricted builtins run (``APP_SANDBOX_FILTERS``, a switch, on by default).

    Off only off a Space: with ``SPACE_ID`` set the filters stay on and one log line says so. A value that is
    not a switch is a :class:`~settings.SettingError` (a ``ValueError``; the app refuses it at start-up)."""
    global _said_kept
    on = read(FILTERS_VAR)
    if not on and os.environ.get("SPACE_ID"):
        if not _said_kept:
            _said_kept = True
            log.warning("%s=off is ignored on a Space (SPACE_ID is set): the sandbox keeps its filters.", FILTERS_VAR)
        return True
    return on


def filters(check_policy: bool | None, restrict: bool | None) -> tuple[bool, bool]:
    """(policy, restricted builtins) for a caller's choices: each left as None follows :func:`filters_enabled`
    (read only then); a caller that names either (a test attacking one layer) keeps the other on."""
    default = filters_enabled() if check_policy is None or restrict is None else True
    return (default if check_policy is None else check_policy), (default if restrict is None else restrict)


def guest_settings(output_chars: int, restrict: bool) -> dict:
    """The guest's settings (sent as JSON): its output cap and, when restricted, the allow-lists and names."""
    cfg: dict = {"out_chars": output_chars, "restrict": restrict}
    if restrict:
        cfg.update(allowed=sorted(ALLOWED_MODULES), allowed_sub=sorted(ALLOWED_SUBMODULES),
                   blocked=sorted(BLOCKED_NAMES), blocked_attrs=sorted(BLOCKED_ATTRS))
    return cfg


@dataclass
class _Started:
    """A host process with its guest booted, waiting for the program on stdin."""

    key: tuple
    host: Host  # its owner is the pid that started it (a forked process must not use its parent's spare)

    @property
    def proc(self) -> subprocess.Popen:
        return self.host.proc


class _Spares:
    """One booted sandbox kept ready per process after the first call, so a call pays for the program's run
    and not for starting Python, Wasmtime and the guest (~0.1 s). It is used once, then replaced. It holds its
    guest's memory like any other: it is made only while room for another guest stays free, and it gives the
    memory back when a guest of this process waits for room or after :data:`SPARE_IDLE_S` unused."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._spare: _Started | None = None
        self._filling: tuple | None = None  # the key of the spare being started
        atexit.register(self.discard)

    def take(self, key: tuple, wait_s: float = 1.0) -> _Started | None:
        """The spare for ``key``; one being started is waited for (it is further along than a new one)."""
        with self._lock:
            self._lock.wait_for(lambda: self._spare is not None or self._filling != key, timeout=wait_s)
            spare, self._spare = self._spare, None
            self._lock.notify_all()  # the thread that parked it stops watching it
        if spare is None:
            return None
        if spare.key == key and spare.host.owner == os.getpid() and spare.proc.poll() is None:
            return spare
        _dispose(spare)
        return None

    def refill(self, key: tuple, limits: Limits, restrict: bool) -> None:
        with self._lock:
            if self._filling is not None or self._spare is not None:
                return
            self._filling = key
        threading.Thread(target=self._fill, args=(key, limits, restrict), name="sandbox-spare", daemon=True).start()

    def _fill(self, key: tuple, limits: Limits, restrict: bool) -> None:
        started = None
        room = pool()
        room.when_crowded(self.discard)
        lease = room.try_take(limits.memory_mb, keep_free_mb=limits.memory_mb)
        if lease is not None:
            try:
                started = _start(key, limits, restrict, lease)
            except (OSError, RuntimeMissing):
                lease.release()
        parked = None
        with self._lock:
            self._filling = None
            if started is not None and self._spare is None:
                self._spare, parked, started = started, started, None
            self._lock.notify_all()
            if parked is not None and not self._lock.wait_for(lambda: self._spare is not parked, SPARE_IDLE_S):
                self._spare, started = None, parked  # nobody came for it: its memory goes back
        if started is not None:
            _dispose(started)

    def discard(self) -> None:
        with self._lock:
            spare, self._spare = self._spare, None
            self._lock.notify_all()
        if spare is not None:
            _dispose(spare)


_spares = _Spares()


def _start(key: tuple, limits: Limits, restrict: bool, lease: Lease) -> _Started:
    """A host with its guest booted, holding ``lease`` (the caller gives the lease back if this raises)."""
    scratch = make_scratch("repl-")
    try:
        argv = ["-I", "-S", "-B", "-c", CHILD_SOURCE, json.dumps(guest_settings(limits.output_chars, restrict))]
        host = start_host(argv, scratch, limits.host(), lease=lease)
    except BaseException:
        remove_scratch(scratch)
        raise
    return _Started(key, host)


def _dispose(started: _Started) -> None:
    _kill_group(started.proc)
    for pipe in (started.proc.stdin, started.proc.stdout, started.proc.stderr):
        if pipe and not pipe.closed:
            pipe.close()
    started.proc.wait()
    started.host.release()


def run_python(code: str, limits: Limits = Limits(), *, check_policy: bool | None = None,
               restrict: bool | None = None) -> RunResult:
    """Run ``code`` in a fresh guest interpreter. Never raises for anything the code does.

    ``check_policy`` / ``restrict`` (layers 1 / 2, the filters) default to :func:`filters_enabled`; tests that
    attack the boundary alone pass False."""
    start = time.monotonic()
    check_policy, restrict = filters(check_policy, restrict)
    if check_policy and not (report := check_code(code)).ok:
        return RunResult("refused", error=report.message(), elapsed_s=time.monotonic() - start)
    make_non_dumpable()  # this process may hold a secret (the CLI's); the app and workers did it at start
    key, stop = (limits, restrict), STOP.get()
    started = _spares.take(key)
    if started is None:
        started = _started(key, limits, restrict, stop)
        if isinstance(started, str):
            status = "stopped" if stop is not None and stop.is_set() else "timeout" if started == ROOM_BUSY \
                else "crashed"
            return RunResult(status, error=started, elapsed_s=time.monotonic() - start)
    _spares.refill(key, limits, restrict)
    proc = started.proc
    try:
        deadline = time.monotonic() + limits.wall_s
        out, err, wall_killed = _communicate(proc, code.encode("utf-8", "replace"), deadline, stop)
        wall_killed = _wait_exit(proc, deadline) or wall_killed
        _kill_group(proc)  # stragglers, while the zombie leader still holds the group id
        rc = proc.wait()
        ended = started.host.end()
    finally:
        _dispose(started)
    if stop is not None and stop.is_set():
        return RunResult("stopped", out, "Stopped.", time.monotonic() - start)
    return _classify(rc, out, err, wall_killed, limits, time.monotonic() - start, ended)


def _started(key: tuple, limits: Limits, restrict: bool, stop: threading.Event | None) -> _Started | str:
    """A new host, once its guest's memory is free (waiting up to :data:`ROOM_WAIT_S`); else the line why not."""
    lease = pool().take(limits.memory_mb, stopping=stop.is_set if stop is not None else lambda: False,
                        wait_s=ROOM_WAIT_S)
    if lease is None:
        return "Stopped." if stop is not None and stop.is_set() else ROOM_BUSY
    try:
        return _start(key, limits, restrict, lease)
    except RuntimeMissing as exc:
        lease.release()
        return str(exc)
    except OSError as exc:
        lease.release()
        return f"Could not start the sandbox: {exc}"


def _wait_exit(proc: subprocess.Popen, deadline: float) -> bool:
    """Wait for the child to exit *without reaping it* (so its group id stays valid for killpg);
    SIGKILL the group at the deadline. Returns whether the deadline killed it."""
    killed = False
    if not hasattr(os, "waitid"):  # macOS: no WNOWAIT; reap, accepting a tiny pid-reuse window for killpg
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            killed = True
        return killed
    pause = 0.0005
    while True:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                return killed
        except ChildProcessError:
            return killed
        if time.monotonic() > deadline and not killed:
            _kill_group(proc)
            killed = True
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def _communicate(proc: subprocess.Popen, data: bytes, deadline: float,
                 stop: threading.Event | None = None) -> tuple[str, str, bool]:
    """Feed stdin, read stdout/stderr with caps, and SIGKILL the group at the wall-clock deadline, or within
    ~25 ms of ``stop`` (the run's Stop)."""
    tick = 0.5 if stop is None else 0.025
    caps = {proc.stdout.fileno(): OUTPUT_READ_CAP, proc.stderr.fileno(): 16_384}
    bufs: dict[int, bytearray] = {fd: bytearray() for fd in caps}
    wall_killed = False
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the child died before reading; its exit status tells why
    with selectors.DefaultSelector() as sel:
        for fd in caps:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0 and not wall_killed:
                _kill_group(proc)
                wall_killed = True
                deadline = time.monotonic() + 2.0  # drain what is left, then give up
                continue
            if remaining <= 0:
                break
            if stop is not None and stop.is_set() and not wall_killed:
                _kill_group(proc)
                wall_killed = True
                deadline = time.monotonic() + 2.0
                continue
            for key, _ in sel.select(timeout=min(remaining, tick)):
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                room = caps[key.fd] - len(bufs[key.fd])
                if room > 0:
                    bufs[key.fd] += chunk[:room]
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    return _decode(bufs[out_fd]), _decode(bufs[err_fd]), wall_killed


def _decode(buf: bytearray) -> str:
    return bytes(buf).decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the host's group, only while its leader is unreaped (after that the id may be another's)."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _classify(rc: int, out: str, err: str, wall_killed: bool, limits: Limits, elapsed: float,
              ended: HostEnd | None = None) -> RunResult:
    """The result, from the exit status and what the host said on its status channel: only the host says that the
    sandbox could not be set up or that the runtime stopped the program (a guest's ``os._exit(4)`` is its own)."""
    err = err.strip()
    if len(out) > limits.output_chars + 200:  # only if the child's own cap was bypassed
        out = out[: limits.output_chars]
    if len(out) >= limits.output_chars and "…[output truncated" not in out:
        out += "\n…[output truncated]"  # killed before the child could write its own marker
    if rc == EXIT_OK and not wall_killed:
        return RunResult("ok", out, "", elapsed)
    if ended is not None and ended.kind == "scratch":
        return RunResult("error", out, ended.message, elapsed)
    if ended is not None and ended.by_host:
        return RunResult("crashed", out, ended.message, elapsed)
    if rc == EXIT_ERROR:
        return RunResult("error", out, err, elapsed)
    if rc == EXIT_MEMORY:
        return RunResult("memory", out, f"Memory limit exceeded ({limits.memory_mb} MB).", elapsed)
    if wall_killed:
        return RunResult(
            "timeout", out, f"Timed out after {limits.wall_s:g} s (wall-clock limit; the program was stopped).", elapsed
        )
    if rc in (-signal.SIGXCPU, -signal.SIGKILL):
        return RunResult("timeout", out, f"Timed out after {limits.cpu_s:g} s (CPU limit).", elapsed)
    if rc in (-signal.SIGSEGV, -signal.SIGABRT, -signal.SIGBUS):
        name = signal.Signals(-rc).name
        return RunResult(
            "crashed",
            out,
            f"The program crashed ({name}), most likely by exhausting the memory or stack limit.",
            elapsed,
        )
    reason = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
    return RunResult("crashed", out, f"The program ended unexpectedly ({reason}). {err}".strip(), elapsed)
