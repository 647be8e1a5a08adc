"""PostgresStore's schema versioning: idempotent setup, later migrations, newer schemas, names."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from rag_plugin.exceptions import ConfigurationError, InvalidInputError
from rag_plugin.stores.base import DocumentInput
from rag_plugin.stores.postgres import SCHEMA_VERSION, PostgresStore, validate_schema_name
from rag_plugin.stores.postgres.schema import MIGRATIONS, Migration, ensure_schema

from ..store_contract import chunk_inputs


def test_ensure_schema_is_idempotent_and_records_the_version(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    assert store.ensure_schema() == SCHEMA_VERSION
    assert PostgresStore(dsn, schema=pg_schema).ensure_schema() == SCHEMA_VERSION
    with psycopg.connect(dsn) as conn:
        versions = conn.execute(
            sql.SQL("SELECT version FROM {} ORDER BY version").format(
                sql.Identifier(pg_schema, "rag_schema_version")
            )
        ).fetchall()
    assert versions == [(m.version,) for m in MIGRATIONS]


def test_a_later_migration_changes_existing_data_in_place(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    _, chunks = chunk_inputs(["kept through the migration"], [[1.0, 0.0]])
    document = store.upsert_document(collection, DocumentInput(source="a"), chunks).id
    later = Migration(
        SCHEMA_VERSION + 1,
        "documents get a language",
        (
            "ALTER TABLE {schema}.rag_documents ADD COLUMN language text",
            "UPDATE {schema}.rag_documents SET language = 'en'",
        ),
    )
    with psycopg.connect(dsn) as conn:
        assert ensure_schema(conn, pg_schema, (*MIGRATIONS, later)) == SCHEMA_VERSION + 1
        assert ensure_schema(conn, pg_schema, (*MIGRATIONS, later)) == SCHEMA_VERSION + 1
        rows = conn.execute(
            sql.SQL("SELECT id, language FROM {}").format(
                sql.Identifier(pg_schema, "rag_documents")
            )
        ).fetchall()
    assert rows == [(document, "en")]
    assert [h.chunk.document_id for h in store.bm25(collection, "migration", 5)] == [document]


def test_a_schema_newer_than_the_code_is_refused(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            sql.SQL("INSERT INTO {} (version, description) VALUES (%s, 'from the future')").format(
                sql.Identifier(pg_schema, "rag_schema_version")
            ),
            (SCHEMA_VERSION + 5,),
        )
        conn.commit()
    with pytest.raises(ConfigurationError, match=f"version {SCHEMA_VERSION + 5}"):
        store.ensure_schema()


@pytest.mark.parametrize("name", ["", "pg_catalog", "x; DROP SCHEMA public", 'a"b', "s" * 64, "é"])
def test_invalid_schema_names_are_rejected(name: str) -> None:
    with pytest.raises(InvalidInputError, match="Schema name"):
        validate_schema_name(name)
    with pytest.raises(InvalidInputError, match="Schema name"):
        PostgresStore("postgresql://nowhere.invalid/db", schema=name)
