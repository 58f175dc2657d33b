"""The model client's connections, in several pools: a request or a reply's end looks at a few streams, not all.

httpcore's pool walks every connection it holds (closed? idle? expired?) each time a request starts and each
time a reply ends. A process streams all its runs' replies through huggingface_hub's one shared client, so in a
burst (100 visitors' All runs: 300 streams at once) each walk covered hundreds of connections, and the walks of a
burst cost more CPU than anything else a run does to start. Here each thread sends through one of
:data:`SHARDS` pools (dealt round robin on its first request), so a walk covers a sixteenth of them.

Built with httpx's public custom-transport interface: every shard is an ordinary ``httpx.HTTPTransport``.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from huggingface_hub.utils import httpx  # httpx2 under its stable alias

SHARDS = 16
# Per shard. The threads streaming at once are dealt evenly, so a shard holds about 1/SHARDS of them; the cap
# (well above that) only bounds a runaway.
SHARD_LIMITS = httpx.Limits(max_connections=256, max_keepalive_connections=16)


class ShardedTransport(httpx.BaseTransport):
    """Sends each request through its thread's shard: one thread's requests always share a pool."""

    def __init__(self, make_shard: Callable[[], httpx.BaseTransport], shards: int = SHARDS) -> None:
        self.shards = [make_shard() for _ in range(shards)]
        self._dealt = itertools.count()  # next() is atomic under the GIL
        self._mine = threading.local()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.shards[self._index()].handle_request(request)

    def _index(self) -> int:
        try:
            return self._mine.index
        except AttributeError:
            self._mine.index = next(self._dealt) % len(self.shards)
            return self._mine.index

    def close(self) -> None:
        for shard in self.shards:
            shard.close()
