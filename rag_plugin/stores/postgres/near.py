"""The near-entry index: every vocabulary entry under the strings left by deleting up to two
of its characters (SymSpell's deletion keys), so the entries within two edits of a short
query word are found by a few index lookups instead of reading its whole length window.

Why it is exact: if two strings are within ``k`` edits (Levenshtein), deleting at most ``k``
characters from each gives a common string — a substitution is a deletion on both sides, an
insertion a deletion on the other side. So the entries sharing a key with one of the query
word's keys (at most ``k`` deletions) are a superset of its close entries; rapidfuzz keeps
the close ones. Keys are characters (code points) in both Python and SQL.

Only entries of at most :data:`MAX_LENGTH` characters are indexed: the query words this index
serves are those the trigram index cannot (``correction._trigram_served``: eight characters
or fewer at two edits), and their close entries are at most two characters longer. A word of
eight characters has 37 keys; the index holds ≈ 30 rows per vocabulary entry.

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
    "MAX_LENGTH",
    "VOCABULARIES",
    "add_entries",
    "backfill_keys",
    "deletion_keys",
    "keys_sql",
]

MAX_DEPTH = 2
"""Characters deleted at most: the fuzzy leg's and correction's maximum distance."""

MAX_LENGTH = 10
"""The longest entry indexed: eight-character query words plus two edits."""

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


_KEYS = (
    "SELECT {entry} AS key"
    " UNION SELECT overlay({entry} placing '' from i for 1)"
    "  FROM generate_series(1, char_length({entry})) AS i"
    " UNION SELECT overlay(overlay({entry} placing '' from j for 1) placing '' from i for 1)"
    "  FROM generate_series(1, char_length({entry})) AS i,"
    "  generate_series(i + 1, char_length({entry})) AS j"
)


def keys_sql(entry: str) -> sql.Composed:
    """SQL giving :func:`deletion_keys` (depth 2) of the text column ``entry`` as rows ``key``."""
    return sql.SQL(_KEYS).format(entry=sql.SQL(entry))


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
    "  WHERE r.df = i.n AND char_length(r.entry) <= %(max_length)s)"
    " INSERT INTO {deletes} (collection_id, key, entry)"
    " SELECT %(coll)s, k.key, f.entry FROM fresh f CROSS JOIN LATERAL ({keys}) AS k"
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
            "max_length": MAX_LENGTH,
        },
    )


def backfill_keys(conn: psycopg.Connection[Any], schema: str) -> None:
    """Migration step: the deletion keys of every entry of both vocabularies."""
    tables = Tables(schema)
    for table, key, deletes in VOCABULARIES.values():
        conn.execute(
            sql.SQL(
                "INSERT INTO {deletes} (collection_id, key, entry)"
                " SELECT v.collection_id, k.key, v.{key} FROM {entry_table} v"
                " CROSS JOIN LATERAL ({keys}) AS k"
                " WHERE char_length(v.{key}) <= %s"
            ).format(
                deletes=tables.table(deletes),
                key=sql.Identifier(key),
                entry_table=tables.table(table),
                keys=keys_sql(f"v.{key}"),
            ),
            (MAX_LENGTH,),
        )
