"""Keeping secrets from other processes of the same user: non-dumpable processes, secret-free environments.

A process of the same user may read another's environment and memory unless that one is *non-dumpable*
(``prctl(PR_SET_DUMPABLE, 0)``); a process holding a secret calls :func:`make_non_dumpable` first. A child that
needs no secret gets none (:mod:`tools.children` drops every name :func:`is_secret` matches). Only the standard
library is imported, so a process is hardened before anything else. ``APP_NON_DUMPABLE=off`` leaves processes
dumpable (a test), never on a Space.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Mapping

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
# The names Hugging Face's libraries read a token from, and the endings that mark a name as a secret.
SECRET_NAMES = frozenset({"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_API_TOKEN"})
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")
LINUX = sys.platform.startswith("linux")  # prctl and /proc are Linux's
DUMPABLE_VAR = "APP_NON_DUMPABLE"  # declared in settings.py, checked at start; read here alone, failing closed
_OFF = frozenset({"0", "false", "off", "no"})

_lock = threading.Lock()


def make_non_dumpable() -> bool:
    """Make this process non-dumpable; True when it is (now or already). Off Linux: nothing, False.

    Safe to call from any thread, any number of times. Side effects, for this process only: no core
    dumps, and no debugger or profiler of the same user can attach (root's still can). With
    ``APP_NON_DUMPABLE=off`` (off a Space) it does nothing and returns False."""
    if not LINUX or not hardened():
        return False
    with _lock:
        if _prctl(PR_GET_DUMPABLE) != 0:
            _prctl(PR_SET_DUMPABLE, 0)
        return _prctl(PR_GET_DUMPABLE) == 0


def hardened(environ: Mapping[str, str] | None = None) -> bool:
    """Whether processes make themselves non-dumpable: always on a Space, else unless ``APP_NON_DUMPABLE`` is off."""
    env = os.environ if environ is None else environ
    return env.get(DUMPABLE_VAR, "").strip().lower() not in _OFF or bool(env.get("SPACE_ID"))


def is_dumpable() -> bool | None:
    """Whether a same-user process may read this one (None: not Linux, or the kernel did not say)."""
    if not LINUX:
        return None
    state = _prctl(PR_GET_DUMPABLE)
    return None if state < 0 else state == 1


def is_secret(name: str) -> bool:
    """Whether an environment variable is treated as a secret: one of :data:`SECRET_NAMES`, or a name whose
    last word is TOKEN, KEY, SECRET or PASSWORD (``LLM_API_KEY``, ``OAUTH_CLIENT_SECRET``, ``TOKEN``), in
    any case. A secret under another name (a URL with a password in it) is not recognised."""
    upper = name.upper()
    return upper in SECRET_NAMES or upper.rsplit("_", 1)[-1] in SECRET_WORDS


def _prctl(option: int, value: int = 0) -> int:
    """``prctl(option, value, 0, 0, 0)``; -1 when it fails or libc has no prctl."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0))
    except (OSError, AttributeError):
        return -1
