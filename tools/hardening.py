"""Keeping secrets from other processes of the same user: non-dumpable processes, secret-free environments.

On a Space the app runs as a plain user with the owner's ``HF_TOKEN``; so does every process it starts. Any
process of that user may read another's ``/proc/<pid>/environ``, its memory and its open pipes, or attach a
debugger to it, unless that process is *non-dumpable* (``prctl(PR_SET_DUMPABLE, 0)``): the kernel then
allows those only to a holder of ``CAP_SYS_PTRACE`` (root, e.g. ``sudo py-spy``). A process that holds a
secret calls :func:`make_non_dumpable` as the first thing it does: the app (``app.main``) and each run worker.

A process that needs no secret is started without any: :func:`without_secrets` drops every variable
:func:`is_secret` names. Only the standard library is imported here, so a process can be hardened before it
imports anything else.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Mapping

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
# The names Hugging Face's libraries read a token from, and the endings that mark a name as a secret.
SECRET_NAMES = frozenset({"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_API_TOKEN"})
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")
LINUX = sys.platform.startswith("linux")  # prctl and /proc are Linux's

_lock = threading.Lock()


def make_non_dumpable() -> bool:
    """Make this process non-dumpable; True when it is (now or already). Off Linux: nothing, False.

    Safe to call from any thread, any number of times. Side effects, for this process only: no core
    dumps, and no debugger or profiler of the same user can attach (root's still can)."""
    if not LINUX:
        return False
    with _lock:
        if _prctl(PR_GET_DUMPABLE) != 0:
            _prctl(PR_SET_DUMPABLE, 0)
        return _prctl(PR_GET_DUMPABLE) == 0


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


def without_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``environ`` without the variables :func:`is_secret` names, for a child process."""
    return {name: value for name, value in environ.items() if not is_secret(name)}


def _prctl(option: int, value: int = 0) -> int:
    """``prctl(option, value, 0, 0, 0)``; -1 when it fails or libc has no prctl."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0))
    except (OSError, AttributeError):
        return -1
