"""Choose the network backend under an httpx2 client (agents/llm/abort.py's abortable sockets).

httpx has no public way to give a client's connection pool a network backend of one's own; the pool of
``httpx2.HTTPTransport`` (httpx2 2.16, the httpx that huggingface_hub 2.4 uses) keeps it in
``HTTPTransport._pool._network_backend``. Without the patch Stop still ends a flowing stream at once (closing
the client does); only a request still waiting for the server's headers ends at ``LLM_TIMEOUT`` instead.

That backend also reads a flowing stream in batches in the run workers (``patches/httpx_batched_reads.py``).

Upstream write-up: docs/upstream.md#httpx_backend.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from patches import Patch

PATCH = Patch("httpx_backend", "httpx2", "2.16.2")


def problem(transport: Any) -> str | None:
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        return "the httpx2 HTTPTransport has no _pool._network_backend any more"
    return None


def attach_backend(transports: Iterable[Any], backend: Any) -> bool:
    """Put ``backend`` under the connection pool of each of ``transports`` (each an ``httpx2.HTTPTransport``); False
    (with one log line) when it cannot be done for all of them, and then it is done for none."""
    transports = list(transports)
    if not PATCH.usable(next(filter(None, map(problem, transports)), None) if transports else "no transport"):
        return False
    for transport in transports:
        transport._pool._network_backend = backend
    return True
