"""Share a moment: a run's JSON export kept under an unguessable id, reopened by ``/?run=<id>``.

The export already replays faithfully (``ui/replay.py``), so a shared run is just that file, copied
into a small store: ids are ``secrets.token_urlsafe`` (never a path a visitor chose), the store is
capped in total bytes (oldest evicted first) and links expire after some days (``APP_SHARE_DIR``,
``APP_SHARE_MAX_MB``, ``APP_SHARE_DAYS``). Because the cap evicts everyone's oldest links, one visitor
may make only ``APP_SHARE_PER_HOUR`` new links an hour, and sharing the same run again gives its
existing link (nothing stored twice). On a Space the store lives in ``/data`` when persistent
storage is on; otherwise on the Space's ephemeral disk, so links end with a restart (README).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import logging
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ui.recording import MAX_REPLAY_BYTES
from ui.settings import app_settings

log = logging.getLogger(__name__)

ID_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")  # what token_urlsafe makes: no dot, no slash, no traversal
SPACE_DATA = Path("/data")  # a Space's persistent storage, when it is switched on
SUFFIX = ".json"


class ShareError(Exception):
    """One clear line for the visitor (unknown or expired id, nothing to share, store full)."""


def default_root() -> Path:
    """``APP_SHARE_DIR``, else a Space's persistent ``/data`` if writable, else the temp dir (lost on restart)."""
    configured = app_settings().share_dir
    if configured:
        return Path(configured)
    if SPACE_DATA.is_dir() and os.access(SPACE_DATA, os.W_OK):
        return SPACE_DATA / "think-act-react-shared"
    return Path(tempfile.gettempdir()) / "think-act-react-shared"


class ShareStore:
    """Shared exports on disk: ``put`` a file, get an id; ``path`` of a live id, or a :class:`ShareError`."""

    def __init__(self, root: str | Path, max_bytes: int, max_age_s: float, per_hour: int = 20) -> None:
        self.root, self.max_bytes, self.max_age_s = Path(root), int(max_bytes), float(max_age_s)
        self.per_hour = int(per_hour)
        self._lock = threading.Lock()
        self._by_digest: dict[str, str] = {}  # content → its live id: the same run shared twice is one link
        self._recent: dict[str, collections.deque[float]] = {}  # visitor → times of their new links

    @classmethod
    def from_settings(cls) -> ShareStore:
        limits = app_settings()
        return cls(default_root(), limits.share_max_mb * 1024 * 1024, limits.share_days * 86400.0,
                   limits.share_per_hour)

    @staticmethod
    def valid_id(run_id: object) -> bool:
        return isinstance(run_id, str) and ID_RE.fullmatch(run_id) is not None

    def put(self, source: str | Path, visitor: str = "") -> str:
        """Copy an export into the store under a fresh id; older runs are evicted to stay under the cap.

        A run already stored keeps its link; a ``visitor`` (their address) past ``per_hour`` new links
        in the last hour is refused with one line.
        """
        source = Path(source)
        try:
            size = source.stat().st_size
        except OSError:
            raise ShareError("There is no run to share yet: run a question (or replay a file) first.") from None
        if size > min(self.max_bytes, MAX_REPLAY_BYTES):
            raise ShareError("This run is too large to share by link; download its JSON export instead.")
        digest = _digest(source)
        known = self._by_digest.get(digest)
        if known is not None and self._live(known):
            return known
        self._count(visitor)
        run_id = self._store(source)
        if len(self._by_digest) >= 10_000:
            self._by_digest.clear()  # only a convenience: a forgotten run is stored again, never lost
        self._by_digest[digest] = run_id
        return run_id

    def _live(self, run_id: str) -> bool:
        try:
            self.path(run_id)
        except ShareError:
            return False
        return True

    def _count(self, visitor: str) -> None:
        """Record one new link for ``visitor``, or refuse it past the hourly limit."""
        now = time.monotonic()
        with self._lock:
            for key in [k for k, times in self._recent.items() if now - times[-1] > 3600]:
                del self._recent[key]  # forget visitors quiet for an hour: the map stays small
            times = self._recent.setdefault(visitor, collections.deque())
            while times and now - times[0] > 3600:
                times.popleft()
            if len(times) >= self.per_hour:
                raise ShareError(f"You have made {len(times)} share links in the last hour, the most allowed; "
                                 "try again later, or download the JSON export instead.")
            times.append(now)

    def _store(self, source: Path) -> str:
        run_id = secrets.token_urlsafe(16)
        self.root.mkdir(parents=True, exist_ok=True)
        target = self.root / f"{run_id}{SUFFIX}"
        partial = self.root / f".{run_id}.part"
        try:
            shutil.copyfile(source, partial)
            os.replace(partial, target)  # a reader never sees half a file
        except OSError as exc:
            with contextlib.suppress(OSError):
                partial.unlink()
            log.exception("could not store a shared run")
            raise ShareError(f"The run could not be stored for sharing ({exc.strerror or 'disk error'}).") from None
        self.evict(keep=target)
        return run_id

    def path(self, run_id: object) -> Path:
        """The stored export of a live id; one line for a malformed, unknown or expired one."""
        if not self.valid_id(run_id):
            raise ShareError("That share link is not valid (the run id is malformed).")
        target = self.root / f"{run_id}{SUFFIX}"
        try:
            age = time.time() - target.stat().st_mtime
        except OSError:
            raise ShareError("That shared run is unknown or has expired (links last a limited time, and a "
                             "restart of the app may lose them). Ask for its JSON export instead.") from None
        if age > self.max_age_s:
            with contextlib.suppress(OSError):
                target.unlink()
            raise ShareError("That shared run has expired. Ask for its JSON export instead.")
        return target

    def evict(self, keep: Path | None = None) -> None:
        """Delete expired runs, then the oldest until the store fits ``max_bytes`` (``keep`` stays)."""
        with self._lock:
            entries = []
            now = time.time()
            for child in self.root.glob(f"*{SUFFIX}"):
                try:
                    st = child.stat()
                except OSError:
                    continue
                if now - st.st_mtime > self.max_age_s and child != keep:
                    with contextlib.suppress(OSError):
                        child.unlink()
                    continue
                entries.append((st.st_mtime, st.st_size, child))
            entries.sort()
            total = sum(size for _, size, _ in entries)
            for _, size, child in entries:
                if total <= self.max_bytes:
                    break
                if child == keep:
                    continue
                with contextlib.suppress(OSError):
                    child.unlink()
                total -= size


def _digest(path: Path) -> str:
    """The file's SHA-256 (exports are capped at the replay limit, so reading one is bounded)."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def share_url(page_url: str, run_id: str) -> str:
    """The page's own address with ``?run=<id>`` (any other query or fragment dropped)."""
    parts = urlsplit(page_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", f"run={run_id}", ""))


def page_url_of(headers: object) -> str:
    """The visitor's page address: the ``Referer`` the browser sent with the event (the app's own page,
    same origin), else the host it reached (``x-forwarded-*`` behind a proxy such as a Space's)."""
    get = getattr(headers, "get", None)
    if get is None:
        return "http://localhost:7860/"
    referer = get("referer") or ""
    if referer.startswith(("http://", "https://")):
        return referer
    host = get("x-forwarded-host") or get("host") or "localhost:7860"
    proto = (get("x-forwarded-proto") or "http").split(",")[0].strip()
    return f"{proto}://{host.split(',')[0].strip()}/"
