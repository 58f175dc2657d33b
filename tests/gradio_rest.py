"""Gradio's raw REST route, as a client without gradio_client calls it: the app tests' one way to send inputs
that gradio_client would refuse or rewrite (``1e400``, ``NaN``, too few inputs, a refused file path)."""

from __future__ import annotations

import json

import httpx


def call(url: str, name: str, data: list | str, timeout: float = 60) -> tuple[str, object]:
    """POST ``data`` (a list, or literal JSON text) to ``/gradio_api/call/<name>``, then read the event stream:
    (the last event, its data)."""
    base = url.rstrip("/")
    body = data if isinstance(data, str) else json.dumps(data)
    posted = httpx.post(f"{base}/gradio_api/call/{name}", content='{"data": ' + body + "}",
                        headers={"content-type": "application/json"}, timeout=timeout)
    assert posted.status_code == 200, posted.text
    event, payload = "", None
    with httpx.stream("GET", f"{base}/gradio_api/call/{name}/{posted.json()['event_id']}", timeout=timeout) as s:
        for line in s.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event in ("complete", "error"):
                payload = json.loads(line[6:])
    return event, payload


def frames(url: str, name: str, data: list, timeout: float = 60) -> list[list]:
    """``/gradio_api/call/<name>`` with ``data``: every frame of outputs it streamed, in order (server file paths
    as sent; the complete event repeats the last)."""
    base = url.rstrip("/")
    posted = httpx.post(f"{base}/gradio_api/call/{name}", json={"data": data}, timeout=timeout)
    assert posted.status_code == 200, posted.text
    out = []
    with httpx.stream("GET", f"{base}/gradio_api/call/{name}/{posted.json()['event_id']}", timeout=timeout) as s:
        for line in s.iter_lines():
            if line.startswith("data:") and line[5:].strip() not in ("", "null"):
                out.append(json.loads(line[5:]))
    return out


def last_frame(url: str, name: str, data: list, timeout: float = 60) -> list:
    """``/gradio_api/call/<name>`` with ``data``: the last frame of outputs it streamed (server file paths as sent)."""
    streamed = frames(url, name, data, timeout)
    assert streamed
    return streamed[-1]


def queue_frames(url: str, fn_index: int, data: list, session: str, query: str = "", timeout: float = 90) -> list:
    """One event through ``/queue/join`` + ``/queue/data``, as the page sends a private event: every frame of
    outputs it streamed (the event must succeed)."""
    base = url.rstrip("/")
    joined = httpx.post(f"{base}/gradio_api/queue/join{query}", json={"data": data, "fn_index": fn_index,
                                                                       "session_hash": session, "event_data": None},
                        timeout=30)
    assert joined.status_code == 200, joined.text
    frames = []
    with httpx.stream("GET", f"{base}/gradio_api/queue/data", params={"session_hash": session}, timeout=timeout) as s:
        for line in s.iter_lines():
            message = json.loads(line[5:]) if line.startswith("data:") else {}
            if message.get("msg") in ("process_generating", "process_completed") and (message.get("output") or {}
                                                                                      ).get("data"):
                frames.append(message["output"]["data"])
            if message.get("msg") == "process_completed":
                assert message.get("success", True), message
                break
    return frames
