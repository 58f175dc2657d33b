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


def test_limits_from_the_environment():
    s = LLMSettings.from_env({"HF_TOKEN": "hf_x", "LLM_TIMEOUT": "5", "LLM_MAX_DURATION": "90",
                              "LLM_MAX_TOKENS": "256", "LLM_MAX_CONCURRENT": "1"})
    assert (s.timeout_s, s.max_duration_s, s.max_tokens, s.max_concurrent) == (5, 90, 256, 1)
    d = LLMSettings.from_env({"HF_TOKEN": "hf_x"})
    assert (d.timeout_s, d.max_duration_s, d.max_tokens, d.max_concurrent) == (60, 600, 2048, None)
    bad = LLMSettings.from_env({"HF_TOKEN": "hf_x", "LLM_MAX_DURATION": "inf", "LLM_MAX_TOKENS": "-3",
                                "LLM_MAX_CONCURRENT": "0", "LLM_TIMEOUT": "nan"})
    assert (bad.timeout_s, bad.max_duration_s, bad.max_tokens, bad.max_concurrent) == (60, 600, 2048, None)
