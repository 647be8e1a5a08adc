"""DESIGN.md's dependency rules: rag_plugin never imports Django or the portal, the portal's
business layer never imports its HTTP layer, no import cycle, dependencies declared as imported."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
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


def _file_imports(path: Path) -> set[str]:
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
            for name in _file_imports(path)
            if name.startswith(("portal.api", "rest_framework"))
        )
        for path in sorted((PROJECT_ROOT / "portal" / "rag").rglob("*.py"))
    }
    assert {path: names for path, names in offending.items() if names} == {}


STORE_FACTORIES = frozenset({"store_for", "backend_store", "drop_tenant_data"})


def _store_imports(path: Path) -> list[str]:
    """What a source file imports that hands out stores: portal.rag.runtime's store
    factories, or a store package of the library."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == "portal.rag.runtime":
            found += [f"{node.module}.{a.name}" for a in node.names if a.name in STORE_FACTORIES]
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.append(node.module)
        found += [
            m
            for m in modules
            if m.startswith(
                (
                    "rag_plugin.stores.postgres",
                    "rag_plugin.stores.qdrant",
                    "rag_plugin.stores.memory",
                )
            )
        ]
    return sorted(found)


def test_the_pages_and_views_reach_stores_only_through_the_business_layer() -> None:
    """The REST views, the admin pages and the workspace call services, selectors and scopes
    (``portal.rag.scope.admin_scope`` for the admin's reads); none builds a store itself."""
    callers = [
        *(PROJECT_ROOT / "portal" / "api").rglob("*.py"),
        *(PROJECT_ROOT / "portal" / "workspace").rglob("*.py"),
        PROJECT_ROOT / "portal" / "admin_views.py",
    ]
    offending = {str(path.relative_to(PROJECT_ROOT)): _store_imports(path) for path in callers}
    assert {path: names for path, names in offending.items() if names} == {}


def _imported_modules(package: Path) -> set[str]:
    """Every absolute module a package's code imports, by ``import``, ``from`` or
    ``importlib.import_module("...")`` with a literal name."""
    found: set[str] = set()
    for path in sorted(package.rglob("*.py")) + sorted(package.rglob("*.pyi")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.add(node.args[0].value)
    return found


def _normalized(requirement: str) -> tuple[str, frozenset[str]]:
    """A requirement's distribution name (PEP 503) and extras: ``psycopg[binary,pool]>=3``."""
    match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?", requirement)
    assert match is not None, requirement
    extras = frozenset(e.strip() for e in (match.group(2) or "").split(",") if e.strip())
    return re.sub(r"[-_.]+", "-", match.group(1)).lower(), extras


def _distribution_of(module: str, distributions: dict[str, list[str]]) -> set[str]:
    """The distributions that may provide ``module``: for a namespace package (llama_index)
    the one whose files hold that module's path."""
    from importlib.metadata import distribution

    top = module.split(".")[0]
    candidates = {re.sub(r"[-_.]+", "-", d).lower() for d in distributions.get(top, [])}
    if len(candidates) <= 1:
        return candidates
    path = module.replace(".", "/")
    return {
        name
        for name in candidates
        if any(str(f).startswith((path + "/", path + ".")) for f in distribution(name).files or ())
    }


def test_the_library_declares_exactly_the_distributions_it_imports() -> None:
    """pyproject.toml's dependencies (and extras) are the third-party distributions
    rag_plugin's code imports: none missing (an install would break) and none unused."""
    from importlib.metadata import packages_distributions

    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    declared = dict(_normalized(r) for r in project["dependencies"])
    optional = dict(
        _normalized(r) for group in project["optional-dependencies"].values() for r in group
    )
    # What a declared extra brings in its own distribution.
    provided_by_extra = {("psycopg", "pool"): "psycopg-pool"}
    brought = {
        dist for (name, extra), dist in provided_by_extra.items() if extra in declared.get(name, ())
    }
    distributions = packages_distributions()
    imported = set()
    for module in _imported_modules(PROJECT_ROOT / "rag_plugin"):
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top in {"rag_plugin", "__future__"}:
            continue
        found = _distribution_of(module, distributions)
        assert found, f"{module} is imported but no installed distribution provides it"
        imported |= found
    assert sorted(imported - set(declared) - set(optional) - brought) == []
    assert sorted(set(declared) - imported) == []


def _module_imports(path: Path, modules: set[str]) -> set[str]:
    """Which of ``modules`` the file ``path`` imports where a reader sees it: at module level,
    under ``TYPE_CHECKING`` included, a function's own imports left out. ``from package
    import name`` is an import of the module ``package.name`` when there is one, else of
    ``package``."""
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    module = f"{node.module}.{alias.name}"
                    found.add(module if module in modules else node.module)
            elif isinstance(node, ast.If | ast.Try | ast.With):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    return found & modules


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def strong(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                strong(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            strong(node)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    """No two modules of the library, the portal or the tenants app import each other, even
    through others or for type checking only (a cycle ties them into one unit to read,
    test and load)."""
    packages = {"rag_plugin", "portal", "tenants"}
    paths: dict[str, Path] = {}
    for package in sorted(packages):
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {name: _module_imports(path, set(paths)) - {name} for name, path in paths.items()}
    assert _cycles(graph) == []
