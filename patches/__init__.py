"""Every place this app changes a library's internals, one module each, so none is hidden anywhere else.

A patch names the version it was written for, checks at start-up that what it touches is still there and
switches itself off with one log line when it is not (the app then runs without it: slower, never wrong);
where failing open would widen access it fails closed. The library a patch touches is pinned to exactly that
version in requirements.txt, and the check's log line says so. ``APP_PATCHES_OFF`` (names, comma-separated) turns
patches off, so ``python bench/bench_app.py --patches-off NAME`` can measure what each brings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from settings import SettingError, read

log = logging.getLogger(__name__)

ENV = "APP_PATCHES_OFF"
# Each patch's one name: its module's, and what APP_PATCHES_OFF (and bench_app.py --patches-off) calls it.
NAMES = ("gradio_queue", "gradio_sessions", "page_cache", "hf_stream_parse", "gradio_mcp", "gradio_inputs",
         "gradio_refusals", "httpx_backend", "httpx_batched_reads", "gradio_login_check", "matplotlib_probe",
         "gradio_generators", "fastapi_route_match")
# Earlier names that APP_PATCHES_OFF still accepts (a setting outlives a rename); None: a patch since removed, ignored.
OLD_NAMES: dict[str, str | None] = {
    "gradio_queue_poll": "gradio_queue", "gradio_mcp_one_tool": "gradio_mcp", "gradio_optional_inputs": "gradio_inputs",
    "gradio_readable_refusals": "gradio_refusals", "httpx_network_backend": "httpx_backend",
}


def _listed(environ: Mapping[str, str] | None = None) -> list[str]:
    return [n for n in (n.strip() for n in (read(ENV, environ) or "").split(",")) if n]


def turned_off(environ: Mapping[str, str] | None = None) -> set[str]:
    """The patches ``APP_PATCHES_OFF`` turns off, by their current names (or ``all``)."""
    return {name for n in _listed(environ) if (name := OLD_NAMES.get(n, n)) is not None}


def env_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """One line when ``APP_PATCHES_OFF`` names a patch that does not exist (checked at start-up), else None."""
    unknown = [n for n in _listed(environ) if n not in (*NAMES, *OLD_NAMES, "all")]
    if unknown:
        return f"{ENV} must name patches among {', '.join(NAMES)} (or all), got {', '.join(unknown)}"
    return None


def check_env(environ: Mapping[str, str] | None = None) -> None:
    """:func:`env_problem` as a :class:`~settings.SettingError`, for the start-up check."""
    if (problem := env_problem(environ)) is not None:
        raise SettingError(problem, ENV)


_decisions: dict[str, bool] = {}  # patch name → usable, for the patches checked on first use (Patch.decided)


@dataclass(frozen=True)
class Patch:
    """What a patch touches: its name (for ``APP_PATCHES_OFF``), the library and the version it was written for."""

    name: str
    library: str
    written_for: str

    def wanted(self) -> bool:
        """Not turned off by ``APP_PATCHES_OFF``."""
        off = turned_off()
        return self.name not in off and "all" not in off

    def usable(self, problem: str | None) -> bool:
        """True when the patch may be applied; otherwise one log line says why it is off.

        ``problem`` is the patch's own check of the internal it touches (None: as expected)."""
        if not self.wanted():
            log.info("patch %s is off (%s)", self.name, ENV)
            return False
        if problem is not None:
            log.warning("patch %s is off: %s (written for %s %s, %s; found %s)", self.name, problem, self.library,
                        self.written_for, self.pin_note(), self.installed())
            return False
        if self.installed() != self.written_for:
            log.warning("patch %s was written for %s %s (%s), found %s: what it touches checks out, so it stays on",
                        self.name, self.library, self.written_for, self.pin_note(), self.installed())
        return True

    def pin_note(self) -> str:
        """Why the library's version is exact: this patch (docs/dependencies.md)."""
        return f"requirements.txt pins {self.library}=={self.written_for} for this patch"

    def decided(self, check: Callable[[], str | None]) -> bool:
        """:meth:`usable`, decided on the first call and kept: for a patch checked lazily, by the first request
        that needs it (the log says then whether it is off)."""
        if self.name not in _decisions:
            _decisions[self.name] = self.usable(check())
        return _decisions[self.name]


    def installed(self) -> str:
        try:
            return version(self.library)
        except PackageNotFoundError:
            return "none"
