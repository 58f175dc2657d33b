"""Share links cannot be emptied or multiplied by one visitor, and opening a large shared run costs little.

Driven as a browser sends these private events: the Share button through Gradio's queue (``/gradio_api/queue/join``
and ``/gradio_api/queue/data``), the ``?run=`` page load through ``/gradio_api/run/predict`` (it is not queued).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

import app
import ui.core.settings
from agents.llm.stub_server import StubLLMServer, toy_policy
from ui.core.settings import AppSettings
from ui.share.store import ShareStore

STATUS = 6


def recording(path: Path, tag: str, pad_tokens: int = 0, observation_kb: int = 0) -> Path:
    """A small valid export (distinct per ``tag``), optionally grown with token events and long observations."""
    events = [{"t": 0.0, "kind": "thought", "text": f"Run {tag}: multiply."}]
    events += [{"t": 0.001 * i, "kind": "token", "text": "word ", "channel": "thought"} for i in range(pad_tokens)]
    if observation_kb:
        for i in range(20):
            events += [{"t": 1.0 + i, "kind": "action", "tool": "calculate", "input": f"{i}"},
                       {"t": 1.5 + i, "kind": "observation", "tool": "calculate",
                        "output": "x" * 1024 * observation_kb}]
    events.append({"t": 30.0, "kind": "answer", "text": f"391 ({tag})"})
    data = {"question": f"What is 17 * 23? ({tag})", "selection": "ReAct", "traces": {"react": {"events": events}}}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def dependency(url: str, name: str) -> int:
    """The id of the app's event whose function is called ``name`` (private events have no API name)."""
    config = httpx.get(f"{url}config", timeout=30).json()
    return next(d["id"] for d in config["dependencies"] if d.get("api_name") == name)


def upload(url: str, path: Path) -> dict:
    with path.open("rb") as f:
        response = httpx.post(f"{url}gradio_api/upload", files={"files": (path.name, f)}, timeout=120)
    assert response.status_code == 200, response.text
    return {"path": response.json()[0], "meta": {"_type": "gradio.FileData"}}


def completed(url: str, fn: int, data: list, session: str, headers: dict | None = None) -> dict:
    """One event through the queue, as the browser sends it: its last message's output."""
    joined = httpx.post(f"{url}gradio_api/queue/join", timeout=60, headers=headers or {},
                        json={"data": data, "fn_index": fn, "session_hash": session, "event_data": None,
                              "trigger_id": None})
    assert joined.status_code == 200, joined.text
    with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session}, timeout=120) as s:
        for line in s.iter_lines():
            message = json.loads(line[5:]) if line.startswith("data:") else {}
            if message.get("msg") == "process_completed":
                output = message.get("output") or {}
                assert message.get("success"), output
                return output
    raise AssertionError("the event never completed")


def share(url: str, fn: int, file: dict, session: str, headers: dict | None = None) -> str:
    """Replay ``file`` on the page (instantly), then press Share, as the browser does: the line Share shows."""
    completed(url, dependency(url, "play_on_page"), [file, "instant"], session, headers)
    return str(completed(url, fn, [], session, headers)["data"][0])


def open_link(url: str, fn: int, run_id: str, session: str) -> list:
    """Load the page with ``?run=<id>``: the values its load event returns."""
    return json.loads(open_raw(url, fn, run_id, session))["data"]


def open_raw(url: str, fn: int, run_id: str, session: str, headers: dict | None = None,
             client: httpx.Client | None = None) -> str:
    """The ``?run=<id>`` page load's response, as text (not parsed: a crowd of them costs the test little)."""
    response = (client or httpx).post(f"{url}gradio_api/run/predict", params={"run": run_id}, timeout=120,
                                      headers=headers or {},
                                      json={"data": [], "fn_index": fn, "session_hash": session, "event_data": None})
    assert response.status_code == 200, response.text
    return response.text


def run_id_of(line: str) -> str:
    assert "?run=" in line, line
    return line.split("?run=")[1].split("]")[0]


@pytest.fixture
def share_app(kit, monkeypatch, tmp_path) -> Iterator:
    """The app with its share store in ``tmp_path``; the test sets the limits first (``settings(...)``)."""
    def launch(**limits):
        monkeypatch.setattr(ui.core.settings, "_current", AppSettings(share_dir=str(tmp_path / "store"), **limits))
        demo = app.build_demo(settings=kit.settings(stub), registry=kit.registry())
        return kit.launched(demo)

    with StubLLMServer(toy_policy) as stub:
        yield launch


@pytest.mark.timeout(300)  # each share replays its file on the page first, as a teacher does
def test_eleven_large_shares_from_one_visitor_evict_nobody_elses_link(share_app, tmp_path):
    """One visitor filling the store, at a tenth of the size: a 20 MB store, shares of ~1.9 MB each."""
    with share_app(share_max_mb=20) as url:  # one visitor: 2 MB an hour (a tenth)
        others = ShareStore(tmp_path / "store", 20 * 1024 * 1024, 86400)
        earlier = [others.put(recording(tmp_path / f"other-{k}.json", f"other {k}"), f"203.0.113.{k}")
                   for k in range(50)]
        fn = dependency(url, "share")
        lines = [share(url, fn, upload(url, recording(tmp_path / f"big-{k}.json", f"big {k}", pad_tokens=28_500)),
                       f"sharer-{k}") for k in range(11)]
        assert [others.valid_id(r) and (tmp_path / "store" / f"{r}.json").is_file() for r in earlier] == [True] * 50
        stored = [line for line in lines if "?run=" in line]
        refused = [line for line in lines if "?run=" not in line]
        assert len(stored) == 1 and len(refused) == 10
        assert all(line.startswith("⚠") and line.count("\n") == 0 and "MB one visitor may add an hour" in line
                   for line in refused), refused


def test_a_run_over_the_size_cap_is_refused_in_one_line(share_app, tmp_path):
    with share_app(share_run_mb=1) as url:
        line = share(url, dependency(url, "share"),
                     upload(url, recording(tmp_path / "big.json", "big", pad_tokens=30_000)), "s1")
        assert line.startswith("⚠ This run is too large to share by link") and "the most is 1 MB" in line


def test_share_stores_only_a_recording_on_screen_never_a_file_sent_with_the_event(share_app, tmp_path):
    """Share takes no file: what it stores is the run the page's lesson shows. A file that is no recording never gets
    on screen (its replay is refused), and one sent along with the Share event as the export box was is ignored."""
    page = tmp_path / "page.json"
    page.write_text('{"html": "<h1>not a run</h1>"}', encoding="utf-8")
    with share_app() as url:
        fn, session = dependency(url, "share"), "exports-forger"
        file = upload(url, page)
        line = share(url, fn, file, session)
        assert line.startswith("⚠ Nothing is on screen to share yet"), line
        forged = completed(url, fn, [[file], None], session)["data"][0]  # the inputs Share took before
        assert forged.startswith("⚠ Nothing is on screen to share yet"), forged
        assert not list((tmp_path / "store").glob("*.json"))


def test_varying_x_forwarded_for_does_not_multiply_a_visitors_quota(share_app, tmp_path):
    with share_app(share_per_hour=3) as url:
        fn = dependency(url, "share")
        lines = [share(url, fn, upload(url, recording(tmp_path / f"r{k}.json", f"r{k}")), f"xff-{k}",
                       {"X-Forwarded-For": f"198.51.100.{k}"}) for k in range(5)]
    assert ["?run=" in line for line in lines] == [True, True, True, False, False]
    assert "You have made 3 share links in the last hour" in lines[3]


def test_behind_a_trusted_proxy_the_visitor_is_the_address_it_appended(share_app, tmp_path):
    """The proxy appends the address it saw: whatever a client wrote before it is not the visitor."""
    with share_app(share_per_hour=2, trusted_proxies=("127.0.0.1",)) as url:
        fn = dependency(url, "share")
        forged = [share(url, fn, upload(url, recording(tmp_path / f"f{k}.json", f"f{k}")), f"fwd-{k}",
                        {"X-Forwarded-For": f"10.9.9.{k}, 198.51.100.7"}) for k in range(3)]
        other = share(url, fn, upload(url, recording(tmp_path / "g.json", "g")), "fwd-other",
                      {"X-Forwarded-For": "198.51.100.8"})
    assert ["?run=" in line for line in forged] == [True, True, False] and "?run=" in other


def test_ten_concurrent_opens_of_a_large_shared_run_keep_config_fast(share_app, tmp_path):
    """A run near the size cap, opened ten times at once — and ten opens of an 18 MB run stored by a version
    without that cap: the page's /config stays fast, every open of the first shows the run (its export to download
    one copy in Gradio's cache, not one per view), and the second is one line at once."""
    from ui.share.handlers import SHARED_DOWNLOADS

    big = recording(tmp_path / "large.json", "large", pad_tokens=52_000, observation_kb=60)
    assert 4_000_000 < big.stat().st_size < 5 * 1024 * 1024
    huge = recording(tmp_path / "huge.json", "huge", pad_tokens=250_000)
    with share_app() as url:
        run_id = run_id_of(share(url, dependency(url, "share"), upload(url, big), "sharer"))
        old_id = ShareStore(tmp_path / "store", 200 * 1024 * 1024, 86400).put(huge)
        fn = dependency(url, "open")
        latencies: list[float] = []
        stop = threading.Event()

        def poll() -> None:
            with httpx.Client(timeout=60) as client:
                while not stop.is_set():
                    started = time.perf_counter()
                    assert client.get(f"{url}config").status_code == 200
                    latencies.append(time.perf_counter() - started)
                    time.sleep(0.05)

        poller = threading.Thread(target=poll)
        poller.start()
        try:
            with ThreadPoolExecutor(20) as pool:
                opened = list(pool.map(lambda k: open_link(url, fn, run_id if k % 2 else old_id, f"viewer-{k}"),
                                       range(20)))
        finally:
            stop.set()
            poller.join()
        copies = [p.stat().st_size for p in (SHARED_DOWNLOADS / run_id).iterdir() if not p.name.startswith(".")]
    # An open that parsed a large run on the event loop stalled /config for seconds; a busy 2-core CI machine adds
    # tenths of a second to a quiet /config (0.508 s was once seen), so the bound is set between the two.
    assert latencies and max(latencies) < 1.5, sorted(latencies)[-5:]
    assert all("Shared run" in values[STATUS] and "391 (large)" in json.dumps(values[2]) for values in opened[1::2])
    assert all("larger than the 5 MB a link may open" in values[STATUS] for values in opened[::2])
    assert copies == [big.stat().st_size]


def test_an_old_link_to_a_run_over_the_cap_is_one_line_without_parsing(share_app, tmp_path):
    """A link stored before views existed opens once it has one; one over today's cap is refused at once."""
    store = tmp_path / "store"
    with share_app(share_run_mb=1) as url:
        legacy = ShareStore(store, 100 * 1024 * 1024, 86400)
        small = legacy.put(recording(tmp_path / "old-small.json", "old small"))
        large = legacy.put(recording(tmp_path / "old-large.json", "old large", pad_tokens=40_000))
        fn = dependency(url, "open")
        assert "391 (old small)" in json.dumps(open_link(url, fn, small, "v1")[2])
        assert (store / f"{small}.view").is_file()  # made once, kept
        started = time.perf_counter()
        refused = open_link(url, fn, large, "v2")
        assert "larger than the 1 MB a link may open" in refused[STATUS] and time.perf_counter() - started < 2


@pytest.mark.timeout(300)  # each share replays its file on the page first, as a teacher does
def test_five_addresses_sharing_until_refused_store_no_more_than_their_quotas_and_evict_no_earlier_link(share_app,
                                                                                                     tmp_path):
    """Several visitors filling the store, at a tenth of the size: a 20 MB store (2 MB an hour per visitor, export
    and view together), fifty earlier links, then five addresses (behind a trusted proxy) sharing large runs until
    refused."""
    store = tmp_path / "store"
    with share_app(share_max_mb=20, trusted_proxies=("127.0.0.1",)) as url:
        others = ShareStore(store, 20 * 1024 * 1024, 86400, per_hour=1000)
        earlier = [others.put(recording(tmp_path / f"other-{k}.json", f"other {k}"), f"203.0.113.{k}")
                   for k in range(50)]
        fn = dependency(url, "share")
        held: dict[str, list[str]] = {}
        for address in [f"198.51.100.{k}" for k in range(5)]:
            for k in range(10):
                run = recording(tmp_path / f"{address}-{k}.json", f"{address} {k}", observation_kb=20)
                line = share(url, fn, upload(url, run), f"s-{address}-{k}", {"X-Forwarded-For": address})
                if "?run=" not in line:
                    assert "MB one visitor may add an hour" in line and line.count("\n") == 0, line
                    break
                held.setdefault(address, []).append(run_id_of(line))
        sizes = {a: sum((store / f"{r}{s}").stat().st_size for r in ids for s in (".json", ".view"))
                 for a, ids in held.items()}
        views = [(store / f"{r}.view").stat().st_size for ids in held.values() for r in ids]
    assert set(held) == {f"198.51.100.{k}" for k in range(5)} and all(len(ids) >= 2 for ids in held.values())
    assert min(views) > 200_000  # each view is a real part of what a link stores
    assert all(size <= 2 * 1024 * 1024 for size in sizes.values()), sizes
    assert all((store / f"{run_id}.json").is_file() for run_id in earlier)


def test_a_crowds_opens_do_not_hold_up_another_visitors_open(share_app, tmp_path):
    """200 opens from 10 addresses once made another visitor's open wait for the whole backlog (two opens at a
    time, first come first served). Opens are shared fairly among visitors (ui/core/fair.py): the other visitor's
    open, during such a crowd, takes a few times a quiet open, not the backlog's time. Loopback, threads of this
    process, bounded in count (200 + 12 opens) and time; a ratio with a wide margin, for a noisy machine (first come,
    first served puts it well above the bound)."""
    run = recording(tmp_path / "crowded.json", "crowded", observation_kb=40)
    with share_app(trusted_proxies=("127.0.0.1",)) as url:
        run_id = run_id_of(share(url, dependency(url, "share"), upload(url, run), "sharer"))
        fn = dependency(url, "open")

        def timed(address: str, session: str, client: httpx.Client) -> float:
            started = time.perf_counter()
            text = open_raw(url, fn, run_id, session, {"X-Forwarded-For": address}, client)
            assert "Shared run" in text and "391 (crowded)" in text, text[:300]
            return time.perf_counter() - started

        def other_visitor(k: int) -> float:
            with httpx.Client(timeout=120) as client:
                return timed(f"192.0.2.{10 + k}", f"other-{k}-{time.perf_counter()}", client)

        with ThreadPoolExecutor(3) as others:  # three other visitors at once, quiet (three rounds), then in the crowd
            quiet = sorted(sorted(others.map(other_visitor, range(3)))[1] for _ in range(3))[1]
        crowd_done: list[float] = []

        def crowd_member(k: int) -> None:
            with httpx.Client(timeout=120) as client:
                open_raw(url, fn, run_id, f"crowd-{k}", {"X-Forwarded-For": f"198.51.100.{k % 10}"}, client)
            crowd_done.append(time.perf_counter())

        with ThreadPoolExecutor(100) as pool, ThreadPoolExecutor(3) as others:
            crowd = [pool.submit(crowd_member, k) for k in range(200)]
            time.sleep(0.5)  # the crowd's backlog builds up
            loaded = sorted(others.map(other_visitor, range(3)))
            measured_at = time.perf_counter()
            for future in crowd:
                future.result(timeout=120)
    still_busy = sum(1 for t in crowd_done if t > measured_at)
    assert still_busy >= 10, f"the crowd had ended before the other visitors' opens ({still_busy} left)"
    assert loaded[1] / quiet < 20, f"quiet open {quiet:.3f} s, during the crowd {[round(t, 3) for t in loaded]} s"
