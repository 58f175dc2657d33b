"""The share store (cap, expiry, ids that cannot escape it) and the Share / ``?run=`` handlers, no browser."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import time
from types import SimpleNamespace

import gradio as gr
import pytest

from agents.events import FinalAnswer, Thought, TokenDelta
from agents.trace import Trace
from tests.frames import compare_outputs
from ui.core.frame import Outputs
from ui.core.lesson import Shown, Turn
from ui.core.page_url import page_url_of
from ui.core.settings import AppSettings
from ui.share.handlers import ShareHandlers
from ui.share.store import ShareError, ShareStore, share_url

STATUS, TABLE, FILES = 6, 7, 8
PAGES = itertools.count()  # a page session each


def outputs() -> Outputs:
    return compare_outputs()


def export_file(tmp_path, name="run.json", answer="391", size_pad=0):
    trace = Trace("react", "What is 17 * 23?")
    for t, event in [(0.0, TokenDelta("Thought: multiply")), (0.1, Thought("multiply")), (0.2, FinalAnswer(answer))]:
        trace.add(event, t)
    data = {"question": "What is 17 * 23?", "selection": "ReAct", "expected": "391",
            "traces": {"react": trace.to_dict()}, "pad": "x" * size_pad}
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def shared(handlers: ShareHandlers, path, request=None) -> str:
    """Share with ``path`` as the run on screen: what the page's lesson names (a live run's export, a replayed
    file, …)."""
    request = request if request is not None else SimpleNamespace(headers={})
    if not getattr(request, "session_hash", None):
        request.session_hash = f"page-{next(PAGES)}"
    if path is not None:
        handlers.lessons.of(request).show(Shown("run", str(path), (Turn("What is 17 * 23?"),)))
    return asyncio.run(handlers.share(request))


def test_a_stored_run_comes_back_under_an_unguessable_id(tmp_path):
    store = ShareStore(tmp_path / "s", 10_000_000, 86400)
    a, b = store.put(export_file(tmp_path)), store.put(export_file(tmp_path, "b.json", answer="400"))
    assert a != b and len(a) >= 20 and ShareStore.valid_id(a)
    assert store.path(a).read_text(encoding="utf-8") == export_file(tmp_path).read_text(encoding="utf-8")


def test_the_same_run_shared_again_keeps_its_link_and_stores_nothing_twice(tmp_path):
    store = ShareStore(tmp_path / "s", 10_000_000, 86400, per_hour=1)
    first = store.put(export_file(tmp_path), "10.0.0.1")
    assert store.put(export_file(tmp_path, "copy.json"), "10.0.0.1") == first  # not counted against the limit
    assert len(list((tmp_path / "s").glob("*.json"))) == 1
    store.path(first).unlink()  # gone (evicted or expired): shared again, it is stored again
    again = store.put(export_file(tmp_path), "10.0.0.2")
    assert again != first and store.path(again).exists()


def test_one_visitor_cannot_evict_everyone_s_links_by_sharing_in_a_loop(tmp_path):
    store = ShareStore(tmp_path / "s", 10_000_000, 86400, per_hour=3)
    for i in range(3):
        store.put(export_file(tmp_path, f"{i}.json", answer=str(i)), "10.0.0.1")
    with pytest.raises(ShareError, match="3 share links in the last hour"):
        store.put(export_file(tmp_path, "x.json", answer="x"), "10.0.0.1")
    assert store.put(export_file(tmp_path, "y.json", answer="y"), "10.0.0.2")  # others are not held up
    assert len(list((tmp_path / "s").glob("*.json"))) == 4


def test_the_hourly_limit_is_a_setting_checked_at_start_up():
    assert AppSettings.from_env({"APP_SHARE_PER_HOUR": "5"}).share_per_hour == 5
    assert AppSettings().share_per_hour == 20


@pytest.mark.parametrize("bad", ["../../etc/passwd", "..", "a/b" * 10, "x" * 10, "", None, 42, "abc.json" * 3,
                                 "%2e%2e%2f" * 3, "a" * 65])
def test_a_malformed_id_is_one_line_and_never_a_path(tmp_path, bad):
    store = ShareStore(tmp_path / "s", 10_000_000, 86400)
    (tmp_path / "secret.json").write_text("{}")
    with pytest.raises(ShareError, match="not valid"):
        store.path(bad)


def test_an_unknown_id_is_one_clear_line(tmp_path):
    store = ShareStore(tmp_path / "s", 10_000_000, 86400)
    with pytest.raises(ShareError, match="unknown or has expired"):
        store.path("A" * 22)


def test_an_expired_run_is_refused_and_removed(tmp_path):
    store = ShareStore(tmp_path / "s", 10_000_000, 60)
    run_id = store.put(export_file(tmp_path))
    old = time.time() - 120
    os.utime(store.root / f"{run_id}.json", (old, old))
    with pytest.raises(ShareError, match="expired"):
        store.path(run_id)
    assert not (store.root / f"{run_id}.json").exists()


def test_the_cap_evicts_the_oldest_runs_first(tmp_path):
    size = export_file(tmp_path, size_pad=3000).stat().st_size
    store = ShareStore(tmp_path / "s", int(size * 2.5), 86400)
    ids = []
    for i in range(4):  # four different runs of the same size
        ids.append(store.put(export_file(tmp_path, f"{i}.json", answer=f"{i}{i}{i}", size_pad=3000)))
        stamp = time.time() - 100 + i  # distinct ages, oldest first
        os.utime(store.root / f"{ids[-1]}.json", (stamp, stamp))
    store.evict()
    kept = sorted(p.stem for p in store.root.glob("*.json"))
    assert kept == sorted(ids[-2:])
    assert sum(p.stat().st_size for p in store.root.glob("*.json")) <= store.max_bytes


def test_a_run_larger_than_the_store_is_refused(tmp_path):
    store = ShareStore(tmp_path / "s", 100, 86400)
    with pytest.raises(ShareError, match="too large"):
        store.put(export_file(tmp_path, size_pad=500))


def test_the_link_is_the_visitors_page_with_run(tmp_path):
    assert share_url("https://a-b.hf.space/?__theme=dark#x", "ID") == "https://a-b.hf.space/?run=ID"
    assert page_url_of({"referer": "http://127.0.0.1:7860/?run=old"}) == "http://127.0.0.1:7860/?run=old"
    assert page_url_of({"host": "h:1", "x-forwarded-host": "me.hf.space", "x-forwarded-proto": "https"}) == \
        "https://me.hf.space/"


def test_settings_read_the_share_variables():
    s = AppSettings.from_env({"APP_SHARE_DIR": "/tmp/x", "APP_SHARE_MAX_MB": "5", "APP_SHARE_DAYS": "2"})
    assert (s.share_dir, s.share_max_mb, s.share_days) == ("/tmp/x", 5, 2.0)


def test_share_then_open_fills_panels_table_and_question(tmp_path):
    handlers = ShareHandlers(outputs(), ShareStore(tmp_path / "s", 10_000_000, 86400))
    visitor = SimpleNamespace(headers={"referer": "http://127.0.0.1:9/"})
    line = shared(handlers, export_file(tmp_path), visitor)
    assert "http://127.0.0.1:9/?run=" in line
    run_id = line.split("?run=")[1].split("]")[0]
    values = asyncio.run(handlers.open(SimpleNamespace(query_params={"run": run_id})))
    assert values[-4:-1] == ["What is 17 * 23?", "391", ["react"]]  # the question, expected answer and picker
    assert "391" in json.dumps(values[2], default=str) and "ReAct" in values[TABLE] and "Shared run" in values[STATUS]
    assert values[FILES][0]["path"].endswith(".json")  # as the browser receives it (the event does not postprocess)


def test_share_takes_the_run_on_screen_and_only_a_run(tmp_path):
    handlers = ShareHandlers(outputs(), ShareStore(tmp_path / "s", 10_000_000, 86400))
    assert "?run=" in shared(handlers, export_file(tmp_path))
    assert "Nothing is on screen to share" in shared(handlers, None)
    junk = tmp_path / "junk.json"
    junk.write_text('{"not": "a run"}', encoding="utf-8")
    assert "?run=" not in shared(handlers, junk)
    assert len(list((tmp_path / "s").glob("*.json"))) == 1  # only the good one was stored


def test_opens_are_limited_per_visitor(tmp_path, monkeypatch):
    import ui.share.handlers

    monkeypatch.setattr(ui.share.handlers, "OPENS_PER_MINUTE", 3)
    handlers = ShareHandlers(outputs(), ShareStore(tmp_path / "s", 10_000_000, 86400))
    line = shared(handlers, export_file(tmp_path))
    run_id = line.split("?run=")[1].split("]")[0]
    visitor = SimpleNamespace(query_params={"run": run_id}, client=SimpleNamespace(host="198.51.100.1"), headers={})
    statuses = [asyncio.run(handlers.open(visitor))[STATUS] for _ in range(4)]
    assert ["Shared run" in s for s in statuses] == [True, True, True, False]
    assert "You opened many shared runs in the last minute" in statuses[3]
    other = SimpleNamespace(query_params={"run": run_id}, client=SimpleNamespace(host="198.51.100.2"), headers={})
    assert "Shared run" in asyncio.run(handlers.open(other))[STATUS]


def test_open_without_a_run_changes_nothing_and_a_bad_one_is_one_line(tmp_path):
    handlers = ShareHandlers(outputs(), ShareStore(tmp_path / "s", 10_000_000, 86400))
    assert all(isinstance(v, type(gr.skip())) for v in asyncio.run(handlers.open(SimpleNamespace(query_params={}))))
    values = asyncio.run(handlers.open(SimpleNamespace(query_params={"run": "../../../etc/passwd"})))
    assert "not valid" in values[STATUS] and values[-3] is not None


def thought_export(tmp_path, tag: str, chars: int):
    """An export whose panels show ``chars`` characters of thought: its view is about as large as the export."""
    trace = Trace("react", "What is 17 * 23?")
    for t, event in [(0.1, Thought(f"{tag} " + "pondering " * (chars // 10))), (0.2, FinalAnswer(f"391 {tag}"))]:
        trace.add(event, t)
    path = tmp_path / f"{tag}.json"
    path.write_text(json.dumps({"question": "What is 17 * 23?", "selection": "ReAct",
                                "traces": {"react": trace.to_dict()}}), encoding="utf-8")
    return path


def stored_bytes(root) -> int:
    return sum(p.stat().st_size for p in root.iterdir() if p.suffix in (".json", ".view"))


def test_a_visitor_who_shares_until_refused_stores_no_more_than_the_quota_views_included(tmp_path):
    quota = 200_000
    store = ShareStore(tmp_path / "s", 10_000_000, 86400, per_hour=1000, bytes_per_hour=quota)
    handlers = ShareHandlers(outputs(), store)
    visitor = SimpleNamespace(client=SimpleNamespace(host="198.51.100.7"), headers={})
    lines = []
    for k in range(40):
        lines.append(shared(handlers, thought_export(tmp_path, f"r{k}", 20_000), visitor))
        if "?run=" not in lines[-1]:
            break
    views = list(store.root.glob("*.view"))
    assert len(lines) < 40 and "MB one visitor may add an hour" in lines[-1] and lines[-1].count("\n") == 0
    assert views and min(v.stat().st_size for v in views) > 15_000  # the views are a real part of what is stored
    assert quota - 50_000 < stored_bytes(store.root) <= quota  # exports and views together, within one run's size
    other = SimpleNamespace(client=SimpleNamespace(host="198.51.100.8"), headers={})
    assert "?run=" in shared(handlers, thought_export(tmp_path, "o", 20_000), other)


def test_a_refused_view_gives_back_the_link_and_the_export_bytes(tmp_path):
    size = thought_export(tmp_path, "a", 20_000).stat().st_size
    store = ShareStore(tmp_path / "s", 10_000_000, 86400, per_hour=2, bytes_per_hour=size + 1000)
    admitted = store.admit(thought_export(tmp_path, "a", 20_000), "v")
    with pytest.raises(ShareError, match="its file and the panels it shows"):
        store.store(thought_export(tmp_path, "a", 20_000), admitted, b"x" * 5000)
    assert store.put(thought_export(tmp_path, "b", 100), "v", view=b"{}")  # the quota is whole again
    assert store.put(thought_export(tmp_path, "c", 100), "v", view=b"{}")  # and so is the link count


def test_a_few_visitors_at_their_quota_push_out_their_own_links_not_the_earlier_ones(tmp_path):
    """A store of 1 MB, a tenth of it per visitor an hour: fifty earlier links, then ten visitors at their quota."""
    store = ShareStore(tmp_path / "s", 1_000_000, 86400, per_hour=1000, bytes_per_hour=100_000)
    earlier = [store.put(thought_export(tmp_path, f"e{k}", 1000), f"203.0.113.{k}", view=b"v" * 1000)
               for k in range(50)]
    for v in range(10):
        for k in range(20):
            try:
                store.put(thought_export(tmp_path, f"f{v}-{k}", 4000), f"198.51.100.{v}", view=b"v" * 4000)
            except ShareError:
                break
    assert stored_bytes(store.root) <= store.max_bytes
    assert all((store.root / f"{run_id}.json").is_file() for run_id in earlier)
    flooders = [p for p in store.root.glob("*.json") if p.stem not in earlier]
    assert len(flooders) > 50  # the flooders keep most of theirs too: only what did not fit went


def test_links_stored_before_a_restart_count_each_as_their_own_holder(tmp_path):
    """The sharers of links stored by an earlier process are not known: each link is its own holder's."""
    earlier = ShareStore(tmp_path / "s", 40_000, 86400, per_hour=100)
    kept = [earlier.put(thought_export(tmp_path, f"e{k}", 1000), "") for k in range(16)]
    assert 20_000 < stored_bytes(tmp_path / "s") < 30_000  # with a visitor's 20,000 more, past the cap
    restarted = ShareStore(tmp_path / "s", 40_000, 86400, per_hour=1000, bytes_per_hour=20_000)
    for k in range(30):
        with contextlib.suppress(ShareError):
            restarted.put(thought_export(tmp_path, f"f{k}", 2000), "198.51.100.1", view=b"v" * 2000)
    assert all((tmp_path / "s" / f"{run_id}.json").is_file() for run_id in kept)
    assert stored_bytes(tmp_path / "s") <= 40_000


def test_a_visitor_with_many_opens_under_way_is_told_to_wait_and_others_are_not(tmp_path, monkeypatch):
    import ui.share.handlers

    monkeypatch.setattr(ui.share.handlers, "OPENS_QUEUED_PER_VISITOR", 1)
    handlers = ShareHandlers(outputs(), ShareStore(tmp_path / "s", 10_000_000, 86400))
    line = shared(handlers, export_file(tmp_path))
    run_id = line.split("?run=")[1].split("]")[0]

    def visitor(host: str) -> SimpleNamespace:
        return SimpleNamespace(query_params={"run": run_id}, client=SimpleNamespace(host=host), headers={})

    async def while_one_is_under_way() -> tuple[list, list]:
        async with handlers._opening.hold("198.51.100.1"):  # that visitor's one open, under way
            return await handlers.open(visitor("198.51.100.1")), await handlers.open(visitor("198.51.100.2"))

    busy, other = asyncio.run(while_one_is_under_way())
    assert "Many shared runs are opening for you already" in busy[STATUS] and "Shared run" in other[STATUS]
