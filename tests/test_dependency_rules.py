"""DESIGN.md's one-way dependency rule: rag_plugin never imports Django or the portal."""

from __future__ import annotations

import subprocess
import sys

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


def test_importing_every_rag_plugin_module_loads_no_django() -> None:
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
