"""near_terms: every vocabulary entry within two edits of a query word, with its df.

Words are found by their deletion keys (of their first ten characters) at two edits or
fewer, by reading their whole length windows into rapidfuzz beyond; either way the answer
must hold every entry of the table that is close enough. The expected entries come from the
vocabulary tables themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from rapidfuzz.distance import Levenshtein

from rag_plugin.stores.base import CollectionInfo, DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres.correction import near_terms
from rag_plugin.stores.postgres.rows import CollectionRow, Tables

from ..store_contract import chunk_inputs

TEXTS = [
    "Straße école ÉCOLE ñu 10% a_b a%b back\\slash ka kb kc ab zz",
    "the quick brown fox jumps over the lazy dog internationalization",
    "international internal interval intern x y tkh tk kh the",
    "aaaaaaaaaa aaaaaaaab baaaaaaaaa straßen ecole écoles 100% ab_",
]

# One and two letters, short, six to ten letters (keys of the whole word), eleven and more
# (keys of the first ten), non-ASCII letters, and LIKE's and SQL's metacharacters.
QUERY_WORDS = [
    "x",
    "ka",
    "tkh",
    "écol",
    "10%",
    "a_b",
    "quikc",
    "strasse",
    "interval",
    "internatoinal",
    "internationalisation",
    "aaaaaaaaaa",
    "ñu",
    "back\\slsh",
]


@pytest.fixture
def collection(dsn: str, pg_schema: str) -> Iterator[tuple[CollectionInfo, CollectionRow]]:
    store = PostgresStore(dsn, schema=pg_schema)
    info = store.create_collection("docs", dimensions=2, embedding_model="m")
    _, chunks = chunk_inputs(TEXTS, [[1.0, 0.0]] * len(TEXTS))
    store.upsert_document(info, DocumentInput(source="a"), chunks)
    info = store.get_collection("docs")
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            sql.SQL("SELECT id FROM {} WHERE name = 'docs'").format(
                sql.Identifier(pg_schema, "rag_collections")
            )
        ).fetchone()
    assert found is not None
    yield info, CollectionRow(id=found[0], info=info, token_count=0)
    store.close()


def vocabulary(conn: psycopg.Connection[Any], schema: str, name: str) -> dict[str, int]:
    table, column = {"terms": ("rag_vocabulary", "term"), "words": ("rag_word_vocabulary", "word")}[
        name
    ]
    return dict(
        conn.execute(
            sql.SQL("SELECT {}, df FROM {}").format(
                sql.Identifier(column), sql.Identifier(schema, table)
            )
        ).fetchall()
    )


@pytest.mark.parametrize("name", ["words", "terms"])
def test_near_terms_finds_every_entry_within_two_edits_with_its_df(
    dsn: str, pg_schema: str, collection: tuple[CollectionInfo, CollectionRow], name: str
) -> None:
    _, row = collection
    tables = Tables(pg_schema)
    with psycopg.connect(dsn) as conn:
        entries = vocabulary(conn, pg_schema, name)
        everything: dict[str, int] = {}
        for word in QUERY_WORDS:
            expected = {
                entry: df for entry, df in entries.items() if Levenshtein.distance(word, entry) <= 2
            }
            everything.update(expected)
            got = near_terms(conn, tables, row, [word], 2, name)
            assert expected.items() <= got.items(), word
            assert got.items() <= entries.items(), word  # a superset, but only of real entries
        # All words at once: one statement.
        assert everything.items() <= near_terms(conn, tables, row, QUERY_WORDS, 2, name).items()
        assert near_terms(conn, tables, row, [], 2, name) == {}
    # The queries do reach entries both ways, non-ASCII ones and metacharacters included.
    if name == "words":
        assert {"straße", "école", "ñu", "10%", "a_b", "internationalization"} <= everything.keys()
    else:
        assert len(everything) > 10


def test_near_terms_with_distance_zero_or_one(
    dsn: str, pg_schema: str, collection: tuple[CollectionInfo, CollectionRow]
) -> None:
    _, row = collection
    with psycopg.connect(dsn) as conn:
        entries = vocabulary(conn, pg_schema, "words")
        for distance in (0, 1):
            for word in QUERY_WORDS:
                expected = {
                    entry: df
                    for entry, df in entries.items()
                    if Levenshtein.distance(word, entry) <= distance
                }
                got = near_terms(conn, Tables(pg_schema), row, [word], distance, "words")
                assert expected.items() <= got.items(), (distance, word)


def test_near_terms_beyond_the_index_depth_reads_length_windows(
    dsn: str, pg_schema: str, collection: tuple[CollectionInfo, CollectionRow]
) -> None:
    _, row = collection
    with psycopg.connect(dsn) as conn:
        entries = vocabulary(conn, pg_schema, "words")
        for word in QUERY_WORDS:
            expected = {
                entry: df for entry, df in entries.items() if Levenshtein.distance(word, entry) <= 3
            }
            got = near_terms(conn, Tables(pg_schema), row, [word], 3, "words")
            assert got == expected, word
