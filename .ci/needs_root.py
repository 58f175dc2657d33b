"""pytest plugin for .ci/run's root pass: keeps only the tests that a plain user's run skips for want of root.

CI runs the suite as a plain user, as a Space runs the app. A test that needs root says so in a ``skipif``
reason that names root (e.g. "needs root to start the app as an unprivileged user"); this plugin, loaded with
``-p needs_root``, deselects every other test, so those few run as root and the rest are not run twice.
"""

from __future__ import annotations

import re

import pytest

NAMES_ROOT = re.compile(r"\broot\b", re.IGNORECASE)


def needs_root(item: pytest.Item) -> bool:
    """A ``skipif`` of this test gives root as its reason."""
    return any(NAMES_ROOT.search(str(mark.kwargs.get("reason", ""))) for mark in item.iter_markers("skipif"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect every test but those that need root."""
    keep = [item for item in items if needs_root(item)]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if not needs_root(item)])
        items[:] = keep
