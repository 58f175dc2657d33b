"""APP_*/BENCH_* settings (ui/core/settings.py): declared once with their documented defaults; a bad value is one
line naming the variable and the accepted range."""

from __future__ import annotations

import pytest

from settings import SettingError
from ui.core.settings import RUNS_PER_CORE, AppSettings, cpu_quota, default_concurrency, usable_cores


def test_defaults_are_the_documented_ones():
    runs = RUNS_PER_CORE * usable_cores()
    assert AppSettings.from_env({}) == AppSettings(concurrency=runs, queue_size=200, session_ttl_s=900.0,
                                                   bench_max_n=200, bench_visitor_max_n=20, bench_concurrency=4,
                                                   mcp=True)
    assert AppSettings.from_env({"APP_CONCURRENCY": "8", "APP_SESSION_TTL": "60"}).concurrency == 8
    limits = AppSettings.from_env({})
    assert (limits.pause_ttl_s, limits.paused_per_visitor, limits.paused_max, limits.share_run_mb,
            limits.share_hourly_mb, limits.trusted_proxies) == (300.0, 3, runs // 2, 5, 20, ())


def test_concurrency_follows_the_cores_and_a_containers_quota(tmp_path):
    assert default_concurrency(2) == 2 * RUNS_PER_CORE and default_concurrency(1000) == 1000  # capped at the range
    (tmp_path / "cpu.max").write_text("150000 100000\n")  # cgroup v2: 1.5 cores → 2
    assert cpu_quota(tmp_path) == 1.5 and usable_cores(tmp_path) == min(2, usable_cores(tmp_path / "none"))
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpu_quota(tmp_path) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")  # cgroup v1: one core
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpu_quota(v1) == 1.0 and usable_cores(v1) == 1
    assert AppSettings.from_env({"APP_SHARE_MAX_MB": "50"}).share_hourly_mb == 5  # a tenth of the store


@pytest.mark.parametrize(("env", "line"), [
    ({"APP_CONCURRENCY": "abc"}, "APP_CONCURRENCY must be an integer from 1 to 1000, got 'abc'"),
    ({"APP_QUEUE_SIZE": "-1"}, "APP_QUEUE_SIZE must be an integer from 0 to 10000, got '-1'"),
    ({"APP_SESSION_TTL": "forever"}, "APP_SESSION_TTL must be a number of seconds from 1 to 604800, got 'forever'"),
    ({"BENCH_MAX_N": "0"}, "BENCH_MAX_N must be an integer from 1 to 100000, got '0'"),
    ({"BENCH_VISITOR_MAX_N": "1e3"}, "BENCH_VISITOR_MAX_N must be an integer from 1 to 100000, got '1e3'"),
    ({"BENCH_CONCURRENCY": "65"}, "BENCH_CONCURRENCY must be an integer from 1 to 64, got '65'"),
    ({"APP_MCP": "disabled"}, "APP_MCP must be one of 1/0, true/false, on/off, yes/no, got 'disabled'"),
    ({"APP_SHARE_DAYS": "0"}, "APP_SHARE_DAYS must be a number of days from 0.001 to 3650, got '0'"),
    ({"APP_SHARE_MAX_MB": "lots"}, "APP_SHARE_MAX_MB must be an integer from 1 to 100000, got 'lots'"),
    ({"APP_SHARE_PER_HOUR": "0"}, "APP_SHARE_PER_HOUR must be an integer from 1 to 100000, got '0'"),
    ({"APP_SHARE_RUN_MB": "50"}, "APP_SHARE_RUN_MB must be an integer from 1 to 20, got '50'"),
    ({"APP_SHARE_MB_PER_HOUR": "150"}, "APP_SHARE_MB_PER_HOUR must be at most half of APP_SHARE_MAX_MB (200), got "
     "'150': one visitor could otherwise push everyone else's links out of the store within an hour"),
    ({"APP_PAUSE_TTL": "never"}, "APP_PAUSE_TTL must be a number of seconds from 1 to 86400, got 'never'"),
    ({"APP_PAUSED_PER_VISITOR": "0"}, "APP_PAUSED_PER_VISITOR must be an integer from 1 to 1000, got '0'"),
    ({"APP_PAUSED_SHARE": "1"}, "APP_PAUSED_SHARE must be a number from 0.05 to 0.9, got '1'"),
    ({"APP_TRUSTED_PROXIES": "proxy.local"}, "APP_TRUSTED_PROXIES must be addresses or networks (e.g. 10.0.0.5, "
     "10.0.0.0/8) or *, comma-separated, got 'proxy.local'"),
])
def test_a_bad_value_is_one_line(env, line):
    with pytest.raises(SettingError) as caught:
        AppSettings.from_env(env)
    assert str(caught.value) == line
