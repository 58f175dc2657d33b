"""An MCP server's header secret, echoed back encoded, reaches no observation, export, Share link or log, and a
server's tool cannot take a name the app reads as its own (issue 47). Against a real MCP server on 127.0.0.1
(``tests/tools/mcp_kit.py``), behind a bearer token."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

import pytest

from agents.events import Observation
from agents.llm.scripted import ScriptedModel
from agents.modes import RunConfig, react
from agents.trace import Trace
from tests.frames import compare_outputs
from tests.tools.mcp_kit import mcp_server
from tools import default_registry
from tools.mcp_client import WITHHELD, holds_secret
from tools.mcp_config import McpServer
from tools.mcp_servers import McpTools
from ui.core.lesson import Shown, Turn
from ui.recordings.export import export_dict, to_json
from ui.share.handlers import ShareHandlers
from ui.share.store import ShareStore

TOKEN = "cf_CANARY_4e1b9d07a2c6"
HEADER = f"Bearer {TOKEN}"
ENCODINGS = ("base64", "base64-shifted", "hex", "url")


@pytest.fixture(scope="module")
def guarded_url():
    with mcp_server(token=TOKEN) as endpoint:
        yield endpoint


@pytest.fixture
def server(guarded_url, monkeypatch) -> McpServer:
    monkeypatch.setenv("CLASSFACTS_TOKEN", TOKEN)
    return McpServer("classfacts", guarded_url, (("Authorization", "Bearer ${CLASSFACTS_TOKEN}"),))


def forms(secret: str) -> list[str]:
    """The secret as it is and as the tests' server encodes it (any of these in a text is a leak)."""
    raw = secret.encode()
    return [secret, base64.b64encode(raw).decode().rstrip("="), raw.hex(), quote(secret, safe="")]


def leaked(text: str) -> list[str]:
    return [form for secret in (TOKEN, HEADER) for form in forms(secret) if form in text or form.upper() in text]


def call(encoding: str) -> str:
    return f"Thought: ask.\nAction: classfacts_echo_auth_encoded\nAction Input: {encoding}"


def test_an_echoed_secret_in_any_common_encoding_is_withheld_and_reaches_no_export_share_or_log(server, tmp_path,
                                                                                                caplog):
    with caplog.at_level(logging.DEBUG):
        registry = McpTools([server]).extend(default_registry())
        model = ScriptedModel([*(call(e) for e in ENCODINGS), "Thought: done.\nFinal Answer: ok"])
        trace = Trace("react", "Echo it")
        for event in react("Echo it", model, registry, RunConfig(max_steps=len(ENCODINGS) + 1)):
            trace.add(event)
        model.assert_done()
        observations = [e for _, e in trace.events if isinstance(e, Observation)]
        withheld = f"classfacts_echo_auth_encoded: {WITHHELD}"
        assert [o.output for o in observations[:3]] == [withheld] * 3 and all(o.is_error for o in observations[:3])
        assert observations[3].output == "encoded (url): Bearer%20[secret]"  # the token itself needs no escaping
        assert holds_secret(server, f"Bearer%20{TOKEN}") and holds_secret(server, quote(f"Bearer {TOKEN}!", safe=""))
        export = tmp_path / "run.json"
        export.write_text(to_json(export_dict(trace.question, "react", {"react": trace}, {"tools": registry.names})),
                          encoding="utf-8")
        handlers = ShareHandlers(compare_outputs(), ShareStore(tmp_path / "store", 10_000_000, 86400))
        page = SimpleNamespace(headers={}, client=None, session_hash="mcp-secrets")  # the run on its screen
        handlers.lessons.of(page).show(Shown("replay", str(export), (Turn(trace.question),)))
        line = asyncio.run(handlers.share(page))
        assert "Share this run" in line, line
    stored = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in Path(tmp_path / "store").rglob("*")
                       if p.is_file())
    server_side = ("mcp.server", "sse_starlette", "uvicorn", "root")  # the test's MCP server, in this process
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(server_side))
    sent = json.dumps([r.messages for r in model.requests])
    for where, text in {"trace": json.dumps(trace.to_dict()), "export": export.read_text(), "share": stored,
                        "log": logged, "prompts": sent}.items():
        assert leaked(text) == [], where
    assert stored and "classfacts_echo_auth_encoded" in stored  # the share holds the run, without the secret


def test_the_check_sees_each_encoding_and_not_ordinary_text(server):
    secret = HEADER.encode()
    for text in (base64.b64encode(secret).decode(), base64.urlsafe_b64encode(b"xy" + secret).decode(),
                 "\n".join(base64.encodebytes(b"Authorization: " + secret).decode().split()),
                 secret.hex().upper(), quote(HEADER, safe=""), quote(TOKEN), "&#99;f_CANARY" + TOKEN[9:]):
        assert holds_secret(server, f"the server says: {text}"), text
    assert not holds_secret(server, "The exam is on 14 June in room B12; ask Ms Okafor, QmVhcmVy.")


def test_a_server_named_final_cannot_add_final_answer(guarded_url, monkeypatch, caplog):
    """``final`` + ``answer`` would be ``final_answer``, which the parser reads as the answer: refused, and the log
    says why; the server's other tools join."""
    monkeypatch.setenv("FINAL_TOKEN", TOKEN)
    final = McpServer("final", guarded_url, (("Authorization", "Bearer ${FINAL_TOKEN}"),))
    with caplog.at_level(logging.WARNING, logger="tools.mcp_servers"):
        registry = McpTools([final]).extend(default_registry())
    assert "final_lookup" in registry.names and "final_answer" not in registry.names
    assert ("APP_MCP_SERVERS: the MCP server 'final': its tool 'answer' is left out: 'final_answer' is a word the app "
            "reads as an action of its own (an answer, no action, Search or Lookup).") in [
        r.getMessage() for r in caplog.records]
