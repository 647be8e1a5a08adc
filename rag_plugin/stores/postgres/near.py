"""The near-entry index: every vocabulary entry under its deletion keys
(:mod:`rag_plugin.lexical.near_keys`: the strings left by deleting up to two characters of its
first :data:`PREFIX` characters), so the entries within two edits of a query word are found by
a few index lookups instead of reading the vocabulary. The index holds ≈ 35 rows per
vocabulary entry.

Upkeep is in the document's transaction and costs nothing for entries already known: keys
are added when an entry enters its vocabulary (its df was 0) and removed when it leaves.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.lexical.near_keys import MAX_DEPTH, PREFIX, deletion_keys, entry_keys
from rag_plugin.stores.postgres.rows import Tables

__all__ = [
    "MAX_DEPTH",
    "PREFIX",
    "VOCABULARIES",
    "add_entries",
    "backfill_keys",
    "backfill_long_keys",
    "deletion_keys",
    "entry_keys",
    "keys_sql",
]

VOCABULARIES = {
    "terms": ("vocabulary", "term", "term_deletes"),
    "words": ("word_vocabulary", "word", "word_deletes"),
}
"""Each vocabulary's table, key column and deletion-key table (fields of :class:`Tables`)."""


_KEYS = (
    "SELECT {entry} AS key"
    " UNION SELECT overlay({entry} placing '' from i for 1)"
    "  FROM generate_series(1, char_length({entry})) AS i"
    " UNION SELECT overlay(overlay({entry} placing '' from j for 1) placing '' from i for 1)"
    "  FROM generate_series(1, char_length({entry})) AS i,"
    "  generate_series(i + 1, char_length({entry})) AS j"
)


def keys_sql(entry: str) -> sql.Composed:
    """SQL giving :func:`entry_keys` (depth 2) of the text column ``entry`` as rows ``key``."""
    return sql.SQL(_KEYS).format(entry=sql.SQL("left({}, {})").format(sql.SQL(entry), PREFIX))


# Raise each entry's df (inserting new entries), and index the keys of those that are new: an
# entry whose df is now exactly its increment was not there before (an entry at df 0 is
# never stored).
_ADD = (
    "WITH input AS (SELECT * FROM unnest(%(entries)b::text[], %(counts)b::integer[])"
    "  AS u(entry, n)),"
    " raised AS (INSERT INTO {entry_table} AS v (collection_id, {key}, df)"
    "  SELECT %(coll)s, entry, n FROM input"
    "  ON CONFLICT (collection_id, {key}) DO UPDATE SET df = v.df + EXCLUDED.df"
    "  RETURNING v.{key} AS entry, v.df),"
    " fresh AS (SELECT r.entry FROM raised r JOIN input i ON i.entry = r.entry"
    "  WHERE r.df = i.n)"
    " INSERT INTO {deletes} (collection_id, key, entry)"
    " SELECT %(coll)s, k.key, f.entry FROM fresh f CROSS JOIN LATERAL ({keys}) AS k"
    # A key row left behind (a process of an older version dropped a long entry by its
    # whole-word keys) is the row this would write: keep it.
    " ON CONFLICT DO NOTHING"
)


def add_entries(
    conn: psycopg.Connection[Any],
    tables: Tables,
    vocabulary: str,
    collection_id: int,
    counts: Counter[str],
) -> None:
    """Raise the df of ``counts``' entries in ``vocabulary`` (``"terms"`` or ``"words"``) and
    index the keys of the new ones; reads nothing back."""
    if not counts:
        return
    table, key, deletes = VOCABULARIES[vocabulary]
    entries = sorted(counts)
    conn.execute(
        tables(
            _ADD,
            entry_table=tables.table(table),
            key=sql.Identifier(key),
            deletes=tables.table(deletes),
            keys=keys_sql("f.entry"),
        ),
        {
            "coll": collection_id,
            "entries": entries,
            "counts": [counts[entry] for entry in entries],
        },
    )


def backfill_keys(conn: psycopg.Connection[Any], schema: str) -> None:
    """Migration 11: the deletion keys of every entry of at most :data:`PREFIX` characters of
    both vocabularies."""
    _backfill(conn, schema, "<=")


def backfill_long_keys(conn: psycopg.Connection[Any], schema: str) -> None:
    """Migration 12: the prefix keys of the longer entries of both vocabularies."""
    _backfill(conn, schema, ">")


def _backfill(conn: psycopg.Connection[Any], schema: str, comparison: str) -> None:
    tables = Tables(schema)
    for table, key, deletes in VOCABULARIES.values():
        conn.execute(
            sql.SQL(
                "INSERT INTO {deletes} (collection_id, key, entry)"
                " SELECT v.collection_id, k.key, v.{key} FROM {entry_table} v"
                " CROSS JOIN LATERAL ({keys}) AS k"
                " WHERE char_length(v.{key}) {comparison} %s"
            ).format(
                deletes=tables.table(deletes),
                key=sql.Identifier(key),
                entry_table=tables.table(table),
                keys=keys_sql(f"v.{key}"),
                comparison=sql.SQL(comparison),
            ),
            (PREFIX,),
        )
