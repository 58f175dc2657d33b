"""A hostile model listing cannot break a visitor's run: the app resolves its model from a server whose
``GET /v1/models`` lists prices of 1e305, NaN, -1, "abc" or 1e-30 (OpenRouter's shape), runs every base mode over
REST, and each run finishes; its export parses with a strict JSON reader (no NaN, no Infinity)."""

from __future__ import annotations

from pathlib import Path

import pytest

import app
from agents import strict_json
from agents.llm import pricing
from agents.llm.discovery import resolve_model
from agents.llm.settings import LLMSettings
from agents.llm.stub_server import StubLLMServer
from agents.llm.toy_model import toy_policy
from tests.gradio_rest import last_frame

STATUS, EXPORTS = 6, 8  # /compare's outputs (ui/core/frame.Outputs.all)


class Listing(StubLLMServer):
    def __init__(self, value) -> None:
        super().__init__(toy_policy, models=("stub-model",))
        self.value = value

    def listed(self, model: str) -> dict:
        return {"id": model, "pricing": {"prompt": self.value, "completion": self.value}}


@pytest.fixture(autouse=True)
def no_prices():
    pricing.publish(None)
    yield
    pricing.publish(None)


@pytest.mark.parametrize("value", ["1e305", float("nan"), -1, "abc", "1e-30"], ids=repr)
def test_every_run_finishes_and_its_export_is_strict_json(kit, value):
    with Listing(value) as server:
        settings = resolve_model(LLMSettings.from_env({"LLM_BASE_URL": server.url}))
        with kit.launched(app.build_demo(settings=settings, registry=kit.registry())) as url:
            frame = last_frame(url, "compare", ["What is 17 * 23 + 5?", "All", "stub-model", "text", 5, 0.2,
                                                ["calculate"], "None", None], timeout=120)
            export = next(f["path"] for f in frame[EXPORTS] if f["path"].endswith(".json"))
            text = Path(export).read_text(encoding="utf-8")  # read while the app runs: it clears its cache at close
    assert frame[STATUS].startswith("✔ Done"), frame[STATUS]
    data = strict_json.loads(text)
    costs = [row["cost_usd"] for row in data["comparison"]["rows"]]
    if value == "1e-30":
        assert all(0 < c < 1e-6 for c in costs)
    else:
        assert costs == [None, None, None] and "$" not in " ".join(frame[3:6])
