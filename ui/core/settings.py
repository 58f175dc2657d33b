"""The app's own settings (``APP_*``, ``BENCH_*``) as one value, :class:`AppSettings`, read once.

Each variable's type, default and range are declared in the root module :mod:`settings` and read through
:func:`settings.read`, so ``APP_CONCURRENCY=abc`` stops ``python app.py`` with the one line
``APP_CONCURRENCY must be an integer from 1 to 1000, got 'abc'`` instead of a traceback at import. Here: the
defaults worked out at start (cores, memory) and the checks that span variables. :func:`app_settings` reads
them the first time it is called.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agents.llm.backend import TOY_SWITCH
from settings import SETTINGS, SettingError, read
from tools import sandbox_room
from tools.sandbox import filters_enabled

# Compare runs at once per core, when APP_CONCURRENCY is unset: the largest crowd per core that held every crowd goal
# in `python -m bench` (docs/performance.md: 100 visitors on 2 cores; the bench's "runs per core" row checks it)
RUNS_PER_CORE = 50
CGROUP = Path("/sys/fs/cgroup")


def cpu_quota(root: Path = CGROUP) -> float | None:
    """A container's CPU quota in cores (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us``), None when unlimited."""
    try:
        if (v2 := root / "cpu.max").exists():
            quota, period = v2.read_text().split()[:2]
        else:
            quota = (root / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (root / "cpu" / "cpu.cfs_period_us").read_text().strip()
        return None if quota in ("max", "-1") else int(quota) / int(period)
    except (OSError, ValueError):
        return None


def usable_cores(root: Path = CGROUP) -> int:
    """The cores this process may use: its CPU affinity, capped by a container's CPU quota (a Space has 2 vCPUs on a
    host that ``os.cpu_count()`` reports whole)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if (quota := cpu_quota(root)) is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def default_concurrency(cores: int | None = None) -> int:
    """``APP_CONCURRENCY`` when unset: :data:`RUNS_PER_CORE` for each core the app has at start-up."""
    return max(1, min(1000, RUNS_PER_CORE * (cores if cores is not None else usable_cores())))


# variable → AppSettings field; each variable's type, default and range: the root module settings.py
_FIELDS = {
    "APP_CONCURRENCY": "concurrency", "APP_QUEUE_SIZE": "queue_size", "APP_SESSION_TTL": "session_ttl_s",
    "BENCH_MAX_N": "bench_max_n", "BENCH_VISITOR_MAX_N": "bench_visitor_max_n",
    "BENCH_CONCURRENCY": "bench_concurrency", "APP_MCP": "mcp", TOY_SWITCH: "toy_model",
    "APP_SANDBOX_FILTERS": "sandbox_filters", "APP_NON_DUMPABLE": "non_dumpable",
    "APP_SHARE_MAX_MB": "share_max_mb", "APP_SHARE_DAYS": "share_days", "APP_SHARE_PER_HOUR": "share_per_hour",
    "APP_SHARE_DIR": "share_dir", "APP_SHARE_RUN_MB": "share_run_mb", "APP_PAUSE_TTL": "pause_ttl_s",
    "APP_PAUSED_PER_VISITOR": "paused_per_visitor", "APP_PAUSED_SHARE": "paused_share",
    "APP_FOLLOWUP_TURNS": "followup_turns", "APP_CONTEXT_BUDGET": "context_budget",
    "APP_POLL_PHONES": "poll_phones", "APP_POLL_ROOMS": "poll_rooms", "APP_POLL_IDLE": "poll_idle_s",
    "APP_POLL_VOTERS_PER_ADDRESS": "poll_voters_per_address", "APP_POLL_GRACE_S": "poll_grace_s",
    "APP_RUNS_PER_VISITOR": "runs_per_visitor", "APP_RUNS_PER_ADDRESS": "runs_per_address",
    "APP_UPLOAD_MB_PER_VISITOR": "upload_mb_per_visitor", "APP_UPLOAD_MB_PER_ADDRESS": "upload_mb_per_address",
    "APP_BODY_MB": "body_mb", sandbox_room.BUDGET_VAR: "sandbox_mb",
    sandbox_room.SCRATCH_MB_VAR: "sandbox_scratch_mb", sandbox_room.SCRATCH_FILES_VAR: "sandbox_scratch_files",
}


def _default(name: str) -> Any:
    """A variable's declared default."""
    return SETTINGS[name].default


@dataclass(frozen=True)
class AppSettings:
    """The app's limits; the defaults are the ones documented in the README."""

    concurrency: int = dataclasses.field(default_factory=default_concurrency)
    queue_size: int = _default("APP_QUEUE_SIZE")
    session_ttl_s: float = _default("APP_SESSION_TTL")
    bench_max_n: int = _default("BENCH_MAX_N")
    bench_visitor_max_n: int = _default("BENCH_VISITOR_MAX_N")
    bench_concurrency: int = _default("BENCH_CONCURRENCY")
    mcp: bool = _default("APP_MCP")
    toy_model: bool = _default(TOY_SWITCH)
    sandbox_filters: bool = _default("APP_SANDBOX_FILTERS")
    non_dumpable: bool = _default("APP_NON_DUMPABLE")
    share_max_mb: int = _default("APP_SHARE_MAX_MB")
    share_days: float = _default("APP_SHARE_DAYS")
    share_per_hour: int = _default("APP_SHARE_PER_HOUR")
    share_dir: str | None = None  # APP_SHARE_DIR; None: a folder in the system's temp dir (ui/share/store.py)
    share_mb_per_hour: int = 0  # APP_SHARE_MB_PER_HOUR; 0 (unset): a tenth of the store (share_hourly_mb)
    share_run_mb: int = _default("APP_SHARE_RUN_MB")
    pause_ttl_s: float = _default("APP_PAUSE_TTL")
    paused_per_visitor: int = _default("APP_PAUSED_PER_VISITOR")
    paused_share: float = _default("APP_PAUSED_SHARE")
    followup_turns: int = _default("APP_FOLLOWUP_TURNS")
    context_budget: int = _default("APP_CONTEXT_BUDGET")
    poll_phones: int = _default("APP_POLL_PHONES")
    poll_rooms: int = _default("APP_POLL_ROOMS")
    poll_idle_s: float = _default("APP_POLL_IDLE")
    poll_voters_per_address: int = _default("APP_POLL_VOTERS_PER_ADDRESS")
    poll_grace_s: float = _default("APP_POLL_GRACE_S")
    trusted_proxies: tuple[str, ...] = ()  # APP_TRUSTED_PROXIES (ui/core/visitors.py); on a Space: its proxy
    public_url: str | None = None  # APP_PUBLIC_URL: the app's address as phones reach it (join and share links)
    runs_per_visitor: int = _default("APP_RUNS_PER_VISITOR")
    runs_per_address: int = _default("APP_RUNS_PER_ADDRESS")
    upload_mb_per_visitor: int = _default("APP_UPLOAD_MB_PER_VISITOR")
    upload_mb_per_address: int = _default("APP_UPLOAD_MB_PER_ADDRESS")
    body_mb: int = _default("APP_BODY_MB")
    sandbox_mb: int = dataclasses.field(default_factory=sandbox_room.default_budget_mb)
    sandbox_scratch_mb: int = sandbox_room.SCRATCH_MB
    sandbox_scratch_files: int = sandbox_room.SCRATCH_FILES

    @property
    def share_hourly_mb(self) -> int:
        """Megabytes of new links one visitor may add an hour: ``APP_SHARE_MB_PER_HOUR``, else a tenth of the store."""
        return self.share_mb_per_hour or max(1, self.share_max_mb // 10)

    @property
    def paused_max(self) -> int:
        """Stepping runs the whole app may hold at once: ``APP_PAUSED_SHARE`` of ``APP_CONCURRENCY`` (at least one),
        so that live runs always keep the rest of the slots."""
        return max(1, int(self.concurrency * self.paused_share))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AppSettings:
        """Read every ``APP_*``/``BENCH_*`` variable; raises :class:`~settings.SettingError` (one line)."""
        values = {field: read(name, environ) for name, field in _FIELDS.items()}
        values["concurrency"] = values["concurrency"] or default_concurrency()
        values["sandbox_mb"] = values["sandbox_mb"] or sandbox_room.default_budget_mb()
        values["share_mb_per_hour"] = _share_mb_per_hour(int(values["share_max_mb"]), environ)
        values["trusted_proxies"] = trusted_proxies(read("APP_TRUSTED_PROXIES", environ))
        values["public_url"] = public_url(read("APP_PUBLIC_URL", environ))
        if environ is None and not values["sandbox_filters"]:
            _say_filters()
        return cls(**values)


def _say_filters() -> None:
    """One start-up line when APP_SANDBOX_FILTERS is off: kept on a Space, or off here (a local lesson)."""
    if filters_enabled():
        return  # on a Space: filters_enabled itself said that they stay on
    logging.getLogger(__name__).warning("APP_SANDBOX_FILTERS=off: programs reach the sandbox's boundary without its "
                                        "policy and restricted builtins (never on a Space).")


def _share_mb_per_hour(store_mb: int, environ: Mapping[str, str] | None) -> int:
    """``APP_SHARE_MB_PER_HOUR`` (0: unset, a tenth of the store); never more than half of the store, or one visitor
    could push every other visitor's link out of it within the hour."""
    name = "APP_SHARE_MB_PER_HOUR"
    value = read(name, environ) or 0
    if value and 2 * value > store_mb:
        raise SettingError(f"{name} must be at most half of APP_SHARE_MAX_MB ({store_mb}), got '{value}': one "
                           "visitor could otherwise push everyone else's links out of the store within an hour", name)
    return value


def trusted_proxies(raw: str | None) -> tuple[str, ...]:
    """``APP_TRUSTED_PROXIES``: addresses or networks (``10.0.0.5``, ``10.0.0.0/8``, ``::1``) or ``*`` (any peer),
    comma-separated; a bad item is one line naming it."""
    items = tuple(item.strip() for item in (raw or "").split(",") if item.strip())
    for item in items:
        if item == "*":
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            shown = item if len(item) <= 40 else item[:37] + "..."
            raise SettingError("APP_TRUSTED_PROXIES must be addresses or networks (e.g. 10.0.0.5, 10.0.0.0/8) or *, "
                               f"comma-separated, got {shown!r}", "APP_TRUSTED_PROXIES") from None
    return items


def public_url(raw: str | None) -> str | None:
    """``APP_PUBLIC_URL``: the address phones and other visitors open the app at (``http://192.168.1.20:7860``, a
    Space's ``https://<owner>-<space>.hf.space``), as ``scheme://host[:port]/path/``; a bad one is one line."""
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    try:
        parts = urlsplit(text)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        port_ok = False
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok or parts.query or parts.fragment \
            or parts.username or parts.password:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise SettingError("APP_PUBLIC_URL must be the address phones open the app at, such as "
                           f"http://192.168.1.20:7860 or https://owner-space.hf.space, got {shown!r}", "APP_PUBLIC_URL")
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


_current: AppSettings | None = None


def app_settings() -> AppSettings:
    """The settings of this process, read from the environment on first use (tests may replace ``_current``)."""
    global _current
    if _current is None:
        _current = AppSettings.from_env()
    return _current
