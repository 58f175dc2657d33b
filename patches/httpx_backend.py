"""Choose the network backend under an httpx2 client (agents/llm/abort.py's abortable sockets).

httpx has no public way to give a client's connection pool a network backend of one's own; the pool of
``httpx2.HTTPTransport`` (httpx2 2.16, the httpx that huggingface_hub 2.4 uses) keeps it in
``_transport._pool._network_backend``. Without the patch Stop still ends a flowing stream at once (closing
the client does); only a request still waiting for the server's headers ends at ``LLM_TIMEOUT`` instead.

That backend also reads a flowing stream in batches in the run workers (``patches/httpx_batched_reads.py``).
"""

from __future__ import annotations

from typing import Any

from patches import Patch

PATCH = Patch("httpx_backend", "httpx2", "2.16.2")


def problem(client: Any) -> str | None:
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        return "the httpx2 client's transport has no _pool._network_backend any more"
    return None


def attach_backend(client: Any, backend: Any) -> bool:
    """Put ``backend`` under ``client``'s connection pool; False (with one log line) when it cannot be done."""
    if not PATCH.usable(problem(client)):
        return False
    client._transport._pool._network_backend = backend
    return True
