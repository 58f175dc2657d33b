"""A tool that looks for secrets from inside the process running it: a run worker imports it by reference, so
``test_worker_secrets.py`` can see what that process's environment block, ``os.environ`` and huggingface_hub hold."""

from __future__ import annotations

import json
import os

from huggingface_hub import get_token

from tools.hardening import is_dumpable, is_secret
from tools.registry import tool


@tool
def secret_probe(canaries: str) -> str:
    """Report where each comma-separated canary appears in this process."""
    with open("/proc/self/environ", "rb") as f:
        block = f.read().decode(errors="replace")
    names = [entry.split("=", 1)[0] for entry in block.split("\0") if "=" in entry]
    found = {c: {"environ_block": c in block, "os_environ": c in os.environ.values(), "hub_token": get_token() == c}
             for c in canaries.split(",")}
    return json.dumps({"pid": os.getpid(), "dumpable": is_dumpable(), "found": found,
                       "secret_names_in_block": [n for n in names if is_secret(n)]})
