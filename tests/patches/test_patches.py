"""Every framework patch (patches/): listed once, checked against the installed library, pinned, and off when asked."""

from __future__ import annotations

import importlib
import logging
import pkgutil
import re
from pathlib import Path

import patches
from patches import Patch

ROOT = Path(__file__).resolve().parents[2]


def declared() -> dict[str, Patch]:
    """Each patch module's ``PATCH``, by name."""
    found = {}
    for info in pkgutil.iter_modules(patches.__path__, "patches."):
        module = importlib.import_module(info.name)
        if isinstance(getattr(module, "PATCH", None), Patch):
            found[module.PATCH.name] = module.PATCH
    return found


def test_every_patch_module_is_listed_once():
    assert sorted(declared()) == sorted(patches.NAMES)


def test_each_patch_was_written_for_the_pinned_version_of_what_it_touches():
    requirements = (ROOT / "requirements.txt").read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s#]+)", requirements, re.M))
    for patch in declared().values():
        assert pins.get(patch.library) == patch.written_for == patch.installed(), patch


def test_each_patch_links_its_upstream_write_up():
    """A patch is an upstream report waiting to be filed: its docstring links its section of docs/upstream.md, which
    gives the behaviour, a reproduction, the change proposed and the measured gain."""
    write_ups = (ROOT / "docs" / "upstream.md").read_text(encoding="utf-8").split("\n## ")[1:]
    sections = {part.split("\n", 1)[0].strip(): part for part in write_ups}
    for name in patches.NAMES:
        module = importlib.import_module(f"patches.{name}")
        assert f"docs/upstream.md#{name}" in (module.__doc__ or ""), name
        assert name in sections, name
        for part in ("**Behaviour.**", "**Reproduction.**", "**Change proposed.**", "**Measured gain.**"):
            assert part in sections[name], (name, part)
    assert sorted(sections) == sorted(patches.NAMES)


def test_the_start_up_checks_pass_on_the_installed_libraries():
    import gradio as gr

    from patches import gradio_inputs, gradio_queue, gradio_sessions

    with gr.Blocks() as demo:
        gr.Textbox()
    demo.queue()
    assert gradio_queue.problem(demo) is None
    assert gradio_sessions.problem() is None
    assert gradio_inputs.problem() is None


def test_a_patch_turned_off_says_so_and_an_unknown_name_is_refused(monkeypatch, caplog):
    patch = declared()["gradio_queue"]
    monkeypatch.setenv(patches.ENV, "page_cache, gradio_queue")
    with caplog.at_level(logging.INFO, logger="patches"):
        assert not patch.usable(None)
    assert "patch gradio_queue is off (APP_PATCHES_OFF)" in caplog.text
    assert patches.env_problem() is None
    assert "got nope" in patches.env_problem({patches.ENV: "nope,page_cache"})


def test_a_patch_s_earlier_name_still_turns_it_off(monkeypatch, caplog):
    """``APP_PATCHES_OFF`` is a public setting: a name from before a rename still works; the log says the new one."""
    monkeypatch.setenv(patches.ENV, "gradio_queue_poll,httpx_network_backend")
    assert patches.env_problem() is None
    assert patches.turned_off() == {"gradio_queue", "httpx_backend"}
    with caplog.at_level(logging.INFO, logger="patches"):
        assert not declared()["gradio_queue"].usable(None)
    assert "patch gradio_queue is off (APP_PATCHES_OFF)" in caplog.text
    assert set(patches.OLD_NAMES.values()) - {None} <= set(patches.NAMES)


def test_a_removed_patch_s_name_is_accepted_and_ignored(monkeypatch):
    """An old setting that turned off a patch since removed (listed with None) does not stop the app."""
    monkeypatch.setitem(patches.OLD_NAMES, "a_removed_patch", None)
    monkeypatch.setenv(patches.ENV, "a_removed_patch, page_cache")
    assert patches.env_problem() is None and patches.turned_off() == {"page_cache"}
    assert all(patch.wanted() for name, patch in declared().items() if name != "page_cache")


def test_a_failed_check_turns_the_patch_off_with_one_line(caplog):
    patch = declared()["page_cache"]
    with caplog.at_level(logging.WARNING, logger="patches"):
        assert not patch.usable("the thing it touches moved")
    assert caplog.text.count("patch page_cache is off: the thing it touches moved") == 1


def test_the_queue_polls_less_often_when_installed():
    import gradio as gr

    from patches import gradio_queue

    with gr.Blocks() as demo:
        gr.Textbox()
    demo.queue()
    assert gradio_queue.install(demo)
    assert demo._queue.sleep_when_free == gradio_queue.EVENT_POLL_S
    assert demo._queue.progress_update_sleep_when_free == gradio_queue.PROGRESS_POLL_S


def test_a_pushed_event_and_a_freed_slot_wake_the_sleeping_queue(monkeypatch):
    """With a poll of a minute, three events (one slot: each waits for the last to end) still finish in seconds."""
    import time

    import gradio as gr
    from gradio_client import Client

    from patches import gradio_queue

    monkeypatch.setattr(gradio_queue, "EVENT_POLL_S", 60.0)

    def shout(text: str) -> str:
        time.sleep(0.3)
        return text.upper()

    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        box.submit(shout, box, out, api_name="shout")
    demo.queue(default_concurrency_limit=1)
    assert gradio_queue.install(demo)
    assert demo._queue.sleep_when_free == 60.0
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        time.sleep(0.5)  # the queue's loop now sleeps out its minute
        client = Client(demo.local_url, verbose=False)
        start = time.monotonic()
        jobs = [client.submit(word, api_name="/shout") for word in ("a", "b", "c")]
        assert [job.result(timeout=30) for job in jobs] == ["A", "B", "C"]
        assert time.monotonic() - start < 20  # a missed wake-up waits out the minute
    finally:
        demo.close()
