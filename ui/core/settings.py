"""The app's own settings (``APP_*``, ``BENCH_*``): declared once, read once, validated at start-up.

Each field's default and accepted range live here and nowhere else; the values are read through
:mod:`agents.settings`' reader, so ``APP_CONCURRENCY=abc`` stops ``python app.py`` with the one line
``APP_CONCURRENCY must be an integer from 1 to 1000, got 'abc'`` instead of a traceback at import.
Nothing reads them at import time: :func:`app_settings` reads them the first time it is called.
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
from urllib.parse import urlsplit, urlunsplit

from agents.llm.backend import TOY_DEFAULT, TOY_SWITCH
from agents.settings import SettingError, env_bool, env_float, env_int, env_text
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


# variable → (field, default, low, high); floats are seconds
_INTS = {
    "APP_CONCURRENCY": ("concurrency", 0, 1, 1000),  # Compare runs at once; unset (0 here): default_concurrency()
    "APP_QUEUE_SIZE": ("queue_size", 200, 0, 10_000),  # runs waiting in line; past it: "full, try again"
    "BENCH_MAX_N": ("bench_max_n", 200, 1, 100_000),  # items per benchmark run
    "BENCH_VISITOR_MAX_N": ("bench_visitor_max_n", 20, 1, 100_000),  # for Space visitors not signed in
    "BENCH_CONCURRENCY": ("bench_concurrency", 4, 1, 64),  # benchmarks at once, each with up to 8 pairs
    "APP_SHARE_MAX_MB": ("share_max_mb", 200, 1, 100_000),  # on disk; past it the biggest holder's oldest links go
    "APP_SHARE_PER_HOUR": ("share_per_hour", 20, 1, 100_000),  # new Share links per visitor (address) per hour
    "APP_SHARE_RUN_MB": ("share_run_mb", 5, 1, 20),  # the largest run a link may hold (the upload limit is 20 MB)
    "APP_PAUSED_PER_VISITOR": ("paused_per_visitor", 3, 1, 1000),  # stepping runs one visitor may hold at once
    "APP_FOLLOWUP_TURNS": ("followup_turns", 5, 1, 50),  # turns in one conversation: a question and its follow-ups
    "APP_CONTEXT_BUDGET": ("context_budget", 6000, 200, 1_000_000),  # tokens of earlier turns a follow-up carries
    "APP_POLL_PHONES": ("poll_phones", 300, 1, 5000),  # phones (voters) one class poll room holds (ui/poll/)
    "APP_POLL_ROOMS": ("poll_rooms", 3, 1, 100),  # class poll rooms one teacher (address) may hold at once
    # what one visitor may hold (docs/serving.md, "One visitor cannot take the room"): browsers first, addresses
    # (every client behind one, with or without the browser cookie) as a ceiling a school's class fits under
    "APP_RUNS_PER_VISITOR": ("runs_per_visitor", 3, 1, 1000),  # live runs of one browser (ui/core/admission.py)
    "APP_RUNS_PER_ADDRESS": ("runs_per_address", 40, 1, 10_000),  # live runs from one address, waiting included
    "APP_UPLOAD_MB_PER_VISITOR": ("upload_mb_per_visitor", 100, 1, 100_000),  # uploads of one browser an hour
    "APP_UPLOAD_MB_PER_ADDRESS": ("upload_mb_per_address", 1000, 1, 1_000_000),  # from one address an hour
    "APP_BODY_MB": ("body_mb", 2, 1, 20),  # the largest request body but an upload (ui/core/bodies.py)
    "APP_POLL_VOTERS_PER_ADDRESS": ("poll_voters_per_address", 60, 1, 5000),  # one poll's phones from one address
    # the sandboxes (tools/sandbox_room.py, which reads them in every process): their guests' memory in all, and
    # what one run's scratch folder may hold
    sandbox_room.BUDGET_VAR: ("sandbox_mb", 0, *sandbox_room.BUDGET_RANGE),  # unset (0 here): default_budget_mb()
    sandbox_room.SCRATCH_MB_VAR: ("sandbox_scratch_mb", sandbox_room.SCRATCH_MB, *sandbox_room.SCRATCH_MB_RANGE),
    sandbox_room.SCRATCH_FILES_VAR: ("sandbox_scratch_files", sandbox_room.SCRATCH_FILES,
                                     *sandbox_room.SCRATCH_FILES_RANGE),
}
_SHARE_MB_PER_HOUR = (1, 100_000)  # megabytes of new links per visitor per hour; unset: a tenth of the store
_SHARES = {
    "APP_PAUSED_SHARE": ("paused_share", 0.5, 0.05, 0.9),  # of APP_CONCURRENCY: stepping runs together, at most
}
_SECONDS = {
    "APP_SESSION_TTL": ("session_ttl_s", 900.0, 1.0, 7 * 86400.0),  # an idle visitor's session state is kept
    "APP_PAUSE_TTL": ("pause_ttl_s", 300.0, 1.0, 86400.0),  # a paused run ends after this long without Next/Continue
    "APP_POLL_IDLE": ("poll_idle_s", 7200.0, 10.0, 7 * 86400.0),  # a class poll room ends after this long idle
    "APP_POLL_GRACE_S": ("poll_grace_s", 300.0, 1.0, 86400.0),  # a room ends this long after its teacher's page closed
}
_DAYS = {
    "APP_SHARE_DAYS": ("share_days", 30.0, 0.001, 3650.0),  # a share link works this many days
}
_SWITCHES = {
    "APP_MCP": ("mcp", True),  # serve the one MCP tool (ui/mcp.py) when the mcp package is there
    # off a Space with no model configured, start the toy one (ui/core/backend.py)
    TOY_SWITCH: ("toy_model", TOY_DEFAULT),
    # the sandbox's policy and restricted builtins; off lets a local copy attack the boundary alone. tools/sandbox.py
    # reads it at each call (run workers and the CLI follow it too) and keeps it on when SPACE_ID is set
    "APP_SANDBOX_FILTERS": ("sandbox_filters", True),
    # every process makes itself non-dumpable; off (never on a Space: tools/hardening.py reads it in each process)
    # leaves them readable to their own user, so a test can read each child's environment with that layer removed
    "APP_NON_DUMPABLE": ("non_dumpable", True),
}


@dataclass(frozen=True)
class AppSettings:
    """The app's limits; the defaults are the ones documented in the README."""

    concurrency: int = dataclasses.field(default_factory=default_concurrency)
    queue_size: int = _INTS["APP_QUEUE_SIZE"][1]
    session_ttl_s: float = _SECONDS["APP_SESSION_TTL"][1]
    bench_max_n: int = _INTS["BENCH_MAX_N"][1]
    bench_visitor_max_n: int = _INTS["BENCH_VISITOR_MAX_N"][1]
    bench_concurrency: int = _INTS["BENCH_CONCURRENCY"][1]
    mcp: bool = _SWITCHES["APP_MCP"][1]
    toy_model: bool = _SWITCHES[TOY_SWITCH][1]
    sandbox_filters: bool = _SWITCHES["APP_SANDBOX_FILTERS"][1]
    non_dumpable: bool = _SWITCHES["APP_NON_DUMPABLE"][1]
    share_max_mb: int = _INTS["APP_SHARE_MAX_MB"][1]
    share_days: float = _DAYS["APP_SHARE_DAYS"][1]
    share_per_hour: int = _INTS["APP_SHARE_PER_HOUR"][1]
    share_dir: str | None = None  # APP_SHARE_DIR; None: a folder in the system's temp dir (ui/share/store.py)
    share_mb_per_hour: int = 0  # APP_SHARE_MB_PER_HOUR; 0 (unset): a tenth of the store (share_hourly_mb)
    share_run_mb: int = _INTS["APP_SHARE_RUN_MB"][1]
    pause_ttl_s: float = _SECONDS["APP_PAUSE_TTL"][1]
    paused_per_visitor: int = _INTS["APP_PAUSED_PER_VISITOR"][1]
    paused_share: float = _SHARES["APP_PAUSED_SHARE"][1]
    followup_turns: int = _INTS["APP_FOLLOWUP_TURNS"][1]
    context_budget: int = _INTS["APP_CONTEXT_BUDGET"][1]
    poll_phones: int = _INTS["APP_POLL_PHONES"][1]
    poll_rooms: int = _INTS["APP_POLL_ROOMS"][1]
    poll_idle_s: float = _SECONDS["APP_POLL_IDLE"][1]
    poll_voters_per_address: int = _INTS["APP_POLL_VOTERS_PER_ADDRESS"][1]
    poll_grace_s: float = _SECONDS["APP_POLL_GRACE_S"][1]
    trusted_proxies: tuple[str, ...] = ()  # APP_TRUSTED_PROXIES (ui/core/visitors.py); on a Space: its proxy
    public_url: str | None = None  # APP_PUBLIC_URL: the app's address as phones reach it (join and share links)
    runs_per_visitor: int = _INTS["APP_RUNS_PER_VISITOR"][1]
    runs_per_address: int = _INTS["APP_RUNS_PER_ADDRESS"][1]
    upload_mb_per_visitor: int = _INTS["APP_UPLOAD_MB_PER_VISITOR"][1]
    upload_mb_per_address: int = _INTS["APP_UPLOAD_MB_PER_ADDRESS"][1]
    body_mb: int = _INTS["APP_BODY_MB"][1]
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
        """Read every ``APP_*``/``BENCH_*`` variable; raises :class:`~agents.settings.SettingError` (one line)."""
        values: dict[str, float | bool | str | None] = {}
        for name, (field, default, low, high) in _INTS.items():
            values[field] = env_int(name, default, low, high, environ)
        values["concurrency"] = values["concurrency"] or default_concurrency()
        values["sandbox_mb"] = values["sandbox_mb"] or sandbox_room.default_budget_mb()
        for name, (field, default, low, high) in _SECONDS.items():
            values[field] = env_float(name, default, low, high, environ, unit="seconds")
        for name, (field, on) in _SWITCHES.items():
            values[field] = env_bool(name, on, environ)
        for name, (field, default, low, high) in _DAYS.items():
            values[field] = env_float(name, default, low, high, environ, unit="days")
        for name, (field, default, low, high) in _SHARES.items():
            values[field] = env_float(name, default, low, high, environ)
        values["share_dir"] = env_text("APP_SHARE_DIR", None, environ)
        values["share_mb_per_hour"] = _share_mb_per_hour(int(values["share_max_mb"]), environ)  # type: ignore[arg-type]
        values["trusted_proxies"] = trusted_proxies(env_text("APP_TRUSTED_PROXIES", None, environ))
        values["public_url"] = public_url(env_text("APP_PUBLIC_URL", None, environ))
        if environ is None and not values["sandbox_filters"]:
            _say_filters()
        return cls(**values)  # type: ignore[arg-type]


def _say_filters() -> None:
    """One start-up line when APP_SANDBOX_FILTERS is off: kept on a Space, or off here (a local lesson)."""
    if filters_enabled():
        return  # on a Space: filters_enabled itself said that they stay on
    logging.getLogger(__name__).warning("APP_SANDBOX_FILTERS=off: programs reach the sandbox's boundary without its "
                                        "policy and restricted builtins (never on a Space).")


def _share_mb_per_hour(store_mb: int, environ: Mapping[str, str] | None) -> int:
    """``APP_SHARE_MB_PER_HOUR`` (0: unset, a tenth of the store); never more than half of the store, or one visitor
    could push every other visitor's link out of it within the hour."""
    name, (low, high) = "APP_SHARE_MB_PER_HOUR", _SHARE_MB_PER_HOUR
    value = env_int(name, 0, low, high, environ)
    if value and 2 * value > store_mb:
        raise SettingError(f"{name} must be at most half of APP_SHARE_MAX_MB ({store_mb}), got '{value}': one "
                           "visitor could otherwise push everyone else's links out of the store within an hour")
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
                               f"comma-separated, got {shown!r}") from None
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
                           f"http://192.168.1.20:7860 or https://owner-space.hf.space, got {shown!r}")
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


_current: AppSettings | None = None


def app_settings() -> AppSettings:
    """The settings of this process, read from the environment on first use (tests may replace ``_current``)."""
    global _current
    if _current is None:
        _current = AppSettings.from_env()
    return _current
