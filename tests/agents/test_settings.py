"""Settings from the environment: the three ways to a model, overrides, a token that never shows, and the one
validating reader (agents/settings.py) whose errors are one line naming the variable and the accepted range."""

from __future__ import annotations

import pytest

from agents.llm.settings import DEFAULT_MODEL, LLMSettings
from settings import SettingError, env_bool, env_float, env_int, env_text


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


def test_overrides_apply_and_the_token_is_redacted():
    s = LLMSettings.from_env({"HF_TOKEN": "hf_x", "LLM_TIMEOUT": ""})
    assert s.timeout_s == 60  # empty means unset: the default
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
    unlimited = LLMSettings.from_env({"HF_TOKEN": "hf_x", "LLM_MAX_CONCURRENT": "0"})
    assert unlimited.max_concurrent == 0  # unlimited by the owner's choice; unset (None): automatic


@pytest.mark.parametrize(("env", "line"), [
    ({"LLM_TIMEOUT": "soon"}, "LLM_TIMEOUT must be a number of seconds from 0.1 to 86400, got 'soon'"),
    ({"LLM_TIMEOUT": "nan"}, "LLM_TIMEOUT must be a number of seconds from 0.1 to 86400, got 'nan'"),
    ({"LLM_MAX_DURATION": "inf"}, "LLM_MAX_DURATION must be a number of seconds from 0.1 to 86400, got 'inf'"),
    ({"LLM_MAX_TOKENS": "-3"}, "LLM_MAX_TOKENS must be an integer from 1 to 1000000, got '-3'"),
    ({"LLM_MAX_TOKENS": "2.5"}, "LLM_MAX_TOKENS must be an integer from 1 to 1000000, got '2.5'"),
    ({"LLM_MAX_CONCURRENT": "-1"}, "LLM_MAX_CONCURRENT must be an integer from 0 to 1000, got '-1'"),
    ({"LLM_BASE_URL": "localhost:11434/v1"},
     "LLM_BASE_URL must start with http:// or https://, got 'localhost:11434/v1'"),
])
def test_a_bad_value_is_one_line_naming_the_variable_and_the_range(env, line):
    with pytest.raises(SettingError) as caught:
        LLMSettings.from_env({"HF_TOKEN": "hf_x", **env})
    assert str(caught.value) == line


def test_a_bad_token_is_refused_without_echoing_it():
    with pytest.raises(SettingError) as caught:
        LLMSettings.from_env({"HF_TOKEN": "hf_secret\nsecond line"})
    assert str(caught.value) == "HF_TOKEN must be one line without control characters"


def test_the_reader_checks_type_and_range_and_keeps_long_values_short():
    assert env_int("N", 7, 1, 10, {}) == 7 and env_int("N", 7, 1, 10, {"N": " 3 "}) == 3
    assert env_float("T", 1.5, 0.1, 9, {"T": "2e0"}) == 2.0
    assert env_text("S", "d", {"S": "  "}) == "d"
    with pytest.raises(SettingError, match=r"^N must be an integer from 1 to 10, got '11'$"):
        env_int("N", 7, 1, 10, {"N": "11"})
    with pytest.raises(SettingError) as caught:
        env_int("N", 7, 1, 10, {"N": "x" * 500})
    assert len(str(caught.value)) < 100 and str(caught.value).endswith("...'")


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("0", False), ("TRUE", True), ("false", False),
                                            (" On ", True), ("off", False), ("Yes", True), ("no", False), ("", True)])
def test_a_switch_reads_the_usual_spellings(raw, value):
    assert env_bool("S", True, {"S": raw}) is value


def test_a_switch_refuses_anything_else_in_one_line():
    assert env_bool("S", False, {}) is False
    with pytest.raises(SettingError, match=r"^S must be one of 1/0, true/false, on/off, yes/no, got 'maybe'$"):
        env_bool("S", True, {"S": "maybe"})
