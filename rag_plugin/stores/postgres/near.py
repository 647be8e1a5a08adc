"""The near-entry index: every vocabulary entry under its deletion keys
(:mod:`rag_plugin.lexical.near_keys`: the strings left by deleting up to two characters of its
first :data:`PREFIX` characters), so the entries within two edits of a query word are found by
a few index lookups instead of reading the vocabulary. The index holds ≈ 35 rows per entry.

The keys are a function of the entry's text alone, so one table (``rag_near_keys``) serves
every collection of the schema and both vocabularies: a lookup joins the keys' entries with
the collection's vocabulary, which says which of them it holds. An entry is indexed once,
when it first enters a vocabulary of the schema; a collection whose words are already known
(every user's private collection of the same language) writes no keys at all. Keys are never
removed when an entry leaves a vocabulary (another may hold it): an entry that no vocabulary
holds any more is found by a lookup and dropped by the join. :func:`prune_keys` removes them.

Upkeep is in the document's transaction, as one statement for both vocabularies whose keys
go in in (key, entry) order: two writers of new entries (to different collections; one
collection's writers take turns) then wait for each other at most once, never in a circle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.lexical.near_keys import MAX_DEPTH, PREFIX, deletion_keys, entry_keys
from rag_plugin.stores.postgres import arrays
from rag_plugin.stores.postgres.rows import Tables

__all__ = [
    "MAX_DEPTH",
    "PREFIX",
    "VOCABULARIES",
    "add_entries",
    "deletion_keys",
    "drop_collection_keys",
    "entry_keys",
    "keys_sql",
    "prune_keys",
]

VOCABULARIES = {
    "terms": ("vocabulary", "term"),
    "words": ("word_vocabulary", "word"),
}
"""Each vocabulary's table (a field of :class:`Tables`) and key column."""


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


# Raise each entry's df in both vocabularies, insert the entries new to them, and index the
# keys of those new entries the schema has not indexed yet (an indexed entry has its own
# prefix among its keys). The collection's writers take turns on its row lock (writes.py), so
# an UPDATE and an INSERT of the rest need no ON CONFLICT: the speculative insertion of an
# upsert cost ~20 % more (12.6 against 10.1 ms for 10 SciFact abstracts' ~1,700 entries).
_ADD = (
    "WITH term_input AS (SELECT * FROM unnest(%(terms)b::text[], %(term_counts)b::integer[])"
    "  AS u(entry, n)),"
    " terms_raised AS (UPDATE {vocabulary} v SET df = v.df + i.n FROM term_input i"
    "  WHERE v.collection_id = %(coll)s AND v.term = i.entry RETURNING v.term AS entry),"
    " terms_added AS (INSERT INTO {vocabulary} (collection_id, term, df)"
    "  SELECT %(coll)s, i.entry, i.n FROM term_input i"
    "  WHERE NOT EXISTS (SELECT FROM terms_raised r WHERE r.entry = i.entry)"
    "  RETURNING term AS entry),"
    " word_input AS (SELECT * FROM unnest(%(words)b::text[], %(word_counts)b::integer[])"
    "  AS u(entry, n)),"
    " words_raised AS (UPDATE {word_vocabulary} v SET df = v.df + i.n FROM word_input i"
    "  WHERE v.collection_id = %(coll)s AND v.word = i.entry RETURNING v.word AS entry),"
    " words_added AS (INSERT INTO {word_vocabulary} (collection_id, word, df)"
    "  SELECT %(coll)s, i.entry, i.n FROM word_input i"
    "  WHERE NOT EXISTS (SELECT FROM words_raised r WHERE r.entry = i.entry)"
    "  RETURNING word AS entry),"
    " fresh AS (SELECT entry FROM terms_added UNION SELECT entry FROM words_added)"
    " INSERT INTO {near_keys} (key, entry)"
    " SELECT k.key, f.entry FROM fresh f CROSS JOIN LATERAL ({keys}) AS k"
    " WHERE NOT EXISTS (SELECT FROM {near_keys} n"
    "  WHERE n.key = left(f.entry, {prefix}) AND n.entry = f.entry)"
    " ORDER BY 1, 2"
    # Another writer's committed (or, after a wait, just committed) rows: keep them.
    " ON CONFLICT DO NOTHING"
)


def add_entries(
    conn: psycopg.Connection[Any],
    tables: Tables,
    collection_id: int,
    terms: Mapping[str, int],
    words: Mapping[str, int],
) -> None:
    """Raise the df of ``terms``' and ``words``' entries in the collection's two
    vocabularies and index the keys of those the schema has not indexed; reads nothing
    back."""
    if not terms and not words:
        return
    sorted_terms, sorted_words = sorted(terms), sorted(words)
    conn.execute(
        tables(_ADD, keys=keys_sql("f.entry"), prefix=sql.Literal(PREFIX)),
        {
            "coll": collection_id,
            "terms": arrays.texts(sorted_terms),
            "term_counts": arrays.int4s([terms[entry] for entry in sorted_terms]),
            "words": arrays.texts(sorted_words),
            "word_counts": arrays.int4s([words[entry] for entry in sorted_words]),
        },
    )


# Deleting index rows races with writers that found an entry indexed and so wrote no keys for
# it: the table lock (SHARE ROW EXCLUSIVE conflicts with a writer's ROW EXCLUSIVE) waits for
# the writers in flight, whose vocabulary rows the delete's snapshot then sees, and holds off
# new ones until the commit.
_LOCK_KEYS = "LOCK TABLE {near_keys} IN SHARE ROW EXCLUSIVE MODE"

# The keys of the entries only ``%(coll)s`` holds (read before its vocabularies go), as
# primary-key deletes.
_DROP_COLLECTION_KEYS = (
    "WITH mine AS (SELECT term AS entry FROM {vocabulary} WHERE collection_id = %(coll)s"
    "  UNION SELECT word FROM {word_vocabulary} WHERE collection_id = %(coll)s),"
    " gone AS (SELECT m.entry FROM mine m"
    "  WHERE NOT EXISTS (SELECT FROM {vocabulary} v"
    "   WHERE v.term = m.entry AND v.collection_id <> %(coll)s)"
    "  AND NOT EXISTS (SELECT FROM {word_vocabulary} w"
    "   WHERE w.word = m.entry AND w.collection_id <> %(coll)s))"
    " DELETE FROM {near_keys} n USING gone g CROSS JOIN LATERAL ({keys}) AS k"
    " WHERE n.key = k.key AND n.entry = g.entry"
)


def drop_collection_keys(conn: psycopg.Connection[Any], tables: Tables, collection_id: int) -> None:
    """Delete the keys of the entries no other collection holds, before the collection's
    vocabularies are deleted in the same transaction (so a deleted collection's words do not
    stay in the schema). Every write to the schema's collections waits from here to the
    commit (the index's table lock): call it last."""
    conn.execute(tables(_LOCK_KEYS))
    conn.execute(tables(_DROP_COLLECTION_KEYS, keys=keys_sql("g.entry")), {"coll": collection_id})


def prune_keys(conn: psycopg.Connection[Any], tables: Tables) -> int:
    """Delete the keys of entries no vocabulary of the schema holds (left by deleted and
    replaced documents); return how many rows went. Reads the whole index, and every write
    to the schema's collections waits until it commits: maintenance, not part of a write."""
    conn.execute(tables(_LOCK_KEYS))
    cursor = conn.execute(
        tables(
            "DELETE FROM {near_keys} n WHERE NOT EXISTS (SELECT FROM {vocabulary} v"
            " WHERE v.term = n.entry) AND NOT EXISTS (SELECT FROM {word_vocabulary} w"
            " WHERE w.word = n.entry)"
        )
    )
    return cursor.rowcount
