"""One migration of the store's schema: its version, what it does, and its steps (SQL or Python)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

__all__ = ["Migration", "Step"]


Step = str | Callable[[psycopg.Connection[Any], str], None]
"""A migration step: DDL/DML using ``{schema}``, or a function of (connection, schema)."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of the schema's history, run in order inside ``ensure_schema``'s transaction.

    A step is SQL with ``{schema}`` for the schema, or a Python function called with the
    connection and the schema name (for data that only Python can compute, such as Python's
    own lowercasing and splitting of chunk texts).
    """

    version: int
    description: str
    statements: tuple[Step, ...]
