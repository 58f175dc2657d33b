"""A tool that looks for secrets from inside the process running it: a run worker imports it by reference, so
``test_worker_secrets.py`` can see what that process's environment block, ``os.environ`` and huggingface_hub hold."""

from __future__ import annotations

import json
import os

from huggingface_hub import get_token

from tools.hardening import is_dumpable, is_secret
from tools.registry import tool


def _own_environ_block() -> str:
    """This process's environment block. A non-dumpable process's /proc entries are root's, so a plain user's
    worker cannot read even its own: the probe lifts the flag for the read and sets it again at once."""
    try:
        with open("/proc/self/environ", "rb") as f:
            return f.read().decode(errors="replace")
    except PermissionError:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
        try:
            with open("/proc/self/environ", "rb") as f:
                return f.read().decode(errors="replace")
        finally:
            prctl(4, 0, 0, 0, 0)


@tool
def secret_probe(canaries: str) -> str:
    """Report where each comma-separated canary appears in this process."""
    dumpable = is_dumpable()  # before the read, which lifts the flag for a moment as a plain user
    block = _own_environ_block()
    names = [entry.split("=", 1)[0] for entry in block.split("\0") if "=" in entry]
    found = {c: {"environ_block": c in block, "os_environ": c in os.environ.values(), "hub_token": get_token() == c}
             for c in canaries.split(",")}
    return json.dumps({"pid": os.getpid(), "dumpable": dumpable, "found": found,
                       "secret_names_in_block": [n for n in names if is_secret(n)]})
