"""``python -m agents <command>``: ``ask`` (one question, any modes), ``eval`` (benchmark), ``stub`` (toy local model)."""

from __future__ import annotations

import sys

COMMANDS = {
    "ask": "ask one question in Think / Act / ReAct (or all) and stream the traces",
    "eval": "score the modes on HotpotQA, FEVER, GSM8K or your own CSV/JSONL",
    "stub": "serve the toy OpenAI-compatible model on 127.0.0.1 (for offline demos and tests)",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        lines = [f"  {name:<5} {text}" for name, text in COMMANDS.items()]
        print("usage: python -m agents {ask,eval,stub} ...\n\n" + "\n".join(lines), file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command, rest = argv[0], argv[1:]
    if command == "ask":
        from agents.cli import ask_main

        return ask_main(rest)
    if command == "eval":
        from agents.evaluate import eval_main

        return eval_main(rest)
    from agents.llm.stub_server import main as stub_main

    stub_main(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
