"""A streaming handler's generator made on the event loop (patches/gradio_generators.py): no thread-pool hop for
an async generator, the pool still for everything that runs code, and the patch off when Gradio has changed."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.to_thread
import gradio as gr
import gradio.blocks
import pytest

from patches import gradio_generators
from tests.gradio_rest import frames, last_frame


@pytest.fixture
def patched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The patch installed for one test (Gradio's module restored after); the names of what went to the pool."""
    monkeypatch.setattr(gradio.blocks, "anyio", anyio)  # Gradio's own, whatever an app built earlier installed
    pooled: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
        pooled.append(getattr(fn, "__name__", repr(fn)))
        return await run_sync(fn, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    assert gradio_generators.install()
    return pooled


def test_an_async_generator_starts_on_the_loop_and_the_rest_still_go_to_the_pool(patched: list[str]) -> None:
    loop_thread: list[int] = []
    seen: dict[str, int] = {}

    async def streamed(text: str, request: gr.Request) -> AsyncIterator[str]:
        loop_thread.append(threading.get_ident())
        yield f"{text} from {request.client.host}"  # Gradio's request context still reaches the body
        yield text.upper()

    def stepped(text: str) -> Iterator[str]:
        seen["stepped"] = threading.get_ident()
        yield text.upper()

    def plain(text: str) -> str:
        seen["plain"] = threading.get_ident()
        return text.upper()

    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        box.submit(streamed, box, out, api_name="streamed")
        box.change(stepped, box, out, api_name="stepped")
        box.blur(plain, box, out, api_name="plain")
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        streamed = frames(demo.local_url, "streamed", ["hi"])
        assert streamed[0] == ["hi from 127.0.0.1"] and streamed[-1] == ["HI"]
        assert "streamed" not in patched  # made where Gradio then iterates it: no hop
        assert last_frame(demo.local_url, "stepped", ["hi"]) == ["HI"] == last_frame(demo.local_url, "plain", ["hi"])
        assert {"stepped", "plain"} <= set(patched)  # code that runs still runs on the pool, off the loop
        assert loop_thread[0] not in {seen["stepped"], seen["plain"]}
    finally:
        demo.close()


def test_other_anyio_names_are_anyio_s_own(patched: list[str]) -> None:
    assert gradio.blocks.anyio.CapacityLimiter is anyio.CapacityLimiter
    to_thread = gradio.blocks.anyio.to_thread
    assert to_thread.current_default_thread_limiter is anyio.to_thread.current_default_thread_limiter


def test_the_check_finds_gradio_as_written_and_says_when_it_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert gradio_generators.problem() is None

    async def call_function(self: Any, *args: Any) -> None:  # a Gradio that starts handlers some other way
        return None

    monkeypatch.setattr(gradio.blocks.Blocks, "call_function", call_function)
    assert "anyio.to_thread.run_sync" in gradio_generators.problem()
    monkeypatch.setattr(gradio.blocks, "anyio", anyio)
    assert not gradio_generators.install()  # off, with one log line: Gradio's own path, slower, never wrong
    assert not isinstance(gradio.blocks.anyio, gradio_generators._BlocksAnyio)


def test_turned_off_it_leaves_gradio_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gradio.blocks, "anyio", anyio)
    monkeypatch.setenv("APP_PATCHES_OFF", "gradio_generators")
    assert not gradio_generators.install()
    assert gradio.blocks.anyio is anyio
