"""A mode added to a copy of the app (conftest's ``app_copy``): its module, its prompt, the environment to run in."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

_ECHO = '''
    """Echo: one call with its own prompt; the reply is the answer. A toy mode for a test."""

    from agents import prompts
    from agents.events import FinalAnswer
    from agents.modes.base import complete
    from agents.modes.registry import ModeSpec, register


    def echo(question, model, registry, config):
        messages = [{"role": "system", "content": prompts.system_prompt(MODE_ID, registry)},
                    {"role": "user", "content": prompts.question_message(question)}]
        reply = yield from complete(model, messages, config)
        if reply is not None:
            yield FinalAnswer(reply.text.strip())


    register(ModeSpec(MODE_ID, SPEC))
'''


def add_echo_mode(repo: Path, module: str, mode_id: str, spec: str, prompt: str) -> None:
    """Write ``agents/modes/<module>.py``: mode ``mode_id`` registered as ``ModeSpec(mode_id, <spec>)`` (its
    title, ``echo`` and the rest), with ``prompts/<mode_id>.md`` holding ``prompt``."""
    source = textwrap.dedent(_ECHO).replace("MODE_ID", repr(mode_id)).replace("SPEC", spec)
    (repo / "agents" / "modes" / f"{module}.py").write_text(source, encoding="utf-8")
    (repo / "prompts" / f"{mode_id}.md").write_text(prompt, encoding="utf-8")


def copy_env(repo: Path) -> dict[str, str]:
    """The environment to run the copy in: the copy first on the path, none of the machine's own settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LLM_", "HF_", "GRADIO_", "SPACE_", "APP_")) and k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(repo), GRADIO_ANALYTICS_ENABLED="False", PYTHONDONTWRITEBYTECODE="1")
    return env
