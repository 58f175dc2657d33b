"""A class's phones on the poll, in one process: each phone does what ``ui/poll/phone.html`` does, over HTTP.

A phone opens the join link, reads the room (``GET /poll/CODE``), then asks again one second after each answer with
the ``ETag`` it has, on a keep-alive connection of its own; some phones vote once. Each room's teacher screen ticks
once a second as the page's ``gr.Timer`` does. Every phone is a coroutine on one asyncio loop with a hand-rolled
HTTP/1.1 client, at a lowered priority (``nice``), so the app's cores stay the app's. Driven from bench_poll.py
through a pipe (:class:`Class`).
"""

from __future__ import annotations

import asyncio
import bisect
import json
import os
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

EVERY_S = 1.0  # the phone page asks again this long after each answer (phone.html's ``wait``)


class Connection:
    """One keep-alive HTTP/1.1 connection (a phone's browser), reconnecting once when the server closed it."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.lock = asyncio.Lock()  # a vote and a refresh of one phone never share the wire at once

    async def request(self, method: str, path: str, headers: dict[str, str] | None = None,
                      body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        for name, value in (headers or {}).items():
            head += f"{name}: {value}\r\n"
        if body or method == "POST":
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        raw = (head + "\r\n").encode("latin-1") + body
        async with self.lock:
            for attempt in (0, 1):
                try:
                    if self.writer is None:
                        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
                    self.writer.write(raw)
                    return await self._response(method)
                except (ConnectionError, asyncio.IncompleteReadError):
                    self.close()
                    if attempt:
                        raise
        raise AssertionError("unreachable")

    async def _response(self, method: str) -> tuple[int, dict[str, str], bytes]:
        assert self.reader is not None
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if status in (204, 304) or method == "HEAD":
            data = b""
        elif "content-length" in headers:
            data = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            data = b""
            while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
                data += (await self.reader.readexactly(size + 2))[:-2]
            await self.reader.readuntil(b"\r\n")
        else:
            data = await self.reader.read()
            self.close()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, data

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class Phone:
    """One student's phone: what it was shown when (``seen``: perf_counter, phones' version), its requests' times."""

    room: int
    code: str
    conn: Connection
    voter: str | None = None  # the voter id the app issued (POST /poll/CODE/join), as phone.html asks at its first vote
    etag: str | None = None
    boot: str | None = None
    times: list[float] = field(default_factory=list)  # when a fresh room (200) arrived …
    versions: list[int] = field(default_factory=list)  # … and its version (what phones show), in step
    voted: bool = False

    def saw(self, data: bytes, headers: dict[str, str]) -> None:
        room = json.loads(data)
        self.etag, self.boot = headers.get("etag"), self.boot or room.get("boot")
        self.times.append(time.perf_counter())
        self.versions.append(int(room["version"]))

    def since(self) -> str:
        return f"?boot={self.boot}" if self.boot else ""


class Class:
    """The phones of every room of one round, the rooms' teacher screens, and the votes.

    A phone asks with ``If-None-Match`` (a ``304`` until what phones show changed) and ``?boot=`` once it knows the
    app's start; a vote is ``POST /poll/CODE/vote``, once per phone. The teacher's tick is the ``gr.Timer`` event of
    ``ui/poll/teacher.py``, posted to ``/gradio_api/run/predict`` in the teacher's session. Commands from
    bench_poll.py: ``go`` (join, reply when every phone read its room), ``vote`` (votes start), ``hush`` (votes
    stop), ``stop`` (reply with what the phones saw, :func:`summary`).
    """

    def __init__(self, url: str, plan: dict[str, Any], conn: Any) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.plan, self.conn = parts.hostname or "127.0.0.1", parts.port or 80, plan, conn
        self.phones = [Phone(r, code, Connection(self.host, self.port))
                       for r, code in enumerate(plan["codes"]) for _ in range(plan["phones"])]
        self.votes: list[dict[str, Any]] = []  # sent, version (what phones show once it counts), room, phone
        self.refresh_ms: list[float] = []
        self.joins_s: list[float] = []  # the phone page and the first read of the room, per phone
        self.fresh = self.not_modified = self.ticks = 0
        self.errors: list[str] = []

    async def run(self) -> dict[str, Any]:
        cpu0 = time.process_time()
        joined = asyncio.Event()
        count = [0]

        def one_joined() -> None:
            count[0] += 1
            if count[0] == len(self.phones):
                joined.set()

        tasks = [asyncio.create_task(self.phone(p, one_joined)) for p in self.phones]
        tasks += [asyncio.create_task(self.teacher_screen(h, s)) for h, s in self.plan["teachers"]]
        await asyncio.wait_for(joined.wait(), self.plan.get("join_timeout_s", 60))
        self.conn.send("joined")
        voting: asyncio.Task | None = None
        while (command := await asyncio.to_thread(self.conn.recv)) != "stop":
            if command == "vote" and voting is None:
                voting = asyncio.create_task(self.voter())
            elif command == "hush" and voting is not None:
                voting.cancel()
            self.conn.send("ok")
        for task in [*tasks, *([voting] if voting else [])]:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for p in self.phones:
            p.conn.close()
        return summary(self, time.process_time() - cpu0)

    async def phone(self, p: Phone, joined: Any) -> None:
        await asyncio.sleep(random.uniform(0, self.plan.get("join_spread_s", 1.0)))  # a class scanning the code
        start = time.perf_counter()
        try:
            status, _, _ = await p.conn.request("GET", f"/?room={p.code}")
            status2, headers, data = await p.conn.request("GET", f"/poll/{p.code}")
            if status != 200 or status2 != 200:
                raise RuntimeError(f"join: HTTP {status} / {status2}")
            p.saw(data, headers)
        except Exception as exc:  # noqa: BLE001 - counted and reported
            self.errors.append(f"join: {type(exc).__name__}: {exc}"[:200])
            joined()
            return
        self.joins_s.append(time.perf_counter() - start)
        joined()
        while True:
            await asyncio.sleep(EVERY_S)
            await self.refresh(p)

    async def refresh(self, p: Phone) -> None:
        start = time.perf_counter()
        try:
            status, headers, data = await p.conn.request("GET", f"/poll/{p.code}{p.since()}",
                                                         {"If-None-Match": p.etag} if p.etag else None)
        except Exception as exc:  # noqa: BLE001
            self.errors.append(f"refresh: {type(exc).__name__}: {exc}"[:200])
            return
        self.refresh_ms.append((time.perf_counter() - start) * 1000)
        if status == 304:
            self.not_modified += 1
        elif status == 200:
            self.fresh += 1
            p.saw(data, headers)
        else:
            self.errors.append(f"refresh: HTTP {status}: {data[:120].decode(errors='replace')}")

    async def voter(self) -> None:
        """``vote_rate`` votes a second over every room in turn, each from a phone that has not voted."""
        rooms = len(self.plan["codes"])
        for k in range(10**9):
            await asyncio.sleep(1 / self.plan["vote_rate"])
            left = [p for p in self.phones if p.room == k % rooms and not p.voted]
            if left:
                asyncio.create_task(self.vote(random.choice(left)))

    async def vote(self, p: Phone) -> None:
        """One tap, as phone.html sends it: the phone joins (its voter id) at its first vote, then votes."""
        p.voted = True
        sent = time.perf_counter()
        try:
            if p.voter is None:
                status, _, data = await p.conn.request("POST", f"/poll/{p.code}/join{p.since()}", body=b"")
                if status != 200:
                    self.errors.append(f"join: HTTP {status}: {data[:120].decode(errors='replace')}")
                    return
                p.voter = json.loads(data)["voter"]
            body = json.dumps({"voter": p.voter, "choice": random.choice(self.plan["choices"])}).encode()
            status, headers, data = await p.conn.request("POST", f"/poll/{p.code}/vote{p.since()}", body=body)
        except Exception as exc:  # noqa: BLE001
            self.errors.append(f"vote: {type(exc).__name__}: {exc}"[:200])
            return
        if status != 200:
            self.errors.append(f"vote: HTTP {status}: {data[:120].decode(errors='replace')}")
            return
        p.saw(data, headers)
        self.votes.append({"sent": sent, "version": p.versions[-1], "room": p.room, "phone": p})

    async def teacher_screen(self, code: str, session: str) -> None:
        """The teacher's page: its ``gr.Timer`` asks once a second, in the session that started the poll (whose
        lesson holds the room ``code``)."""
        conn = Connection(self.host, self.port)
        tick = self.plan["tick"]
        body = json.dumps({"fn_index": tick["fn_index"], "trigger_id": tick["trigger_id"], "data": [],
                           "event_data": None, "session_hash": session}).encode()
        try:
            while True:
                await asyncio.sleep(EVERY_S)
                status, _, data = await conn.request("POST", "/gradio_api/run/predict", body=body)
                self.ticks += 1
                if status != 200:
                    self.errors.append(f"teacher's tick: HTTP {status}: {data[:120].decode(errors='replace')}")
        finally:
            conn.close()


def summary(c: Class, cpu_s: float) -> dict[str, Any]:
    """Per vote and per other phone of its room: how long after the vote was sent that phone was shown a room that
    counts it (a version at least the vote's own answer's). A phone that never was is ``unseen``."""
    delays: list[float] = []
    unseen = 0
    for v in c.votes:
        for p in c.phones:
            if p.room != v["room"] or p is v["phone"] or not p.versions:
                continue
            i = bisect.bisect_left(p.versions, v["version"])
            if i == len(p.versions):
                unseen += 1
            else:
                delays.append(p.times[i] - v["sent"])
    ordered = sorted(delays)
    refresh = sorted(c.refresh_ms)

    def q(values: list[float], f: float) -> float | None:
        return values[min(len(values) - 1, round(f * (len(values) - 1)))] if values else None

    return {"phones": len(c.phones), "votes": len(c.votes), "pairs": len(delays), "unseen": unseen,
            "vote_seen_max_s": q(ordered, 1.0), "vote_seen_p95_s": q(ordered, 0.95),
            "vote_seen_median_s": statistics.median(ordered) if ordered else None,
            "refreshes": len(refresh), "fresh": c.fresh, "not_modified": c.not_modified,
            "refresh_p95_ms": q(refresh, 0.95), "refresh_max_ms": q(refresh, 1.0),
            "join_max_s": max(c.joins_s, default=None), "teacher_ticks": c.ticks, "errors": len(c.errors),
            "error_samples": c.errors[:3], "client_cpu_s": round(cpu_s, 2)}


def phones_main(url: str, conn: Any, nice: int = 10) -> None:
    """Child process: one :class:`Class` per ``("go", plan)`` command, until ``quit``."""
    os.nice(nice)  # the app's cores stay the app's: this process waits when they are busy
    while (command := conn.recv()) != "quit":
        _, plan = command
        try:
            conn.send(asyncio.run(Class(url, plan, conn).run()))
        except Exception as exc:  # noqa: BLE001 - the bench reports it, not a hang
            conn.send({"failed": f"{type(exc).__name__}: {exc}"})
