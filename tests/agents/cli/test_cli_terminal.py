"""``python -m agents ask`` writes no terminal control sequence a model sent (agents/cli/terminal.py), unless
``--raw``: a model server streams a clear-screen, a window title, a cursor-up + erase-line forging a summary
line, and an OSC 8 link, across token boundaries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.cli.terminal import TerminalText, clean
from agents.llm.stub_server import StubLLMServer, StubReply

ROOT = Path(__file__).resolve().parents[3]
CLEAR, TITLE = "\x1b[2J", "\x1b]0;pwned\x07"
FORGE = "\x1b[1A\x1b[2K"  # up one line, erase it: the next text reads as the line above
LINK = "\x1b]8;;https://evil.example/\x1b\\the docs\x1b]8;;\x1b\\"
REPLY = f"Thought: {CLEAR}{TITLE}look at {LINK}.{FORGE}\nFinal Answer: 396\tdone"
SEQUENCES = (CLEAR, TITLE, "\x1b]8;;", "\x1b[1A", "\x1b[2K", "\x1b")


def ask(*flags: str) -> subprocess.CompletedProcess:
    with StubLLMServer(lambda body: StubReply(text=REPLY), chunk_chars=3) as srv:  # sequences split across chunks
        env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "LLM_API_KEY", "HF_HUB_OFFLINE")}
        env.update(LLM_BASE_URL=srv.url, LLM_MODEL="stub", PYTHONPATH=str(ROOT))
        return subprocess.run([sys.executable, "-m", "agents", "ask", "What is 17 * 23 + 5?", "--mode", "think",
                               *flags], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)


def test_ask_prints_none_of_the_models_escapes_and_keeps_its_text():
    done = ask()
    assert done.returncode == 0, done.stderr
    assert not [s for s in SEQUENCES if s in done.stdout], repr(done.stdout)
    assert "look at the docs." in done.stdout and "Final Answer: 396\tdone" in done.stdout


def test_ask_raw_prints_them_as_they_came():
    done = ask("--raw")
    assert done.returncode == 0, done.stderr
    assert all(s in done.stdout for s in (CLEAR, TITLE, LINK, FORGE)), repr(done.stdout)


@pytest.mark.parametrize("text, shown", [
    ("a\x1b[2Jb", "ab"), ("a\x1b]0;title\x07b", "ab"), ("a\x1b]0;title\x1b\\b", "ab"),
    ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"), ("up\x1b[1A\x1b[2Kline", "upline"),
    ("8-bit\x9b2J csi\x9d0;t\x9c", "8-bit csi"), ("bell\x07 back\x08 cr\r del\x7f", "bell back cr del"),
    ("keeps\nlines\tand tabs, ünïcode ✓", "keeps\nlines\tand tabs, ünïcode ✓"),
    ("\x1b]0;never ended\nthe rest", "\nthe rest"), ("ESC(B: \x1b(Bcharset, \x1b7saved", "ESC(B: charset, saved"),
])
def test_clean(text, shown):
    assert clean(text) == shown


def test_a_sequence_split_across_writes_is_dropped_whole():
    stream = TerminalText()
    pieces = ("x\x1b", "]8;;http", "://e\x1b", "\\y", "\x1b[", "2", "Jz")
    assert "".join(stream.feed(piece) for piece in pieces) == "xyz"
