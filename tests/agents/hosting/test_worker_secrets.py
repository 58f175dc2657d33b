"""A run worker holds the app's secrets without an environment that shows them (agents/hosting/processes.py).

Workers are started the production way (``ProcessHost`` from the app's environment) with canary secrets in that
environment; a tool the worker imports (``secret_probe``) reports what the worker process itself holds, and the
stand-in model server records what the worker's model client sent.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from agents.events import Observation
from agents.hosting.host import HostedRun
from agents.hosting.processes import ProcessHost, hub_tokens, worker_environment
from agents.hosting.worker import SECRETS, RunSpec, take_secrets
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer, StubReply
from agents.request import RunRequest

HF_CANARY = "hf_canary_worker_3f9a1c7e5b"
API_KEY_CANARY = "sk-canary-worker-8d2e6b"
OTHER_CANARY = "canary-oauth-secret-41c7"
PROBE = ("tests.agents.hosting.secret_probe", "secret_probe")


@pytest.fixture
def canary_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The app's environment on a Space, with canaries: the owner's token, a model server's key, an OAuth secret."""
    monkeypatch.setenv("HF_TOKEN", HF_CANARY)
    monkeypatch.setenv("LLM_API_KEY", API_KEY_CANARY)
    monkeypatch.setenv("OAUTH_CLIENT_SECRET", OTHER_CANARY)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no stored login stands in for the variable


def run_probe(srv: StubLLMServer, pool: ProcessHost, settings: LLMSettings) -> dict:
    """One ReAct run in the pool whose one action is the probe; what the probe reported."""
    canaries = ",".join((HF_CANARY, API_KEY_CANARY, OTHER_CANARY))
    srv.script(StubReply(text=f"Thought: look around\nAction: secret_probe\nAction Input: {canaries}"),
               StubReply(text="Thought: done\nFinal Answer: looked"))
    run = HostedRun(RunSpec(RunRequest("Where are the secrets?", ("react",)), settings, tools=(PROBE,)), pool).start()
    observations = []
    deadline = time.monotonic() + 30
    try:
        while not run.done and time.monotonic() < deadline:
            item = run.poll(timeout=0.5)
            if item is not None and isinstance(item[1], Observation):
                observations.append(item[1])
    finally:
        run.close()
    assert len(observations) == 1 and not observations[0].is_error, observations
    return json.loads(observations[0].output)


def test_a_worker_has_no_secret_in_its_environment_yet_its_runs_send_the_token(canary_env):
    with StubLLMServer() as srv:
        settings = LLMSettings.from_env({**os.environ, "LLM_BASE_URL": srv.url, "LLM_MODEL": "stub"})
        pool = ProcessHost(1).start()
        try:
            [pid] = pool.pids()
            report = run_probe(srv, pool, settings)
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    block: bytes | None = f.read()
            except PermissionError:  # a plain user: the worker is non-dumpable, so only the probe inside can look
                block = None
        finally:
            pool.stop()
    assert report["pid"] == pid and report["dumpable"] is False
    assert report["secret_names_in_block"] == []
    assert not any(where["environ_block"] for where in report["found"].values())
    if block is not None:
        assert all(c.encode() not in block for c in (HF_CANARY, API_KEY_CANARY, OTHER_CANARY))
        assert b"HF_TOKEN=" not in block and b"_SECRET=" not in block and b"_KEY=" not in block
    # the owner's token came over the pipe: huggingface_hub in the worker finds it where it did before ...
    assert report["found"][HF_CANARY] == {"environ_block": False, "os_environ": True, "hub_token": True}
    # ... a run's own token travels in its settings, never into an environment
    assert report["found"][API_KEY_CANARY] == {"environ_block": False, "os_environ": False, "hub_token": False}
    assert report["found"][OTHER_CANARY] == {"environ_block": False, "os_environ": False, "hub_token": False}
    assert [r.headers.get("authorization") for r in srv.requests] == [f"Bearer {API_KEY_CANARY}"] * 2


def test_what_a_worker_is_started_with_and_sent_first():
    environ = {"HF_TOKEN": HF_CANARY, "HUGGING_FACE_HUB_TOKEN": HF_CANARY, "LLM_API_KEY": API_KEY_CANARY,
               "PATH": "/usr/bin", "LLM_BASE_URL": "http://127.0.0.1:1/v1", "PYTHONPATH": "/extra"}
    env = worker_environment(environ)
    assert set(env) == {"PATH", "LLM_BASE_URL", "PYTHONPATH"} and env["PYTHONPATH"].endswith(os.pathsep + "/extra")
    assert hub_tokens(environ) == {"HF_TOKEN": HF_CANARY, "HUGGING_FACE_HUB_TOKEN": HF_CANARY}
    assert hub_tokens({"HF_TOKEN": "", "LLM_API_KEY": API_KEY_CANARY}) == {}


def test_a_worker_refuses_a_first_message_that_is_not_its_secrets(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_before")  # restored after the test
    with pytest.raises(ValueError, match="first message must be its secrets"):
        take_secrets(("start", 1, None))
    take_secrets((SECRETS, {"HF_TOKEN": HF_CANARY}))
    assert os.environ["HF_TOKEN"] == HF_CANARY
