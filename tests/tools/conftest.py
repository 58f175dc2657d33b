"""Shared fixtures for the tool tests: no test here may reach the network."""

from __future__ import annotations

import ipaddress
import socket

import pytest

CANARY_HF_TOKEN = "hf_canary_5f3c2a9e1d7b4c6a8e0f"
CANARY_SECRET = "secret-canary-7d41c0b8a2"
CANARIES = (CANARY_HF_TOKEN, CANARY_SECRET)


def _is_local(address: object) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if not isinstance(host, str):
        return True
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: resolving it would already be network access


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail loudly if anything in the test process tries to open a non-loopback connection."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: object) -> object:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
            raise AssertionError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: object) -> object:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
            raise AssertionError(f"test tried to reach the network: {address!r}")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)


@pytest.fixture
def canary_env(monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """Secrets in the *test* (app) process's environment that the sandbox must never reveal."""
    monkeypatch.setenv("HF_TOKEN", CANARY_HF_TOKEN)
    monkeypatch.setenv("SECRET_CANARY", CANARY_SECRET)
    return CANARIES
