"""The app's own settings (``APP_*``, ``BENCH_*``): declared once, read once, validated at start-up.

Each field's default and accepted range live here and nowhere else; the values are read through
:mod:`agents.settings`' reader, so ``APP_CONCURRENCY=abc`` stops ``python app.py`` with the one line
``APP_CONCURRENCY must be an integer from 1 to 1000, got 'abc'`` instead of a traceback at import.
Nothing reads them at import time: :func:`app_settings` reads them the first time it is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agents.settings import env_bool, env_float, env_int, env_text

# variable → (field, default, low, high); floats are seconds
_INTS = {
    "APP_CONCURRENCY": ("concurrency", 64, 1, 1000),  # Compare runs at once
    "APP_QUEUE_SIZE": ("queue_size", 200, 0, 10_000),  # runs waiting in line; past it: "full, try again"
    "BENCH_MAX_N": ("bench_max_n", 200, 1, 100_000),  # items per benchmark run
    "BENCH_VISITOR_MAX_N": ("bench_visitor_max_n", 20, 1, 100_000),  # for Space visitors not signed in
    "BENCH_CONCURRENCY": ("bench_concurrency", 4, 1, 64),  # benchmarks at once, each with up to 8 pairs
    "APP_SHARE_MAX_MB": ("share_max_mb", 200, 1, 100_000),  # shared runs kept on disk; oldest evicted past it
    "APP_SHARE_PER_HOUR": ("share_per_hour", 20, 1, 100_000),  # new Share links per visitor (address) per hour
}
_SECONDS = {
    "APP_SESSION_TTL": ("session_ttl_s", 900.0, 1.0, 7 * 86400.0),  # an idle visitor's session state is kept
}
_DAYS = {
    "APP_SHARE_DAYS": ("share_days", 30.0, 0.001, 3650.0),  # a share link works this many days
}
_SWITCHES = {
    "APP_MCP": ("mcp", True),  # serve the one MCP tool (ui/mcp_tool.py) when the mcp package is there
    "APP_TOY_MODEL": ("toy_model", True),  # off a Space with no model configured, start the toy one (ui/backend.py)
}


@dataclass(frozen=True)
class AppSettings:
    """The app's limits; the defaults are the ones documented in the README."""

    concurrency: int = _INTS["APP_CONCURRENCY"][1]
    queue_size: int = _INTS["APP_QUEUE_SIZE"][1]
    session_ttl_s: float = _SECONDS["APP_SESSION_TTL"][1]
    bench_max_n: int = _INTS["BENCH_MAX_N"][1]
    bench_visitor_max_n: int = _INTS["BENCH_VISITOR_MAX_N"][1]
    bench_concurrency: int = _INTS["BENCH_CONCURRENCY"][1]
    mcp: bool = _SWITCHES["APP_MCP"][1]
    toy_model: bool = _SWITCHES["APP_TOY_MODEL"][1]
    share_max_mb: int = _INTS["APP_SHARE_MAX_MB"][1]
    share_days: float = _DAYS["APP_SHARE_DAYS"][1]
    share_per_hour: int = _INTS["APP_SHARE_PER_HOUR"][1]
    share_dir: str | None = None  # APP_SHARE_DIR; None: a folder in the system's temp dir (ui/share.py)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AppSettings:
        """Read every ``APP_*``/``BENCH_*`` variable; raises :class:`~agents.settings.SettingError` (one line)."""
        values: dict[str, float | bool | str | None] = {}
        for name, (field, default, low, high) in _INTS.items():
            values[field] = env_int(name, default, low, high, environ)
        for name, (field, default, low, high) in _SECONDS.items():
            values[field] = env_float(name, default, low, high, environ, unit="seconds")
        for name, (field, on) in _SWITCHES.items():
            values[field] = env_bool(name, on, environ)
        for name, (field, default, low, high) in _DAYS.items():
            values[field] = env_float(name, default, low, high, environ, unit="days")
        values["share_dir"] = env_text("APP_SHARE_DIR", None, environ)
        return cls(**values)


_current: AppSettings | None = None


def app_settings() -> AppSettings:
    """The settings of this process, read from the environment on first use (tests may replace ``_current``)."""
    global _current
    if _current is None:
        _current = AppSettings.from_env()
    return _current
