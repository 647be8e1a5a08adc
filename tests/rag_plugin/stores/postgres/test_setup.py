"""A PostgresStore on a bare database: it creates pgvector's extension itself, needs no other,
and a role that may not create it is told the one statement to run."""

from __future__ import annotations

import ast
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from rag_plugin.exceptions import ConfigurationError
from rag_plugin.stores.base import DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres.schema import SCHEMA_VERSION

from ..store_contract import chunk_inputs


@pytest.fixture
def bare_database(dsn: str) -> Iterator[str]:
    """A new database with no extension at all; dropped afterwards."""
    name = f"bare_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield make_conninfo(dsn, dbname=name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def extensions(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {name for (name,) in conn.execute("SELECT extname FROM pg_extension")}


def test_a_store_on_a_bare_database_creates_the_vector_extension(bare_database: str) -> None:
    assert "vector" not in extensions(bare_database)
    store = PostgresStore(bare_database, schema="docs_store")
    try:
        assert store.ensure_schema() == SCHEMA_VERSION
        collection = store.create_collection("docs", dimensions=2, embedding_model="m")
        _, chunks = chunk_inputs(["internationalization of herons"], [[1.0, 0.0]])
        store.upsert_document(collection, DocumentInput(source="a"), chunks)
        assert len(store.fuzzy(collection, "internationalisation", 5)) == 1
        assert len(store.dense(collection, [1.0, 0.0], 5)) == 1
    finally:
        store.close()
    assert extensions(bare_database) == {"plpgsql", "vector"}  # no pg_trgm needed


def test_a_role_that_cannot_create_the_extension_is_told_the_statement(
    bare_database: str,
) -> None:
    role = f"reader_{uuid.uuid4().hex[:8]}"
    dbname = conninfo_to_dict(bare_database)["dbname"]
    with psycopg.connect(bare_database, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("REVOKE CREATE ON DATABASE {} FROM PUBLIC").format(sql.Identifier(dbname))
        )
        conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(role)))
    try:
        # The store sets its schema up as it opens.
        with pytest.raises(ConfigurationError, match="CREATE EXTENSION IF NOT EXISTS vector"):
            PostgresStore(make_conninfo(bare_database, user=role), schema="docs_store")
        assert "vector" not in extensions(bare_database)
    finally:
        with psycopg.connect(bare_database, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_the_migrations_are_frozen() -> None:
    """An applied migration must not change when the store's code does: the migrations
    package imports nothing of rag_plugin but itself (its SQL and its Python steps are
    copies)."""
    from rag_plugin.stores.postgres import migrations

    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for path in sorted(Path(migrations.__file__).parent.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    own = f"{migrations.__name__}."
    outside = [n for n in imported if n and n.startswith("rag_plugin") and not n.startswith(own)]
    assert sorted(outside) == []
