"""Connections to one schema: a pool we own, a pool we are lent, or one lent connection."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeAlias

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from rag_plugin.exceptions import InvalidInputError, RagError, StoreError

__all__ = ["ConnectionSource", "Database", "validate_schema_name"]

ConnectionSource: TypeAlias = "str | ConnectionPool[Any] | psycopg.Connection[Any]"
"""A DSN (the store opens and owns a pool), a ``ConnectionPool`` or one ``Connection``."""

# PostgreSQL's own identifier rule minus the ``pg_`` prefix it reserves (as django-tenants).
_SCHEMA_NAME = re.compile(r"(?!pg_)[A-Za-z_][A-Za-z0-9_]{0,62}")


def validate_schema_name(name: str) -> str:
    """Return ``name`` if it can name a schema, else raise :class:`InvalidInputError`."""
    if not isinstance(name, str) or _SCHEMA_NAME.fullmatch(name) is None:
        raise InvalidInputError(
            f"Schema name {name!r} is invalid; use 1-63 ASCII letters, digits or underscores, "
            "starting with a letter or underscore and not with 'pg_'."
        )
    return name


class Database:
    """Hands out transactions whose ``search_path`` is ``<schema>, public``.

    The schema comes first so unqualified names resolve to the tenant's tables; ``public``
    follows because the ``vector`` and ``pg_trgm`` types and operators live there. The store
    still qualifies its own tables, so a caller's search_path can never redirect them.
    """

    def __init__(
        self,
        source: ConnectionSource,
        schema: str,
        *,
        min_size: int = 1,
        max_size: int = 4,
    ) -> None:
        self.schema = validate_schema_name(schema)
        self._search_path = sql.SQL("SET {scope} search_path TO {schema}, public")
        self._pool: ConnectionPool[Any] | None = None
        self._connection: psycopg.Connection[Any] | None = None
        self._lock = threading.RLock()
        self._owns_pool = False
        if isinstance(source, str):
            self._pool = ConnectionPool(
                source,
                min_size=min_size,
                max_size=max_size,
                kwargs={"autocommit": True},
                configure=self._configure,
                open=True,
                name=f"rag_plugin:{schema}",
            )
            self._owns_pool = True
        elif isinstance(source, ConnectionPool):
            self._pool = source
        elif isinstance(source, psycopg.Connection):
            self._connection = source
        else:
            raise InvalidInputError(
                f"Expected a DSN string, a psycopg_pool.ConnectionPool or a psycopg.Connection, "
                f"got {type(source).__name__}."
            )

    @property
    def concurrent(self) -> bool:
        """Whether two transactions can run at once (a pool of two or more connections)."""
        return self._pool is not None and self._pool.max_size >= 2

    def table(self, name: str) -> sql.Identifier:
        """The schema-qualified identifier of one of the store's tables."""
        return sql.Identifier(self.schema, name)

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        # A pool we own serves only this schema, so the path is set once per connection.
        conn.execute(self._statement("SESSION"))

    def _path_value(self, conn: psycopg.Connection[Any]) -> str:
        return sql.Identifier(self.schema).as_string(conn) + ", public"

    def _statement(self, scope: str) -> sql.Composed:
        return self._search_path.format(scope=sql.SQL(scope), schema=sql.Identifier(self.schema))

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """One transaction (a savepoint inside a caller's transaction); errors → StoreError."""
        try:
            with self._connect() as conn, conn.transaction():
                if self._owns_pool:
                    yield conn
                    return
                # A lent connection serves other schemas too, perhaps inside the lender's own
                # transaction (where SET LOCAL would outlive ours): set the path, then put the
                # lender's back. On an error the savepoint's rollback restores it.
                row = conn.execute(
                    "SELECT current_setting('search_path'), set_config('search_path', %s, true)",
                    (self._path_value(conn),),
                ).fetchone()
                yield conn
                if row is not None:
                    conn.execute("SELECT set_config('search_path', %s, true)", (row[0],))
        except RagError:
            raise
        except psycopg.Error as exc:
            raise StoreError(f"database error in schema {self.schema!r}: {exc}") from exc

    @contextmanager
    def _connect(self) -> Iterator[psycopg.Connection[Any]]:
        if self._pool is not None:
            with self._pool.connection() as conn:
                yield conn
            return
        if self._connection is None:
            raise StoreError(f"the store for schema {self.schema!r} has been closed")
        # One lent connection cannot run two transactions at once: callers take turns.
        with self._lock:
            yield self._connection

    def close(self) -> None:
        """Close the pool if this object opened it; lent pools and connections stay open."""
        if self._owns_pool and self._pool is not None:
            self._pool.close()
        self._pool = None
        self._connection = None
