"""Every environment variable the app reads, declared once; the one reader; the start-up check.

:data:`DECLARED` gives each variable its type, default, range and one line of help; :func:`read` reads one
through the checking readers (:func:`env_int` and the rest), whose :class:`SettingError` is the one line to show.
:func:`check_environment` reads them all at start, warns once per unknown ``APP_`` name, and on a Space takes
the default for a bad value. Only the standard library is imported, so every layer and every process may use it.
"""

from __future__ import annotations

import difflib
import logging
import math
import os
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

KINDS = ("int", "float", "bool", "text", "raw")  # raw: any text, its own module parses it (JSON, a list)
SWITCH = "1/0, true/false, on/off, yes/no"
PREFIX = "APP_"  # an unknown name with it is one warning line at start


@dataclass(frozen=True)
class Setting:
    """One variable. ``default`` None: unset, the reader works it out (``shown`` says how, for the docs);
    ``accepted`` the docs' wording of the range when the numbers alone do not say it."""

    name: str
    kind: str
    default: Any = None
    low: float | None = None
    high: float | None = None
    help: str = ""
    unit: str = ""
    prefixes: tuple[str, ...] = ()
    secret: bool = False
    shown: str | None = None
    accepted: str | None = None

    @property
    def bounds(self) -> tuple[Any, Any]:
        return self.low, self.high

    @property
    def default_text(self) -> str:
        """The default as docs/configuration.md writes it."""
        if self.shown is not None:
            return self.shown
        if self.default is None:
            return "none"
        if self.kind == "bool":
            return "on" if self.default else "off"
        return _doc_number(self.default) if self.kind in ("int", "float") else f"`{self.default}`"

    @property
    def accepted_text(self) -> str:
        """The accepted values as docs/configuration.md writes them."""
        if self.accepted is not None:
            return self.accepted
        if self.kind == "bool":
            return SWITCH
        span = f"{_doc_number(self.low)} to {_doc_number(self.high)}" if self.low is not None else ""
        return f"integer, {span}" if self.kind == "int" else span or "one line"


def _doc_number(value: float) -> str:
    """A number as the docs write it: whole ones in full (1000000), others as the messages do (0.05)."""
    return str(int(value)) if float(value).is_integer() else _number(value)


def _int(name: str, default: int | None, low: int, high: int, help: str, **more: Any) -> Setting:
    return Setting(name, "int", default, low, high, help, **more)


def _float(name: str, default: float | None, low: float, high: float, help: str, **more: Any) -> Setting:
    return Setting(name, "float", default, low, high, help, **more)


def _bool(name: str, default: bool, help: str) -> Setting:
    return Setting(name, "bool", default, help=help)


def _text(name: str, help: str, kind: str = "text", **more: Any) -> Setting:
    return Setting(name, kind, more.pop("default", None), help=help, **more)


S, D, USD = "seconds", "days", "US dollars per million tokens"
DECLARED = (
    # the model (agents/llm/settings.py)
    _text("LLM_BASE_URL", "an OpenAI-compatible server; wins over HF_TOKEN", prefixes=("http://", "https://"),
          accepted="`http://…` or `https://…`"),
    _text("LLM_API_KEY", "the key for LLM_BASE_URL, if it needs one", secret=True),
    _text("LLM_MODEL", "the model id, used as is; unset: the server's first, or the router's default"),
    _text("HF_TOKEN", "a Hugging Face token: the Hugging Face router", secret=True),
    _text("LLM_PROVIDER", "the router's provider policy", default="auto"),
    _float("LLM_TIMEOUT", 60.0, 0.1, 86400.0, "seconds the model may stay silent", unit=S),
    _float("LLM_MAX_DURATION", 600.0, 0.1, 86400.0, "seconds one model call may stream in all", unit=S),
    _int("LLM_MAX_TOKENS", 2048, 1, 1_000_000, "longest reply per call, in tokens"),
    _int("LLM_MAX_CONCURRENT", None, 0, 1000, "model calls in flight per process; 0: unlimited; unset: automatic",
         accepted="integer, 0 (unlimited) to 1000"),
    _float("APP_PRICE_INPUT", None, 0.0, 1000.0, "USD per million input tokens (with APP_PRICE_OUTPUT)", unit=USD),
    _float("APP_PRICE_OUTPUT", None, 0.0, 1000.0, "USD per million output tokens (with APP_PRICE_INPUT)", unit=USD),
    # the app (ui/core/settings.py, and the modules named)
    _int("APP_CONCURRENCY", None, 1, 1000, "simultaneous Compare runs", shown="50 for each core"),
    _int("APP_QUEUE_SIZE", 200, 0, 10_000, "runs waiting in line beyond those"),
    _float("APP_SESSION_TTL", 900.0, 1.0, 7 * 86400.0, "seconds an idle visitor's session state is kept", unit=S),
    _int("APP_RUN_WORKERS", 4, 0, 8, "worker processes for live runs (agents/hosting); 0: the app's own"),
    _text("APP_PATCHES_OFF", "framework patches to leave off, by name, or all (patches/)", kind="raw",
          accepted="comma-separated"),
    _int("BENCH_MAX_N", 200, 1, 100_000, "most items (and items × tries) one Benchmark run may take"),
    _int("BENCH_VISITOR_MAX_N", 20, 1, 100_000, "the same for a Space visitor not signed in"),
    _int("BENCH_CONCURRENCY", 4, 1, 64, "Benchmark runs at once"),
    _text("APP_SHARE_DIR", "folder of shared runs", shown="`/data/think-act-react-shared` on a Space",
          accepted="a path"),
    _int("APP_SHARE_MAX_MB", 200, 1, 100_000, "total size of the shared runs kept"),
    _float("APP_SHARE_DAYS", 30.0, 0.001, 3650.0, "days a Share link works", unit=D),
    _int("APP_SHARE_PER_HOUR", 20, 1, 100_000, "new Share links one visitor may make per hour"),
    _int("APP_SHARE_MB_PER_HOUR", None, 1, 100_000, "megabytes of new Share links one visitor may add per hour",
         shown="a tenth of `APP_SHARE_MAX_MB`", accepted="integer, 1 to half of `APP_SHARE_MAX_MB`"),
    _int("APP_SHARE_RUN_MB", 5, 1, 20, "the largest run a Share link may hold"),
    _int("APP_RUNS_PER_VISITOR", 3, 1, 1000, "live runs one browser may have at once"),
    _int("APP_RUNS_PER_ADDRESS", 40, 1, 10_000, "live runs one address may have at once"),
    _int("APP_UPLOAD_MB_PER_VISITOR", 100, 1, 100_000, "megabytes one browser may upload an hour"),
    _int("APP_UPLOAD_MB_PER_ADDRESS", 1000, 1, 1_000_000, "megabytes one address may upload an hour"),
    _int("APP_BODY_MB", 2, 1, 20, "the largest request body but an upload"),
    _int("APP_SANDBOX_MB", None, 512, 1 << 20, "memory the sandboxes' guests may be given together (tools/)",
         shown="half the memory the app may use"),
    _int("APP_SANDBOX_SCRATCH_MB", 64, 8, 4096, "megabytes a run's scratch folder may hold"),
    _int("APP_SANDBOX_SCRATCH_FILES", 256, 16, 100_000, "files and folders a run's scratch folder may hold"),
    _float("APP_PAUSE_TTL", 300.0, 1.0, 86400.0, "seconds a run stepped through may stay paused", unit=S),
    _int("APP_PAUSED_PER_VISITOR", 3, 1, 1000, "runs one visitor may step through at once"),
    _float("APP_PAUSED_SHARE", 0.5, 0.05, 0.9, "the share of APP_CONCURRENCY runs stepped through may hold"),
    _float("APP_POLL_IDLE", 7200.0, 10.0, 7 * 86400.0, "seconds a class poll room lives without activity", unit=S),
    _int("APP_POLL_PHONES", 300, 1, 5000, "phones one class poll room holds"),
    _int("APP_POLL_ROOMS", 3, 1, 100, "class poll rooms one teacher may hold at once"),
    _int("APP_POLL_VOTERS_PER_ADDRESS", 60, 1, 5000, "phones one address may bring into one poll room"),
    _float("APP_POLL_GRACE_S", 300.0, 1.0, 86400.0, "seconds a poll room lives on after its teacher's page closed",
           unit=S),
    _text("APP_PUBLIC_URL", "the app's address as phones and other visitors open it",
          accepted="`http(s)://host[:port][/path]`, no query"),
    _text("APP_TRUSTED_PROXIES", "the reverse proxies in front of the app", shown="none off a Space",
          accepted="e.g. `10.0.0.5, 10.0.0.0/8`"),
    _bool("APP_MCP", True, "serve the MCP tool compare_reasoning_modes"),
    _int("APP_FOLLOWUP_TURNS", 5, 1, 50, "turns one conversation may have"),
    _int("APP_CONTEXT_BUDGET", 6000, 200, 1_000_000, "tokens of earlier turns a follow-up gives each mode"),
    _text("APP_SECRET", "the key that seals follow-ups and browsers' identities (agents/app_key.py)", kind="raw",
          secret=True, shown="random per process", accepted="any text"),
    _text("APP_MCP_SERVERS", "MCP servers whose tools join the built-in ones (tools/mcp_config.py)", kind="raw",
          accepted="a JSON list"),
    _bool("APP_TOY_MODEL", True, "off a Space with no model configured, start the toy model"),
    _bool("APP_NON_DUMPABLE", True, "every process makes itself non-dumpable (tools/hardening.py)"),
    _bool("APP_SANDBOX_FILTERS", True, "the Python sandbox's policy and restricted builtins (tools/sandbox.py)"),
)
SETTINGS: dict[str, Setting] = {s.name: s for s in DECLARED}


class SettingError(ValueError):
    """An environment variable with a value the app cannot use; ``str(exc)`` is one line naming it, ``name``
    the variable to drop for its default (None when no one variable is to blame)."""

    def __init__(self, message: str, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


def read(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The value of a declared variable (its default when unset or blank); :class:`SettingError` when bad."""
    s = SETTINGS[name]
    if s.kind == "int":
        return env_int(name, s.default, int(s.low), int(s.high), environ)  # type: ignore[arg-type]
    if s.kind == "float":
        return env_float(name, s.default, s.low, s.high, environ, unit=s.unit)  # type: ignore[arg-type]
    if s.kind == "bool":
        return env_bool(name, s.default, environ)
    if s.kind == "text":
        return env_text(name, s.default, environ, prefixes=s.prefixes, secret=s.secret)
    value = (os.environ if environ is None else environ).get(name)
    return value if value is not None and value.strip() else s.default


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    return value.strip() if value is not None and value.strip() else None


def _shown(value: str) -> str:
    """The bad value as the message quotes it: never a long one in full (it may be a pasted secret)."""
    return repr(value if len(value) <= 40 else value[:37] + "...")


def _number(value: float) -> str:
    return f"{value:g}"


def env_int(name: str, default: int, low: int, high: int, environ: Mapping[str, str] | None = None) -> int:
    """An integer from ``low`` to ``high`` (inclusive), or ``default`` when unset."""
    raw = _raw(name, environ)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise SettingError(f"{name} must be an integer from {low} to {high}, got {_shown(raw)}", name)
    return value


def env_float(name: str, default: float, low: float, high: float, environ: Mapping[str, str] | None = None,
              *, unit: str = "") -> float:
    """A finite number from ``low`` to ``high`` (inclusive), or ``default`` when unset."""
    raw = _raw(name, environ)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        what = f"a number of {unit}" if unit else "a number"
        raise SettingError(f"{name} must be {what} from {_number(low)} to {_number(high)}, got {_shown(raw)}", name)
    return value


_BOOLS = {"1": True, "0": False, "true": True, "false": False, "on": True, "off": False, "yes": True, "no": False}


def env_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    """A switch: 1/0, true/false, on/off or yes/no (any case), or ``default`` when unset.

    Anything else is refused rather than read as "off": ``APP_MCP=disabled`` must not leave a server on.
    """
    raw = _raw(name, environ)
    if raw is None:
        return default
    value = _BOOLS.get(raw.lower())
    if value is None:
        raise SettingError(f"{name} must be one of {SWITCH}, got {_shown(raw)}", name)
    return value


def env_text(name: str, default: str | None = None, environ: Mapping[str, str] | None = None, *,
             prefixes: tuple[str, ...] = (), secret: bool = False) -> str | None:
    """A stripped string, or ``default`` when unset; with ``prefixes`` it must start with one of them.

    A ``secret`` value is never quoted in the message.
    """
    raw = _raw(name, environ)
    if raw is None:
        return default
    got = "" if secret else f", got {_shown(raw)}"
    if any(ch in raw for ch in "\r\n\x00"):
        raise SettingError(f"{name} must be one line without control characters{got}", name)
    if prefixes and not raw.lower().startswith(prefixes):
        raise SettingError(f"{name} must start with {' or '.join(prefixes)}{got}", name)
    return raw


def unknown_names(environ: Mapping[str, str]) -> list[str]:
    """One warning line for each ``APP_`` variable that is not declared, naming the closest declared one."""
    lines = []
    for name in sorted(n for n in environ if n.startswith(PREFIX) and n not in SETTINGS):
        close = difflib.get_close_matches(name, SETTINGS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        lines.append(f"{name} is not a setting of this app{hint}; it is ignored")
    return lines


Reader = Callable[[Mapping[str, str]], object]


def check_environment(readers: Iterable[Reader] = (), environ: MutableMapping[str, str] | None = None) -> None:
    """At start: warn once per unknown ``APP_`` name, then read every declared variable and each of ``readers``
    (the checks that span variables). A bad value raises :class:`SettingError`; on a Space (``SPACE_ID`` set) it is
    one log line, the variable leaves the environment (so this process and its children take the default), and the
    app starts."""
    env = os.environ if environ is None else environ
    for line in unknown_names(env):
        log.warning("%s", line)
    checks = [*(lambda e, n=s.name: read(n, e) for s in DECLARED), *readers]
    for _ in range(len(DECLARED) + 1):
        try:
            for check in checks:
                check(env)
            return
        except SettingError as exc:
            if not env.get("SPACE_ID") or exc.name not in env:
                raise
            log.warning("%s; using the default", exc)
            del env[exc.name]
