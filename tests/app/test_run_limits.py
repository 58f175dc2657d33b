"""One visitor cannot take every run slot (ui/core/admission.RunQuota): a client without cookies is held to its
address's bound, a browser to its own, the rest of their runs get one line, and another visitor's run starts at
once; a class of 40 browsers behind one address all run. Driven over REST by real clients against a launched app:
the "other visitor" connects from another loopback address (127.0.0.2), a browser sends the cookie the app gave it.
Every door that starts a run counts (Compare, the MCP tool and the Benchmark here; a fork in tests/ui/fork/)."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

import app
import ui.core.settings
from agents.llm.stub_server import StubLLMServer, StubReply
from ui.core.frame import output_index
from ui.core.settings import AppSettings

STATUS = output_index("react", metrics=True) + 1  # the status line: after the panels and their metrics lines
RUN = ["What is 6 * 7?", "Think", "stub", "text", 5, 0.2, ["calculate"], "None", None]
RUNNING, QUEUED = "● Running", "in the queue"
BROWSER_LIMIT, ADDRESS_LIMIT = "You already have 3 runs going", "runs are already going from your network"


def slow(body: dict) -> StubReply:
    return StubReply(text="Thought: easy.\nFinal Answer: 42", first_token_delay=2.0)


def slower(body: dict) -> StubReply:
    """Runs that are still going after an MCP session and a benchmark were set up on a loaded machine."""
    return StubReply(text="Thought: easy.\nFinal Answer: 42", first_token_delay=12.0)


def wait_for_requests(server: StubLLMServer, n: int, timeout_s: float = 60) -> None:
    """Until the model has been asked ``n`` times (the runs started, in their worker processes)."""
    deadline = time.monotonic() + timeout_s
    while len(server.requests) < n and time.monotonic() < deadline:
        time.sleep(0.05)


def browser_cookie(url: str) -> str:
    """A browser's identity as the app issues it: the cookie its first response sets."""
    header = httpx.get(f"{url}gradio_api/info", timeout=10).headers["set-cookie"]
    return header.split(";")[0]


def client(cookie: str | None = None, address: str = "127.0.0.1") -> httpx.Client:
    """A client without a cookie jar, from ``address`` (any 127.x address reaches the app), sending ``cookie``."""
    headers = {"cookie": cookie} if cookie else {}
    return httpx.Client(headers=headers, timeout=60, transport=httpx.HTTPTransport(local_address=address))


def run(http: httpx.Client, url: str, data: list | None = None, endpoint: str = "compare",
        index: int = STATUS) -> list[str]:
    """One ``/gradio_api/call/<endpoint>`` run: every status line (output ``index``) it was sent, in order."""
    posted = http.post(f"{url}gradio_api/call/{endpoint}", json={"data": data or RUN})
    assert posted.status_code == 200, posted.text
    seen: list[str] = []
    with http.stream("GET", f"{url}gradio_api/call/{endpoint}/{posted.json()['event_id']}") as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and line[5:].strip().startswith("["):
                status = str(json.loads(line[5:])[index])
                if not seen or seen[-1] != status:
                    seen.append(status)
    return seen


def at_once(n: int, http: httpx.Client | list[httpx.Client], url: str) -> list[list[str]]:
    """``n`` runs sent together by one client (or the k-th by the k-th of a list): the status lines of each."""
    results: list[list[str]] = [[] for _ in range(n)]
    clients = http if isinstance(http, list) else [http] * n
    threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, run(clients[k], url))) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    return results


@pytest.fixture
def limits(monkeypatch):
    def use(**kw) -> None:
        monkeypatch.setattr(ui.core.settings, "_current", AppSettings(**kw))
    return use


FORGED = "tar_browser=" + "f" * 32 + "." + "0" * 32  # shaped like the app's cookie, sealed by nobody


@pytest.mark.parametrize("identity", ["none", "forged", "fresh"])
def test_a_client_without_cookies_gets_its_address_s_share_and_others_still_run(kit, limits, identity):
    """A script's ten runs from one address: without cookies, with a forged one, or each with a fresh identity it
    fetched from the app (the browser's bound out of the way): the address's bound holds them all."""
    limits(concurrency=8, queue_size=4, runs_per_address=5)
    with StubLLMServer(slow) as server, client(address="127.0.0.2") as other:
        with kit.launched(app.build_demo(settings=kit.settings(server), registry=kit.registry())) as url:
            cookies = [browser_cookie(url) for _ in range(10)] if identity == "fresh" else \
                [FORGED if identity == "forged" else None] * 10
            flood = [client(cookie) for cookie in cookies]
            results: list = []
            flooding = threading.Thread(target=lambda: results.extend(at_once(10, flood, url)))
            flooding.start()
            wait_for_requests(server, 5)
            theirs = run(other, url)  # meanwhile, another visitor on another network
            flooding.join(90)
            for http in flood:
                http.close()
    admitted = [r for r in results if r and r[0].startswith((RUNNING, "⏳ The app is busy"))]
    refused = [r for r in results if r and ADDRESS_LIMIT in r[0]]
    assert len(admitted) == 5 and len(refused) == 5 and len(results) == 10
    assert all(len(r) == 1 and "\n" not in r[0] for r in refused)  # one line, and nothing more
    assert all(r[-1].startswith("✔ Done") for r in admitted)
    assert theirs[0].startswith(RUNNING) and theirs[-1].startswith("✔ Done")  # not queued behind the flood
    assert len(server.requests) == 6  # the refused runs never reached the model


def test_a_browser_gets_three_runs_and_another_browser_behind_the_same_address_still_runs(kit, limits):
    limits(concurrency=8, queue_size=4)
    with StubLLMServer(slow) as server:
        with kit.launched(app.build_demo(settings=kit.settings(server), registry=kit.registry())) as url:
            mine, theirs_cookie = browser_cookie(url), browser_cookie(url)
            assert mine != theirs_cookie
            with client(mine) as flood, client(theirs_cookie) as other:
                results: list = []
                flooding = threading.Thread(target=lambda: results.extend(at_once(10, flood, url)))
                flooding.start()
                wait_for_requests(server, 3)
                theirs = run(other, url)
                flooding.join(90)
    admitted = [r for r in results if r and r[0].startswith(RUNNING)]
    refused = [r for r in results if r and BROWSER_LIMIT in r[0]]
    assert len(admitted) == 3 and len(refused) == 7
    assert all(len(r) == 1 and "Stop" in r[0] for r in refused)
    assert theirs[0].startswith(RUNNING) and theirs[-1].startswith("✔ Done")
    assert len(server.requests) == 4


def test_forty_browsers_behind_one_address_all_run(kit, limits):
    limits(concurrency=100, queue_size=200)  # the defaults on 2 cores; APP_RUNS_PER_ADDRESS: 40
    with StubLLMServer(slow) as server:
        with kit.launched(app.build_demo(settings=kit.settings(server), registry=kit.registry())) as url:
            cookies = [browser_cookie(url) for _ in range(40)]
            results: list[list[str]] = [[] for _ in cookies]

            def one(k: int) -> None:
                with client(cookies[k]) as http:
                    results[k] = run(http, url)

            threads = [threading.Thread(target=one, args=(k,)) for k in range(40)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
    assert all(r and r[0].startswith(RUNNING) and r[-1].startswith("✔ Done") for r in results), \
        [r[:1] for r in results if not r or not r[-1].startswith("✔ Done")]
    assert len(server.requests) == 40


def test_every_door_counts_against_the_same_share(kit, limits):
    """With its address's runs all going (Compare over REST), the same client's MCP call and benchmark are each
    refused with the same one line, and nothing of theirs reaches the model (a fork: tests/ui/fork/)."""
    pytest.importorskip("mcp", reason="gradio[mcp] is not installed")
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    limits(concurrency=8, queue_size=4, runs_per_address=2)
    with StubLLMServer(slower) as server, client() as http:
        with kit.launched(app.build_demo(settings=kit.settings(server), registry=kit.registry())) as url:
            going = threading.Thread(target=lambda: at_once(2, http, url))
            going.start()
            wait_for_requests(server, 2)

            async def tool(address: str) -> str:
                transport = httpx.AsyncHTTPTransport(local_address=address)
                async with httpx.AsyncClient(transport=transport, timeout=60) as caller, \
                        streamable_http_client(f"{url}gradio_api/mcp/", http_client=caller) as (read, write, _), \
                        ClientSession(read, write) as session:
                    await session.initialize()
                    res = await session.call_tool("compare_reasoning_modes", {"question": "What is 6 * 7?"})
                    return res.content[0].text

            by_mcp = asyncio.run(asyncio.wait_for(tool("127.0.0.1"), 60))
            bench = run(http, url, ["handwritten", None, 2, ["think"], 1, 1, "stub", "text", 5, 0.2, ["calculate"], 3],
                        endpoint="benchmark", index=0)  # its progress line
            assert len(server.requests) == 2 and going.is_alive()
            # the tool's call reaches the endpoint from the app itself: it still counts its caller, not 127.0.0.1
            elsewhere = asyncio.run(asyncio.wait_for(tool("127.0.0.2"), 60))
            going.join(60)
    assert ADDRESS_LIMIT in by_mcp
    assert ADDRESS_LIMIT in bench[-1]
    assert json.loads(elsewhere)["modes"]["think"]["answer"] == "42"
