"""Fixtures for the ``ui/`` package's tests (no server, no browser)."""

from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import pytest

from tools.calculator import calculate
from tools.registry import ToolRegistry


@pytest.fixture
def registry() -> ToolRegistry:
    """Only the calculator: deterministic and offline."""
    return ToolRegistry([calculate])
