"""Every process the app starts is started by :func:`start`, with an environment built from an allow-list.

A child never gets a copy of the app's environment, where the owner's secrets are. It gets only the variables its
kind of work needs: the sandbox's host none (:data:`NOTHING`), the recording reader those any Python needs
(:data:`PLAIN`), a run worker those and the engine's settings (:data:`ENGINE`); an allowed name that reads as a
secret (:func:`tools.hardening.is_secret`) is dropped too. A child that must hold a secret makes itself
non-dumpable first and is sent it over its pipe. docs/serving.md, "Secrets", states the lists.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tools.hardening import is_secret


@dataclass(frozen=True)
class Allowed:
    """The environment variables a kind of child may receive: these names, and names starting with a prefix."""

    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    def admits(self, name: str) -> bool:
        return (name in self.names or name.startswith(self.prefixes)) and not is_secret(name)

    def __or__(self, other: Allowed) -> Allowed:
        return Allowed(self.names | other.names, self.prefixes + other.prefixes)


NOTHING = Allowed()  # the sandbox's host: an empty environment
# What any Python program needs: where programs, the home and temporary files are, the language, and the app's code.
PLAIN = Allowed(frozenset({"PATH", "HOME", "TMPDIR", "TEMP", "TMP", "XDG_CACHE_HOME", "LANG", "LANGUAGE", "TZ",
                           "PYTHONPATH", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8",
                           "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"}), ("LC_",))
# A run worker: the engine's settings (the model's, the app's switches such as APP_SANDBOX_FILTERS, huggingface_hub's,
# the Space's public facts: SPACE_ID keeps the sandbox's filters on), how to reach the network, and which memory
# budget its sandboxes share with the app's (tools/sandbox_room.POOL_VAR).
ENGINE = PLAIN | Allowed(frozenset({"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
                                    "all_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
                                    "CURL_CA_BUNDLE", "THINK_ACT_REACT_SANDBOX_POOL"}),
                         ("LLM_", "APP_", "HF_", "SPACE_"))


def environment(allowed: Allowed, environ: Mapping[str, str] | None = None,
                extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A child's environment: the variables of ``environ`` (the app's) that ``allowed`` admits, then ``extra``
    (values the app sets itself, such as ``PYTHONPATH``), which must be admitted too."""
    source = os.environ if environ is None else environ
    env = {name: value for name, value in source.items() if allowed.admits(name)}
    for name, value in (extra or {}).items():
        if not allowed.admits(name):
            raise ValueError(f"{name} is not a variable this kind of child may receive")
        env[name] = value
    return env


def start(argv: Sequence[str], allowed: Allowed, *, extra_env: Mapping[str, str] | None = None,
          **popen: Any) -> subprocess.Popen:
    """Start ``argv`` as a child of this process with :func:`environment` (``popen``: ``subprocess.Popen``'s other
    arguments: pipes, ``cwd``, ``pass_fds``, ``start_new_session``)."""
    if "env" in popen:
        raise TypeError("a child's environment comes from its allow-list, not from env=")
    return subprocess.Popen(list(argv), env=environment(allowed, extra=extra_env), **popen)


def tidy_on_sigterm(cleanup: Callable[[], None]) -> None:
    """On SIGTERM, run ``cleanup`` (the sandbox's hosts and scratch folders) and then end by SIGTERM as before.

    Only from the main thread (Python's rule for signal handlers); elsewhere it does nothing."""

    def handler(signum: int, _frame: Any) -> None:
        try:
            cleanup()
        finally:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        pass
