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
