"""Share links: a run's JSON export kept under an unguessable id, beside its *view*, reopened by ``/?run=<id>``.

The view is what the page receives, ready to send, so opening a link parses no recording. Ids come from
``secrets.token_urlsafe``, never a path. The store is capped in bytes, links expire, and each visitor has an hourly
quota of links and bytes (``APP_SHARE_*``, docs/configuration.md); past the cap the links of whoever holds the most
go first, so a few visitors filling their quotas push out their own links, not everyone's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ui.core.settings import app_settings
from ui.core.visitors import Window
from ui.recordings.reader import MAX_REPLAY_BYTES

log = logging.getLogger(__name__)

ID_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")  # what token_urlsafe makes: no dot, no slash, no traversal
SPACE_DATA = Path("/data")  # a Space's persistent storage, when it is switched on
SUFFIX = ".json"
VIEW_SUFFIX = ".view"  # the prepared panels of the run of the same id
MB = 1024 * 1024


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


@dataclass(frozen=True)
class Admitted:
    """A run allowed into the store: its size and digest, or the live link it already has; who shares it and the
    bytes already charged to them this hour."""

    size: int
    digest: str
    known: str | None = None
    visitor: str = ""
    charged: int = 0


class ShareStore:
    """Shared exports on disk: ``put`` a file, get an id; ``path`` of a live id, or a :class:`ShareError`."""

    def __init__(self, root: str | Path, max_bytes: int, max_age_s: float, per_hour: int = 20, *,
                 bytes_per_hour: int | None = None, max_run_bytes: int = MAX_REPLAY_BYTES) -> None:
        self.root, self.max_bytes, self.max_age_s = Path(root), int(max_bytes), float(max_age_s)
        self.per_hour = int(per_hour)
        self.max_run_bytes = min(int(max_run_bytes), MAX_REPLAY_BYTES)
        self._lock = threading.Lock()
        self._by_digest: dict[str, str] = {}  # content → its live id: the same run shared twice is one link
        self._links = Window(3600, self.per_hour)  # visitor → their new links in the last hour
        self._bytes = Window(3600, bytes_per_hour if bytes_per_hour is not None else float("inf"))  # None: no cap
        self._sharers: dict[str, str] = {}  # run id → the visitor who stored it (eviction takes the largest holder's)

    @classmethod
    def from_settings(cls) -> ShareStore:
        limits = app_settings()
        return cls(default_root(), limits.share_max_mb * MB, limits.share_days * 86400.0, limits.share_per_hour,
                   bytes_per_hour=limits.share_hourly_mb * MB, max_run_bytes=limits.share_run_mb * MB)

    @staticmethod
    def valid_id(run_id: object) -> bool:
        return isinstance(run_id, str) and ID_RE.fullmatch(run_id) is not None

    def put(self, source: str | Path, visitor: str = "", view: bytes | None = None) -> str:
        """Copy an export (and its prepared ``view``) into the store under a fresh id; older runs are evicted to
        stay under the cap. A run already stored keeps its link; the limits are :meth:`admit`'s."""
        admitted = self.admit(source, visitor, extra=len(view or b""))
        return admitted.known or self.store(source, admitted, view)

    def admit(self, source: str | Path, visitor: str = "", *, extra: int = 0) -> Admitted:
        """Whether ``source`` may be stored for ``visitor``: its live link if the same run is stored already, else
        its size and digest with this hour's quotas charged (``extra``: bytes stored beside it, when known; the view
        is charged by :meth:`store` otherwise); one line (:class:`ShareError`) for a missing file, a run over the
        size cap, or a visitor past a quota."""
        source = Path(source)
        try:
            size = source.stat().st_size
        except OSError:
            raise ShareError("There is no run to share yet: run a question (or replay a file) first.") from None
        if size > min(self.max_bytes, self.max_run_bytes):
            cap = min(self.max_bytes, self.max_run_bytes) / MB
            raise ShareError(f"This run is too large to share by link ({size / MB:.1f} MB; the most is {cap:g} MB): "
                             "save its file instead (under the table).")
        digest = _digest(source)
        known = self._by_digest.get(digest)
        if known is not None and self._live(known):
            return Admitted(size, digest, known)
        if not self._links.spend(visitor):
            raise ShareError(f"You have made {self.per_hour} share links in the last hour, the most allowed; "
                             "try again later, or save the run's file instead (under the table).")
        self._charge_bytes(visitor, size + extra, Admitted(size, digest, visitor=visitor))
        return Admitted(size, digest, visitor=visitor, charged=size + extra)

    def store(self, source: str | Path, admitted: Admitted, view: bytes | None = None) -> str:
        """Store an admitted run (and its view) under a fresh id, the view's bytes charged to its sharer first (one
        line past their quota); evict to stay under the cap."""
        more = admitted.size + len(view or b"") - admitted.charged
        self._charge_bytes(admitted.visitor, more, admitted)
        try:
            run_id = self._store(Path(source), view, admitted.visitor)
        except ShareError:
            if more > 0:
                self._bytes.refund(admitted.visitor, more)
            self._refund(admitted, admitted.charged)
            raise
        if len(self._by_digest) >= 10_000:
            self._by_digest.clear()  # only a convenience: a forgotten run is stored again, never lost
        self._by_digest[admitted.digest] = run_id
        return run_id

    def _live(self, run_id: str) -> bool:
        try:
            self.path(run_id)
        except ShareError:
            return False
        return True

    def _charge_bytes(self, visitor: str, more: int, admitted: Admitted) -> None:
        """Charge ``more`` bytes of ``admitted``'s run to ``visitor``, or refuse past the hourly quota (giving back
        what the run was charged so far: its link and ``admitted.charged`` bytes)."""
        if more <= 0 or self._bytes.spend(visitor, more):
            return
        self._refund(admitted, admitted.charged)
        total = (admitted.charged + more) / MB
        raise ShareError(f"Your share links of the last hour hold {self._bytes.spent(visitor) / MB:.1f} MB and this "
                         f"run {total:.1f} MB more (its file and the panels it shows), past the "
                         f"{self._bytes.limit / MB:.3g} MB one visitor may add an hour; try again later, or save "
                         "the run's file instead (under the table).")

    def _refund(self, admitted: Admitted, charged: int) -> None:
        """Give back a run's link and the bytes it was charged (it was not stored)."""
        self._links.refund(admitted.visitor)
        if charged > 0:
            self._bytes.refund(admitted.visitor, charged)

    def _store(self, source: Path, view: bytes | None, visitor: str = "") -> str:
        run_id = secrets.token_urlsafe(16)
        self.root.mkdir(parents=True, exist_ok=True)
        target = self.root / f"{run_id}{SUFFIX}"
        try:
            if view is not None:
                _write_whole(self.root / f"{run_id}{VIEW_SUFFIX}", view)
            partial = self.root / f".{run_id}.part"
            try:
                shutil.copyfile(source, partial)
                os.replace(partial, target)  # a reader never sees half a file
            finally:
                with contextlib.suppress(OSError):
                    partial.unlink()
        except OSError as exc:
            self._remove(run_id)
            log.exception("could not store a shared run")
            raise ShareError(f"The run could not be stored for sharing ({exc.strerror or 'disk error'}).") from None
        with self._lock:
            self._sharers[run_id] = visitor
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
                             "restart of the app may lose them). Ask whoever shared it for the saved file.") from None
        if age > self.max_age_s:
            self._remove(str(run_id))
            raise ShareError("That shared run has expired. Ask whoever shared it for the saved file.")
        return target

    def view(self, run_id: object) -> dict[str, Any] | None:
        """The prepared view of a live id (None when the run was stored without one); :class:`ShareError` as
        :meth:`path`. Read and parsed in the caller's thread: call it off the event loop."""
        self.path(run_id)
        try:
            text = (self.root / f"{run_id}{VIEW_SUFFIX}").read_bytes()
        except OSError:
            return None
        try:
            view = json.loads(text)
        except ValueError:
            return None
        return view if isinstance(view, dict) else None

    def legacy_path(self, run_id: str) -> Path:
        """The export of a run stored without a view, if it is small enough to make one now (once)."""
        path = self.path(run_id)
        if path.stat().st_size > self.max_run_bytes:
            raise ShareError(f"This shared run is larger than the {self.max_run_bytes / MB:g} MB a link may open now; "
                             "ask whoever shared it for the saved file.")
        return path

    def save_view(self, run_id: str, view: bytes) -> None:
        """Keep the view of a run stored without one (a link made before views existed)."""
        path = self.path(run_id)
        with contextlib.suppress(OSError):
            _write_whole(self.root / f"{run_id}{VIEW_SUFFIX}", view)
        self.evict(keep=path)  # the view counts against the cap like any other

    def download_copy(self, run_id: str, folder: Path, name: str = "shared-run.json") -> Path:
        """The run's export where Gradio serves files from (``folder``, in its cache), copied once and reused by
        every later view while it is there."""
        source = self.path(run_id)
        target = folder / run_id / name
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{secrets.token_hex(4)}.part")
            shutil.copyfile(source, partial)
            os.replace(partial, target)
        return target

    def evict(self, keep: Path | None = None) -> None:
        """Delete expired runs, then, until the store fits ``max_bytes``, the oldest run of whoever holds the most
        bytes (``keep`` stays). A run whose sharer is not known (stored before this process started) is its own
        holder's."""
        with self._lock:
            held: dict[str, list[tuple[float, int, Path]]] = {}
            now = time.time()
            for child in self.root.glob(f"*{SUFFIX}"):
                try:
                    st = child.stat()
                except OSError:
                    continue
                if now - st.st_mtime > self.max_age_s and child != keep:
                    self._remove(child.stem)
                    continue
                holder = self._sharers.get(child.stem) or f"run:{child.stem}"
                held.setdefault(holder, []).append((st.st_mtime, st.st_size + self._view_size(child.stem), child))
            total = sum(size for runs in held.values() for _, size, _ in runs)
            while total > self.max_bytes:
                victim = _largest_holders_oldest(held, keep)
                if victim is None:
                    break
                self._remove(victim[2].stem)
                total -= victim[1]

    def _view_size(self, run_id: str) -> int:
        try:
            return (self.root / f"{run_id}{VIEW_SUFFIX}").stat().st_size
        except OSError:
            return 0

    def _remove(self, run_id: str) -> None:
        for suffix in (SUFFIX, VIEW_SUFFIX):
            with contextlib.suppress(OSError):
                (self.root / f"{run_id}{suffix}").unlink()
        self._sharers.pop(run_id, None)


def _largest_holders_oldest(held: dict[str, list[tuple[float, int, Path]]],
                            keep: Path | None) -> tuple[float, int, Path] | None:
    """Take out of ``held`` and return the oldest run (not ``keep``) of the holder with the most bytes, or None."""
    sizes = {holder: sum(size for _, size, _ in runs) for holder, runs in held.items()
             if any(path != keep for _, _, path in runs)}
    if not sizes:
        return None
    holder = max(sizes, key=lambda h: (sizes[h], -min(t for t, _, _ in held[h])))
    victim = min(run for run in held[holder] if run[2] != keep)
    held[holder].remove(victim)
    return victim


def _write_whole(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` so that a reader sees the old file or the whole new one."""
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.part")
    try:
        partial.write_bytes(data)
        os.replace(partial, target)
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()


def _digest(path: Path) -> str:
    """The file's SHA-256 (exports are capped at the replay limit, so reading one is bounded)."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def stored_export(run_id: str) -> Path:
    """A share id's stored export in the app's store; an unknown or expired id is a ValueError (one line)."""
    try:
        return ShareStore.from_settings().path(run_id)
    except ShareError as exc:
        raise ValueError(str(exc)) from None


def share_url(page_url: str, run_id: str) -> str:
    """The page's own address with ``?run=<id>`` (any other query or fragment dropped)."""
    parts = urlsplit(page_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", f"run={run_id}", ""))
