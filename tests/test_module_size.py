"""No Python module of ours is over 400 lines: a module is read whole, and a longer one is
split by concern (the library, the portal, the tests and the benches alike)."""

from __future__ import annotations

from pathlib import Path

from portal.embedded_db import PROJECT_ROOT

MAX_LINES = 400
PACKAGES = ("rag_plugin", "portal", "tenants", "tests", "bench")


def modules() -> list[Path]:
    found = [path for package in PACKAGES for path in (PROJECT_ROOT / package).rglob("*.py")]
    assert len(found) > 300, "the walk found too few modules: is PROJECT_ROOT the checkout?"
    return found


def test_no_module_is_over_400_lines() -> None:
    too_long = {
        str(path.relative_to(PROJECT_ROOT)): lines
        for path in modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert too_long == {}
