"""The frozen steps of the vocabularies' near-entry lookups: trigram and covering length
indexes, then deletion keys per vocabulary, then one index of keys for the schema
(migrations 8, 9, 11, 12 and 16)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.stores.postgres.migrations.migration import Step

__all__ = ["DELETION_KEYS", "LENGTH_COVERING", "LONG_KEYS", "SHARED_NEAR_KEYS", "TRIGRAMS"]


# Typo correction and the fuzzy leg looked up the vocabulary entries that contain one piece of
# a query word through trigram indexes (pg_trgm) until migration 12 replaced them by deletion
# keys and dropped them. Nothing after migration 11 reads them, and every migration runs in
# one transaction up to the latest, so on a database without pg_trgm this step builds nothing:
# the store needs no extension but ``vector``.
def _trigram_indexes(conn: psycopg.Connection[Any], schema: str) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'").fetchone() is None:
        return
    for table, column in (("rag_vocabulary", "term"), ("rag_word_vocabulary", "word")):
        conn.execute(
            sql.SQL("CREATE INDEX {} ON {} USING gin ({} gin_trgm_ops)").format(
                sql.Identifier(f"{table}_trigrams"),
                sql.Identifier(schema, table),
                sql.Identifier(column),
            )
        )


TRIGRAMS: tuple[Step, ...] = (_trigram_indexes,)

# A short query word's near entries are found by reading its whole length window and checking
# each entry's distance in Python (correction.near_terms): with the entries in the length index
# that read touches no table rows. The df stays out of the index, so df updates stay HOT.
LENGTH_COVERING = tuple(
    statement
    for table, column in (("rag_vocabulary", "term"), ("rag_word_vocabulary", "word"))
    for statement in (
        f"DROP INDEX {{schema}}.{table}_length",
        f"""
        CREATE INDEX {table}_length ON {{schema}}.{table}
            (collection_id, char_length({column})) INCLUDE ({column})
        """,
    )
)

# The deletion keys of both vocabularies' entries of at most ten characters (migration 11)
# and of the longer ones (12): near.py's keys as they were then, frozen here, so these
# migrations do not change when near.py does (the keys of a long entry are those of its
# first ten characters).
_FROZEN_ENTRY_KEYS = """
    INSERT INTO {deletes} (collection_id, key, entry)
    SELECT v.collection_id, k.key, v.{column} FROM {vocabulary} v
    CROSS JOIN LATERAL (
        SELECT left(v.{column}, 10) AS key
        UNION SELECT overlay(left(v.{column}, 10) placing '' from i for 1)
          FROM generate_series(1, char_length(left(v.{column}, 10))) AS i
        UNION SELECT overlay(overlay(left(v.{column}, 10) placing '' from j for 1)
          placing '' from i for 1)
          FROM generate_series(1, char_length(left(v.{column}, 10))) AS i,
          generate_series(i + 1, char_length(left(v.{column}, 10))) AS j
    ) AS k
    WHERE char_length(v.{column}) {comparison} 10
"""


def _entry_keys(comparison: str) -> Step:
    """The step that keys both vocabularies' entries whose length is ``comparison`` ten."""

    def backfill(conn: psycopg.Connection[Any], schema: str) -> None:
        for kind, vocabulary, column in (
            ("term", "vocabulary", "term"),
            ("word", "word_vocabulary", "word"),
        ):
            conn.execute(
                sql.SQL(_FROZEN_ENTRY_KEYS).format(
                    deletes=sql.Identifier(schema, f"rag_{kind}_deletes"),
                    vocabulary=sql.Identifier(schema, f"rag_{vocabulary}"),
                    column=sql.Identifier(column),
                    comparison=sql.SQL(comparison),
                )
            )

    return backfill


# The near-entry index of both vocabularies (near.py): a short query word's close entries from
# its deletion keys instead of its whole length window.
DELETION_KEYS: tuple[Step, ...] = (
    *(
        f"""
        CREATE TABLE {{schema}}.rag_{kind}_deletes (
            collection_id bigint NOT NULL,
            key text COLLATE "C" NOT NULL,
            entry text COLLATE "C" NOT NULL,
            PRIMARY KEY (collection_id, key, entry)
        )
        """
        for kind in ("term", "word")
    ),
    _entry_keys("<="),
)

# Every entry in the near-entry index, a long one under the keys of its first ten characters
# (near.py): a long query word's close entries by the same key lookups as a short one's,
# instead of its partition pieces through the trigram indexes, which go (at 100k chunks they
# fetched ≈ 3.8k entries a query to keep a few, 14 ms of the slowest fuzzy queries).
LONG_KEYS: tuple[Step, ...] = (
    _entry_keys(">"),
    "DROP INDEX IF EXISTS {schema}.rag_vocabulary_trigrams, {schema}.rag_word_vocabulary_trigrams",
)

# One near-entry index for the schema instead of one per collection and vocabulary (near.py):
# an entry's keys depend on its text alone, so a collection whose words the schema knows
# writes none. A fresh collection of 97 SciFact chunks wrote 233k key rows, 4.3 of its 4.8 s
# of store write; every user's private collection wrote them again.
SHARED_NEAR_KEYS: tuple[Step, ...] = (
    """
    CREATE TABLE {schema}.rag_near_keys (
        key text COLLATE "C" NOT NULL,
        entry text COLLATE "C" NOT NULL,
        PRIMARY KEY (key, entry)
    )
    """,
    """
    INSERT INTO {schema}.rag_near_keys (key, entry)
    SELECT key, entry FROM {schema}.rag_term_deletes
    UNION SELECT key, entry FROM {schema}.rag_word_deletes
    """,
    "DROP TABLE {schema}.rag_term_deletes, {schema}.rag_word_deletes",
)
