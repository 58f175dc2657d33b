"""The room the app's sandboxes share: their guests' memory, and each run's scratch folder.

**Memory** (``APP_SANDBOX_MB``): a host asks for its guest's limit before it starts and gives it back at its end,
so the limits together never pass the budget. The app and its run workers share one :class:`Pool`: lease files,
each locked (``flock``) by its holder; the oldest waiter goes first. **Scratch folders**
(``APP_SANDBOX_SCRATCH_MB``, ``APP_SANDBOX_SCRATCH_FILES``): :func:`scratch_bounds` gives the host its bounds.
Declared in :mod:`settings`; every process reads them itself.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path

from settings import SETTINGS, read
from tools._sandbox_host import scratch_usage

log = logging.getLogger(__name__)

BUDGET_VAR = "APP_SANDBOX_MB"
SCRATCH_MB_VAR, SCRATCH_FILES_VAR = "APP_SANDBOX_SCRATCH_MB", "APP_SANDBOX_SCRATCH_FILES"
POOL_VAR = "THINK_ACT_REACT_SANDBOX_POOL"  # the app's pool, inherited by its run workers (not a setting)
GUEST_MB = 512  # one guest's memory limit (tools.sandbox.Limits, tools.sandbox_step.SessionLimits)
BUDGET_SHARE = 0.5  # of the memory the app may use, when APP_SANDBOX_MB is unset
BUDGET_RANGE = SETTINGS[BUDGET_VAR].bounds  # MB: at least one guest (GUEST_MB)
SCRATCH_MB, SCRATCH_FILES = SETTINGS[SCRATCH_MB_VAR].default, SETTINGS[SCRATCH_FILES_VAR].default
CGROUP = Path("/sys/fs/cgroup")
UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a huge number of bytes
POLL_S = 0.2  # a waiter looks again this often (sooner when a guest of this process ends)


def memory_limit(root: Path = CGROUP) -> int | None:
    """A container's memory limit in bytes (cgroup v2 ``memory.max``, or v1 ``memory/memory.limit_in_bytes``),
    None when there is none."""
    for path in (root / "memory.max", root / "memory" / "memory.limit_in_bytes"):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text == "max":
            return None
        try:
            value = int(text)
        except ValueError:
            return None
        return value if 0 < value < UNLIMITED else None
    return None


def machine_memory() -> int:
    """The machine's memory in bytes."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return 4 << 30


def default_budget_mb(root: Path = CGROUP) -> int:
    """``APP_SANDBOX_MB`` when unset: :data:`BUDGET_SHARE` of the memory the app may use (its cgroup's limit when
    lower than the machine's), and at least one guest."""
    usable = min(filter(None, (memory_limit(root), machine_memory())))
    low, high = BUDGET_RANGE
    return max(low, min(high, int(usable * BUDGET_SHARE) >> 20))


def budget_mb(environ: Mapping[str, str] | None = None) -> int:
    """The guests' memory budget in MB: ``APP_SANDBOX_MB``, else :func:`default_budget_mb`; a bad value is a
    one-line :class:`~settings.SettingError` (a ``ValueError``)."""
    return read(BUDGET_VAR, environ) or default_budget_mb()


def scratch_bounds(environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(bytes, files) a run's scratch folder may hold: ``APP_SANDBOX_SCRATCH_MB`` and ``APP_SANDBOX_SCRATCH_FILES``
    (files and folders count alike)."""
    return read(SCRATCH_MB_VAR, environ) << 20, read(SCRATCH_FILES_VAR, environ)


def scratch_over(folder: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Why a scratch folder holds more than :func:`scratch_bounds` allow (one line), or None. The host process
    stops its guest at the bound as it is passed; this is the app's look at a step's end, which a write made just
    before the step ended may have passed before the host's watch had looked, with the host's own walk."""
    max_bytes, max_files = scratch_bounds(environ)
    size, entries, _ = scratch_usage(folder, max_files)
    if entries > max_files:
        return f"The program made more than {max_files} files and folders in its scratch folder, the most a run " \
               "may hold there; it was stopped."
    if size > max_bytes:
        return f"The program wrote more than {max_bytes >> 20} MB in its scratch folder, the most a run may hold " \
               "there; it was stopped."
    return None


def remove_scratch(folder: str) -> None:
    """Delete a scratch folder, however deep a program nested it (``shutil.rmtree`` recurses, and a few
    thousand levels would raise ``RecursionError`` instead of deleting)."""
    for parent, dirs, files in os.walk(folder, topdown=False):
        for name in files:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(parent, name))
        for name in dirs:
            path = os.path.join(parent, name)
            with contextlib.suppress(OSError):
                os.unlink(path) if os.path.islink(path) else os.rmdir(path)
    with contextlib.suppress(OSError):
        os.rmdir(folder)


class Lease:
    """One guest's memory, held until :meth:`release` (from any thread, once) or this process ends."""

    def __init__(self, pool: Pool, path: Path, fd: int, mb: int) -> None:
        self.pool, self.path, self.mb = pool, path, mb
        self._fd: int | None = fd
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(fd)  # the lock goes with the last descriptor
        self.pool.freed()


class Pool:
    """The guests' memory for a group of processes: leases in ``folder`` against ``budget_mb``."""

    def __init__(self, folder: Path, budget_mb: int) -> None:
        self.folder, self.budget_mb = folder, int(budget_mb)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._freed = threading.Condition()
        self._crowded: list[Callable[[], None]] = []  # what this process gives back when a guest waits

    def when_crowded(self, give_back: Callable[[], None]) -> None:
        """Call ``give_back`` (e.g. drop a spare guest) whenever a guest of this process has to wait."""
        if give_back not in self._crowded:
            self._crowded.append(give_back)

    def held_mb(self) -> int:
        """The memory of every live lease."""
        with self._locked():
            return self._scan()[0]

    def try_take(self, mb: int, *, keep_free_mb: int = 0) -> Lease | None:
        """A lease of ``mb`` now, or None: no room (leaving ``keep_free_mb`` free too), or a guest waits."""
        return self._try(mb, None, keep_free_mb)

    def take(self, mb: int, stopping: Callable[[], bool] = lambda: False, wait_s: float | None = None) -> Lease | None:
        """A lease of ``mb``, waiting for room at most ``wait_s`` seconds (None: until there is) unless
        ``stopping()`` turns true; None then."""
        waiting = self.waiting(mb, stopping, wait_s)
        while True:
            try:
                next(waiting)
            except StopIteration as done:
                return done.value

    def waiting(self, mb: int, stopping: Callable[[], bool] = lambda: False,
                wait_s: float | None = None) -> Generator[None, None, Lease | None]:
        """:meth:`take` as a generator that yields once, when it starts to wait (a panel can say so)."""
        lease = self._try(mb, None)
        if lease is None and self._crowded:
            for give_back in self._crowded:
                give_back()
            lease = self._try(mb, None)
        if lease is not None:
            return lease
        deadline = None if wait_s is None else time.monotonic() + wait_s
        with self._want() as want:
            yield
            while not stopping():
                if (lease := self._try(mb, want)) is not None:
                    return lease
                left = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
                if left <= 0:
                    return None
                with self._freed:
                    self._freed.wait(left)
        return None

    def freed(self) -> None:
        with self._freed:
            self._freed.notify_all()

    # -- the folder -----------------------------------------------------------------------------------------------
    def _try(self, mb: int, want: str | None, keep_free_mb: int = 0) -> Lease | None:
        with self._locked():
            held, wants = self._scan()
            first = wants[0] if wants else None
            if (first is not None and first != want) or held + mb + keep_free_mb > self.budget_mb:
                return None
            path = self.folder / f"lease-{mb}-{uuid.uuid4().hex}"
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return Lease(self, path, fd, mb)

    @contextlib.contextmanager
    def _want(self) -> Iterator[str]:
        """A locked want file while this guest waits; names sort by when they were made."""
        name = f"want-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        fd = os.open(self.folder / name, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            yield name
        finally:
            with contextlib.suppress(OSError):
                (self.folder / name).unlink()
            os.close(fd)
            self.freed()  # the next want may go first now

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with _locked(self.folder):
            yield

    def _scan(self) -> tuple[int, list[str]]:
        """(MB of the live leases, the live wants oldest first); a file whose holder is gone is removed."""
        held, wants = 0, []
        for name in os.listdir(self.folder):
            if not name.startswith(("lease-", "want-")) or not _held(self.folder / name):
                continue
            if name.startswith("want-"):
                wants.append(name)
            else:
                with contextlib.suppress(ValueError, IndexError):
                    held += int(name.split("-")[1])
        return held, sorted(wants)


def _held(path: Path) -> bool:
    """Whether a live process holds ``path``'s lock; a file nobody holds is removed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    with contextlib.suppress(OSError):
        path.unlink()
    os.close(fd)
    return False


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """``folder``'s lock (``flock`` on the folder itself), made again if a sweep removed the folder meanwhile."""
    while True:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(folder).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                yield
                return
        finally:
            os.close(fd)


def rooms_folder() -> Path:
    return Path(tempfile.gettempdir()) / f"think-act-react-{os.getuid()}" / "sandbox-room"


def own_pool() -> None:
    """Make this process's pool its own and its future children's (the app, before its run workers start)."""
    global _pool
    with _pool_lock:
        os.environ[POOL_VAR] = f"pid-{os.getpid()}"
        if _pool is not None and _pool.folder.name != os.environ[POOL_VAR]:
            _pool = None


_pool: Pool | None = None
_pool_lock = threading.Lock()


def pool() -> Pool:
    """This process's pool: the app's when it named one (:data:`POOL_VAR`), else its own; the budget is read once."""
    global _pool
    with _pool_lock:
        name = os.environ.get(POOL_VAR) or f"pid-{os.getpid()}"
        if _pool is None or _pool.folder.name != name:
            folder = rooms_folder()
            _sweep(folder, keep=name)
            try:
                _pool = Pool(folder / name, budget_mb())
            except OSError as exc:  # no shared temp folder: this process's guests still stay within the budget
                log.warning("The sandboxes' memory is counted per process (%s): %s", folder, exc)
                _pool = Pool(Path(tempfile.mkdtemp(prefix="sandbox-room-")) / name, budget_mb())
        return _pool


def _sweep(folder: Path, keep: str) -> None:
    """Remove the folders of pools whose process is gone and in which no process holds a lease or a want (best
    effort; each under its own lock, so no lease is being made there)."""
    try:
        others = [p for p in folder.iterdir() if p.is_dir() and p.name != keep and not _alive(p.name)]
    except OSError:
        return
    for other in others:
        with contextlib.suppress(OSError), _locked(other):
            for entry in other.iterdir():
                _held(entry)
            other.rmdir()


def _alive(name: str) -> bool:
    """Whether the process a pool is named after (``pid-N``) still runs."""
    try:
        os.kill(int(name.removeprefix("pid-")), 0)
    except ValueError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
