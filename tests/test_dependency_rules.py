"""DESIGN.md's one-way dependency rule: rag_plugin never imports Django or the portal."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from portal.embedded_db import PROJECT_ROOT

IMPORT_EVERYTHING = """
import importlib, pkgutil, sys
import rag_plugin
for module in pkgutil.walk_packages(rag_plugin.__path__, "rag_plugin."):
    importlib.import_module(module.name)
forbidden = sorted(
    name for name in sys.modules
    if name.split(".")[0] in {"django", "rest_framework", "django_tenants", "portal", "tenants"}
)
print(",".join(forbidden))
"""


def python_output(code: str) -> str:
    """What ``code`` prints, run by a fresh interpreter in the project (nothing imported)."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_importing_every_rag_plugin_module_loads_no_django() -> None:
    assert python_output(IMPORT_EVERYTHING) == ""


def _imported_modules(path: Path) -> set[str]:
    """The modules a source file imports (absolute imports; the project uses no others)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_the_business_layer_never_imports_the_http_layer() -> None:
    """portal/rag (services, selectors, jobs, files, scope) raises its own errors and knows
    nothing of DRF or the API, so the admin, the worker and the API all call it alike."""
    offending = {
        str(path.relative_to(PROJECT_ROOT)): sorted(
            name
            for name in _imported_modules(path)
            if name.startswith(("portal.api", "rest_framework"))
        )
        for path in sorted((PROJECT_ROOT / "portal" / "rag").rglob("*.py"))
    }
    assert {path: names for path, names in offending.items() if names} == {}
