"""Layers 2 and 3 of the ``python_repl`` sandbox: a fresh, limited process per call.

:func:`run_python` applies the static policy (:mod:`tools.sandbox_policy`) first, then pipes accepted code
to a new ``python -I -S -B`` running :mod:`tools._sandbox_child` (restricted builtins, module proxies,
resource limits), with no environment, in a temporary folder, killed as a group at the wall-clock deadline.
Model-written code is hostile; the layers, and what they do not hold, are in docs/tools.md, "The Python
sandbox".
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tools.sandbox_policy import ALLOWED_MODULES, ALLOWED_SUBMODULES, BLOCKED_ATTRS, BLOCKED_NAMES, check_code

CHILD_SOURCE = (Path(__file__).with_name("_sandbox_child.py")).read_text(encoding="utf-8")
EXIT_OK, EXIT_ERROR, EXIT_MEMORY, EXIT_SETUP = 0, 1, 3, 4
NOBODY_UID = 65534
OUTPUT_READ_CAP = 64_000  # bytes kept from the child's stdout; the child itself caps at Limits.output_chars


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 5
    memory_mb: int = 512
    wall_s: float = 8.0
    output_chars: int = 4000
    nofile: int = 16


@dataclass(frozen=True)
class RunResult:
    """``status``: ok | error | refused | timeout | memory | crashed. ``output`` is what the program printed
    (capped, with a marker); ``error`` the trimmed traceback or the limit that ended it."""

    status: str
    output: str = ""
    error: str = ""
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


_harden_lock = threading.Lock()
_hardened = False


def harden_parent_process() -> bool:
    """Make this (the app's) process non-dumpable so a same-uid child cannot read ``/proc/<pid>/environ``
    or ptrace it. Side effect: no core dumps and no same-user debugger attach (py-spy) for the app."""
    global _hardened
    with _harden_lock:
        if _hardened:
            return True
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_dumpable = 4
            _hardened = libc.prctl(pr_set_dumpable, 0, 0, 0, 0) == 0
        except (OSError, AttributeError):
            _hardened = False
        return _hardened


# Stdlib modules that the allowed ones import lazily, inside functions (found by scanning their source:
# Counter.most_common -> heapq, strptime -> _strptime, re's parser -> unicodedata/warnings, ...). After the
# drop to ``nobody`` the stdlib may be unreadable, so they are imported beforehand; user code cannot name them.
LAZY_DEPS: dict[str, tuple[str, ...]] = {
    "collections": ("copy", "heapq"),
    "datetime": ("_strptime",),
    "time": ("_strptime",),
    "re": ("warnings", "unicodedata", "re._constants"),
    "string": ("warnings", "unicodedata"),
    "random": ("statistics", "time"),
    "fractions": ("decimal",),
    "operator": ("functools",),
}
CODEC_MODULES = ("encodings.utf_16", "encodings.utf_32", "encodings.latin_1", "encodings.ascii", "encodings.cp1252")


def _helper_modules(imports: set[str], code: str) -> set[str]:
    helpers = {dep for name in imports for dep in LAZY_DEPS.get(name, ())}
    if "encode" in code or "decode" in code:
        helpers.update(CODEC_MODULES)
    return helpers


def _drop_uid() -> int:
    if os.geteuid() != 0:
        return -1
    try:
        import pwd

        return pwd.getpwnam("nobody").pw_uid
    except (KeyError, ImportError):
        return NOBODY_UID


def run_python(code: str, limits: Limits = Limits(), *, check_policy: bool = True, restrict: bool = True) -> RunResult:
    """Run ``code`` in a fresh sandboxed process. Never raises for anything the code does.

    ``check_policy=False`` / ``restrict=False`` switch off layers 1 / 2; they exist only so tests can
    show what each remaining layer still contains. The tool never passes them.
    """
    start = time.monotonic()
    report = check_code(code)
    if check_policy and not report.ok:
        return RunResult("refused", error=report.message(), elapsed_s=time.monotonic() - start)
    preload = report.imports
    helpers = _helper_modules(preload, code)
    if os.geteuid() != 0 and os.environ.get("SANDBOX_NO_HARDEN") != "1":
        harden_parent_process()
    argv = [
        sys.executable, "-I", "-S", "-B", "-c", CHILD_SOURCE,
        str(int(limits.cpu_s)), str(int(limits.memory_mb) * 1024 * 1024), str(limits.nofile),
        str(limits.output_chars), "1" if restrict else "0", str(_drop_uid()),
        ",".join(sorted(preload)), ",".join(sorted(ALLOWED_MODULES)), ",".join(sorted(ALLOWED_SUBMODULES)),
        ",".join(sorted(BLOCKED_NAMES)), ",".join(sorted(BLOCKED_ATTRS)), ",".join(sorted(helpers)),
    ]  # fmt: skip
    workdir = tempfile.mkdtemp(prefix="repl-")
    try:
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=workdir, env={}, start_new_session=True, close_fds=True,
            )  # fmt: skip
        except OSError as exc:
            return RunResult("crashed", error=f"Could not start the sandbox: {exc}", elapsed_s=time.monotonic() - start)
        try:
            deadline = time.monotonic() + limits.wall_s
            out, err, wall_killed = _communicate(proc, code.encode("utf-8", "replace"), deadline)
            wall_killed = _wait_exit(proc, deadline) or wall_killed
            _kill_group(proc)  # stragglers, while the zombie leader still holds the group id
            rc = proc.wait()
        finally:
            _kill_group(proc)
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe and not pipe.closed:
                    pipe.close()
            if proc.returncode is None:
                proc.wait()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return _classify(rc, out, err, wall_killed, limits, time.monotonic() - start)


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


def _communicate(proc: subprocess.Popen, data: bytes, deadline: float) -> tuple[str, str, bool]:
    """Feed stdin, read stdout/stderr with caps, and SIGKILL the group at the wall-clock deadline."""
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
            for key, _ in sel.select(timeout=min(remaining, 0.5)):
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
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _classify(rc: int, out: str, err: str, wall_killed: bool, limits: Limits, elapsed: float) -> RunResult:
    err = err.strip()
    if len(out) > limits.output_chars + 200:  # only if the child's own cap was bypassed
        out = out[: limits.output_chars]
    if len(out) >= limits.output_chars and "…[output truncated" not in out:
        out += "\n…[output truncated]"  # killed before the child could write its own marker
    if rc == EXIT_OK and not wall_killed:
        return RunResult("ok", out, "", elapsed)
    if rc == EXIT_ERROR:
        return RunResult("error", out, err, elapsed)
    if rc == EXIT_MEMORY:
        return RunResult("memory", out, f"Memory limit exceeded ({limits.memory_mb} MB).", elapsed)
    if rc == EXIT_SETUP:
        return RunResult("crashed", out, err or "The sandbox could not be set up.", elapsed)
    if wall_killed:
        return RunResult(
            "timeout", out, f"Timed out after {limits.wall_s:g} s (wall-clock limit; the program was stopped).", elapsed
        )
    if rc in (-signal.SIGXCPU, -signal.SIGKILL):
        return RunResult("timeout", out, f"Timed out after {limits.cpu_s:g} s (CPU limit).", elapsed)
    if rc == -signal.SIGXFSZ:
        return RunResult("error", out, "Writing files is not allowed in this sandbox (file size limit 0).", elapsed)
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
