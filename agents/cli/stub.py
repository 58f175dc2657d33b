"""``python -m agents stub``: serve the toy OpenAI-compatible model on 127.0.0.1 until Ctrl-C.

For offline demos and tests: ``LLM_BASE_URL=http://127.0.0.1:8800/v1 python app.py``. The model is
:func:`agents.llm.toy_model.toy_policy`, which answers arithmetic questions with the calculator.
"""

from __future__ import annotations

import argparse
import threading

from agents.cli.exits import EXIT_OK
from agents.llm.stub_server import StubLLMServer

HELP = "serve the toy OpenAI-compatible model on 127.0.0.1 (for offline demos and tests)"
DESCRIPTION = "Serve the toy OpenAI-compatible model on 127.0.0.1."


def configure(parser: argparse.ArgumentParser) -> None:
    """The ``stub`` flags."""
    parser.add_argument("--port", type=int, default=8800)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before the first token")
    parser.add_argument("--token-delay", type=float, default=0.0, help="seconds between streamed chunks")
    parser.add_argument("--one-at-a-time", action="store_true",
                        help="a new request aborts the one in flight, like llama-cpp-python's server")


def run(args: argparse.Namespace, *, until: threading.Event | None = None) -> int:
    """Serve until Ctrl-C (or until ``until`` is set, for tests); the exit code is 0 either way."""
    server = StubLLMServer(latency=args.latency, token_delay=args.token_delay, port=args.port,
                           one_at_a_time=args.one_at_a_time).start()
    print(f"stub model at {server.url} — set LLM_BASE_URL={server.url}", flush=True)
    try:
        (until or threading.Event()).wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return EXIT_OK
