"""LLM settings from the environment: the three ways, overrides, and a token that never shows."""

from __future__ import annotations

from agents.llm.settings import DEFAULT_MODEL, LLMSettings


def test_router_from_hf_token():
    s = LLMSettings.from_env({"HF_TOKEN": "hf_abcdef123456"})
    assert s.configured and s.base_url is None and s.provider == "auto" and s.model == DEFAULT_MODEL
    assert "hf_abcdef123456" not in repr(s) and "hf_abcdef123456" not in s.describe()
    assert "router" in s.describe()


def test_base_url_wins_and_uses_llm_api_key():
    s = LLMSettings.from_env({"HF_TOKEN": "hf_x", "LLM_BASE_URL": "http://localhost:11434/v1/",
                              "LLM_API_KEY": "sk-local", "LLM_MODEL": "qwen2.5:7b", "LLM_TIMEOUT": "12"})
    assert s.base_url == "http://localhost:11434/v1" and s.token == "sk-local" and s.provider is None
    assert s.model == "qwen2.5:7b" and s.timeout_s == 12
    assert s.describe() == "qwen2.5:7b at http://localhost:11434/v1"


def test_nothing_configured_names_the_three_ways():
    s = LLMSettings.from_env({})
    problem = s.problem()
    assert not s.configured and problem.startswith("HF_TOKEN is not set")
    assert "Sign in with Hugging Face" in problem and "LLM_BASE_URL" in problem


def test_bad_timeout_falls_back_and_overrides_apply():
    s = LLMSettings.from_env({"HF_TOKEN": "hf_x", "LLM_TIMEOUT": "soon"})
    assert s.timeout_s == 60
    visitor = s.with_overrides(model=" Qwen/Qwen3-8B ", token="hf_visitor")
    assert visitor.model == "Qwen/Qwen3-8B" and visitor.token == "hf_visitor"
    assert LLMSettings(base_url="http://x/v1").with_overrides(token="hf_visitor").token is None
    assert s.redact("key hf_x leaked") == "key hf_*** leaked"
