"""The package's surface: ``rag_plugin.__all__`` is true, and importing it loads nothing heavy."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rag_plugin
from tests.test_dependency_rules import python_output

STUB = Path(rag_plugin.__file__).with_suffix(".pyi")

HEAVY = ("llama_index", "psycopg", "psycopg_pool", "onnxruntime", "fastembed", "numpy", "lxml")

WHAT_AN_IMPORT_LOADS = f"""
import sys
import rag_plugin
import rag_plugin.exceptions
import rag_plugin.cli
print(",".join(sorted(name for name in {HEAVY!r} if name in sys.modules)))
"""


def _stub_all() -> list[str]:
    """The ``__all__`` the stub declares for type checkers."""
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{STUB} declares no __all__")


def test_every_public_name_resolves_and_the_stub_agrees() -> None:
    assert sorted(_stub_all()) == sorted(rag_plugin.__all__)
    missing = [name for name in rag_plugin.__all__ if getattr(rag_plugin, name, None) is None]
    assert missing == []
    assert set(rag_plugin.__all__) <= set(dir(rag_plugin))
    # A public name is the object its module defines, not a copy.
    from rag_plugin.stores.postgres import PostgresStore

    assert rag_plugin.PostgresStore is PostgresStore


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        getattr(rag_plugin, "NoSuchThing")  # noqa: B009


def test_importing_the_package_and_its_cli_loads_no_heavy_dependency() -> None:
    assert python_output(WHAT_AN_IMPORT_LOADS) == ""
