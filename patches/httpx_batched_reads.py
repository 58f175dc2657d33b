"""Read a flowing model stream at most every 50 ms, in the run workers (the switch of ``agents/llm/abort.py``'s
batching).

The batching lives in the network backend that ``patches/httpx_backend.py`` puts under huggingface_hub's httpx2
client: with that patch off there is no backend of ours, so no batching either. This module is its own switch
(``APP_PATCHES_OFF=httpx_batched_reads``), so ``bench_app.py --patches-off httpx_batched_reads`` measures the
batching alone; it touches nothing itself.

Upstream write-up: docs/upstream.md#httpx_batched_reads.
"""

from __future__ import annotations

from patches import Patch

PATCH = Patch("httpx_batched_reads", "httpx2", "2.16.2")
