"""The near-entry index: every vocabulary entry under the strings left by deleting up to two
characters of its first :data:`PREFIX` characters (SymSpell's deletion keys of a prefix), so the
entries within two edits of a query word are found by a few index lookups instead of reading
the vocabulary.

Why it is exact: two strings ``a``, ``b`` within ``k`` edits (Levenshtein) have a common
subsequence ``s`` that each reaches by deleting at most ``k`` characters (a substitution is a
deletion on both sides, an insertion a deletion on the other side). Cut both to their first
``p`` characters, and let ``m_a``, ``m_b`` count the characters of ``s`` inside each cut. The
first ``min(m_a, m_b)`` characters of ``s`` are a subsequence of both cuts; ``a``'s cut
reaches it by deleting its characters outside ``s`` (at most ``k``) when ``m_a <= m_b``, and
otherwise by deleting at most ``p - m_b`` characters — ``b``'s cut is then ``p`` characters
long, and ``p - m_b`` are its own characters outside ``s``, again at most ``k``. So the
entries whose keys meet one of the query word's keys (its cut, at most ``k`` deletions) are a
superset of its close entries; rapidfuzz keeps the close ones. Keys are characters (code
points) in both Python and SQL.

A prefix of ten characters has 56 keys; the index holds ≈ 35 rows per vocabulary entry. Words
that share their first ten characters share keys, which is what lets a long query word's close
entries come from as few lookups as a short one's.

Upkeep is in the document's transaction and costs nothing for entries already known: keys
are added when an entry enters its vocabulary (its df was 0) and removed when it leaves.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import psycopg
from psycopg import sql

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

MAX_DEPTH = 2
"""Characters deleted at most: the fuzzy leg's and correction's maximum distance."""

PREFIX = 10
"""Characters of an entry (and of a query word) whose deletion keys are indexed (looked up).

Migration 11 indexed the entries of at most ten characters whole; migration 12 added the
longer ones under their first ten, so the keys of the entries already indexed did not change."""

VOCABULARIES = {
    "terms": ("vocabulary", "term", "term_deletes"),
    "words": ("word_vocabulary", "word", "word_deletes"),
}
"""Each vocabulary's table, key column and deletion-key table (fields of :class:`Tables`)."""


def deletion_keys(word: str, depth: int = MAX_DEPTH) -> set[str]:
    """Every string made from ``word`` by deleting at most ``depth`` characters."""
    keys = {word}
    frontier = {word}
    for _ in range(depth):
        frontier = {w[:i] + w[i + 1 :] for w in frontier for i in range(len(w))}
        keys |= frontier
    return keys


def entry_keys(word: str, depth: int = MAX_DEPTH) -> set[str]:
    """The keys an entry is indexed under, and a query word looked up by: the deletion keys of
    its first :data:`PREFIX` characters."""
    return deletion_keys(word[:PREFIX], depth)


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
