"""The store's tables: applying the migrations, the ``vector`` extension, HNSW indexes.

``ensure_schema`` is idempotent and safe to run from many processes at once: it takes a
transaction-scoped advisory lock per schema, reads ``rag_schema_version`` and applies, in
order and in the same transaction, every migration newer than the recorded version
(the ``migrations`` package holds them: a later change appends a :class:`Migration`, never
edits an applied one, so existing data is migrated in place). HNSW indexes are made on
demand, one per (dimension, metric), by ``ensure_vector_index``. ``drop_tables`` drops every
table of the store.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.exceptions import ConfigurationError
from rag_plugin.stores.postgres.migrations import MIGRATIONS, SCHEMA_VERSION, Migration
from rag_plugin.stores.postgres.rows import TABLE_NAMES, Tables
from rag_plugin.vectors import DistanceMetric

__all__ = [
    "HNSW_MAX_DIMENSIONS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Migration",
    "current_version",
    "drop_tables",
    "ensure_schema",
    "ensure_vector_extension",
    "ensure_vector_index",
    "vector_index_name",
]

HNSW_MAX_DIMENSIONS = 2000
"""pgvector indexes ``vector`` columns of at most 2,000 dimensions; larger ones search exactly."""

OPERATOR_CLASSES = {
    DistanceMetric.COSINE: "vector_cosine_ops",
    DistanceMetric.L2: "vector_l2_ops",
    DistanceMetric.INNER_PRODUCT: "vector_ip_ops",
}


def _render(statement: str, schema: str) -> sql.Composed:
    # Only the schema identifier is substituted; the DDL text itself is a constant.
    return sql.SQL(statement.strip()).format(schema=sql.Identifier(schema))


def _lock(conn: psycopg.Connection[Any], schema: str) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"rag_plugin.schema:{schema}",))


def current_version(conn: psycopg.Connection[Any], schema: str) -> int:
    """The schema's recorded version; 0 when the store's tables do not exist yet."""
    exists = conn.execute(
        "SELECT to_regclass(format('%%I.rag_schema_version', %s::text)) IS NOT NULL", (schema,)
    ).fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute(
        sql.SQL("SELECT coalesce(max(version), 0) FROM {}").format(
            sql.Identifier(schema, "rag_schema_version")
        )
    ).fetchone()
    return int(row[0]) if row else 0


_CREATE_VECTOR = "CREATE EXTENSION IF NOT EXISTS vector SCHEMA public"


def ensure_vector_extension(conn: psycopg.Connection[Any]) -> None:
    """Create pgvector's ``vector`` extension in ``public`` if the database lacks it.

    As stock PGVectorStore does; a role that may not create it gets an error naming the
    statement a database owner or superuser runs once.
    """
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        with conn.transaction():
            conn.execute(_CREATE_VECTOR)
    except psycopg.Error as exc:
        raise ConfigurationError(
            f"The database has no pgvector extension and this role cannot create it "
            f"({exc.diag.message_primary or type(exc).__name__}); have a database owner or "
            f"superuser run once: {_CREATE_VECTOR};"
        ) from exc


def ensure_schema(
    conn: psycopg.Connection[Any],
    schema: str,
    migrations: tuple[Migration, ...] = MIGRATIONS,
) -> int:
    """Create or migrate the store's tables in ``schema``; return the version now in place.

    Runs in one transaction (a savepoint inside a caller's transaction), so a failing
    migration leaves the previous version intact.
    """
    with conn.transaction():
        _lock(conn, schema)
        ensure_vector_extension(conn)
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (version integer PRIMARY KEY, "
                "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            ).format(sql.Identifier(schema, "rag_schema_version"))
        )
        version = current_version(conn, schema)
        latest = migrations[-1].version if migrations else 0
        if version > latest:
            raise ConfigurationError(
                f"Schema {schema!r} is at version {version}, newer than this code's {latest}; "
                "upgrade rag_plugin before using it."
            )
        for migration in sorted(migrations, key=lambda m: m.version):
            if migration.version <= version:
                continue
            for step in migration.statements:
                if isinstance(step, str):
                    conn.execute(_render(step, schema))
                else:
                    step(conn, schema)
            conn.execute(
                sql.SQL("INSERT INTO {} (version, description) VALUES (%s, %s)").format(
                    sql.Identifier(schema, "rag_schema_version")
                ),
                (migration.version, migration.description),
            )
            version = migration.version
        return version


def drop_tables(conn: psycopg.Connection[Any], schema: str) -> int:
    """Drop the store's tables in ``schema`` (the schema and whatever else it holds stay);
    return how many collections they held, 0 if the schema holds none of them or is gone."""
    tables = Tables(schema)
    found = conn.execute(
        "SELECT to_regclass(%s)", (tables.table("collections").as_string(conn),)
    ).fetchone()
    if found is None or found[0] is None:
        return 0
    counted = conn.execute(tables("SELECT count(*) FROM {collections}")).fetchone()
    names = [f"rag_{name}" for name in TABLE_NAMES] + ["rag_schema_version"]
    conn.execute(
        sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(
            sql.SQL(", ").join(sql.Identifier(schema, name) for name in names)
        )
    )
    return int(counted[0]) if counted else 0


def vector_index_name(dimensions: int, metric: DistanceMetric) -> str:
    """The name of the partial HNSW index serving one (dimension, metric)."""
    return f"rag_chunks_hnsw_{metric.value}_{int(dimensions)}"


def ensure_vector_index(
    conn: psycopg.Connection[Any],
    schema: str,
    dimensions: int,
    metric: DistanceMetric,
    *,
    m: int,
    ef_construction: int,
) -> bool:
    """Create the partial HNSW index for (dimension, metric) if missing; False if impossible.

    The index covers ``embedding::vector(d)`` for the rows of that dimension and metric only,
    so it has a fixed dimension although the column does not; queries must use the same
    expression and predicate (see ``dense.py``) for the planner to pick it.
    """
    if dimensions > HNSW_MAX_DIMENSIONS:
        return False
    name = vector_index_name(dimensions, metric)
    # Checked first because CREATE INDEX IF NOT EXISTS locks the table before it looks, which
    # would make every new collection wait for the ingests in flight.
    exists = conn.execute(
        "SELECT to_regclass(format('%%I.%%I', %s::text, %s::text)) IS NOT NULL", (schema, name)
    ).fetchone()
    if exists and exists[0]:
        return True
    with conn.transaction():
        _lock(conn, schema)
        conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw "
                "((embedding::vector({dims})) {ops}) WITH (m = {m}, ef_construction = {efc}) "
                "WHERE dimensions = {dims} AND metric = {metric}"
            ).format(
                name=sql.Identifier(name),
                table=sql.Identifier(schema, "rag_chunks"),
                dims=sql.Literal(int(dimensions)),
                ops=sql.SQL(OPERATOR_CLASSES[metric]),
                m=sql.Literal(int(m)),
                efc=sql.Literal(int(ef_construction)),
                metric=sql.Literal(metric.value),
            )
        )
    return True
