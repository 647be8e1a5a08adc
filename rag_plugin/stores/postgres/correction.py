"""Query correction, computed from the database's vocabularies: the same answers as FuzzyIndex.

Close terms (exact): the vocabulary table holds each term with its df; :func:`near_terms`
returns every term that can be within ``max_distance`` edits of a query word (the entries
sharing one of its deletion keys, see ``near.py``) and
:func:`~rag_plugin.lexical.fuzzy.correct_word_against` picks among them with the in-memory
index's tie-breaking. The fuzzy leg finds its close words the same way
(:func:`near_terms` over the word vocabulary).

Surface words (stemming analyzers, exact): a corrected stem is shown as the collection's most
frequent word with that stem (:mod:`rag_plugin.lexical.correction`). The candidates are the
word vocabulary's entries under a few prefixes of the stem, read as primary-key range scans,
so no table is added and writes cost nothing more; the word vocabulary already follows
deletes and re-ingests.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.correction import correct_with, prefix_end
from rag_plugin.lexical.fuzzy import DEFAULT_MAX_DISTANCE, correct_word_against
from rag_plugin.stores.base import QueryCorrection
from rag_plugin.stores.postgres.near import MAX_DEPTH, VOCABULARIES, entry_keys
from rag_plugin.stores.postgres.rows import CollectionRow, Tables

__all__ = ["correct_query", "near_terms", "words_with_prefixes"]


def near_terms(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    words: Collection[str],
    max_distance: int,
    vocabulary: str = "terms",
) -> dict[str, int]:
    """Every vocabulary entry that may be within ``max_distance`` edits of a word, with its df.

    ``vocabulary`` is ``"terms"`` (analyzer terms, for correction) or ``"words"`` (the fuzzy
    leg's whitespace words). A superset: the caller's exact distance check decides.

    - At two edits or fewer (what the fuzzy leg and correction use): the entries sharing one of
      the words' deletion keys (``near.py``), as primary-key lookups.
    - Beyond that index's depth: the entries of the words' length windows from the covering
      length index alone, kept by rapidfuzz.

    One statement reads the df of the entries found either way.
    """
    distinct = sorted(set(words))
    if not distinct:
        return {}
    table, key = VOCABULARIES[vocabulary]
    column = sql.Identifier(key)
    entry_table = tables.table(table)
    if max_distance > MAX_DEPTH:
        close = _close_in_windows(conn, tables, row, distinct, max_distance, table, column)
        found = conn.execute(
            tables(
                "SELECT {column}, df FROM {table} WHERE collection_id = %s AND {column} = ANY(%b)",
                column=column,
                table=entry_table,
            ),
            (row.id, close),
        ).fetchall()
        return dict(found)
    # The entries as an array of primary-key lookups: a join with the keys' rows hashed the
    # whole vocabulary (18 against 10-14 ms for 5k entries). The index is the schema's: its
    # entries of other collections find no row here.
    keys = sorted({k for word in distinct for k in entry_keys(word, max_distance)})
    found = conn.execute(
        tables(
            "SELECT {column}, df FROM {table} WHERE collection_id = %s AND {column} = ANY("
            " ARRAY(SELECT DISTINCT entry FROM {near_keys} WHERE key = ANY(%b)))",
            column=column,
            table=entry_table,
        ),
        (row.id, keys),
    ).fetchall()
    return dict(found)


def _close_in_windows(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    words: list[str],
    max_distance: int,
    table: str,
    column: sql.Identifier,
) -> list[str]:
    """The vocabulary entries within ``max_distance`` edits of one of ``words``.

    The entries of every length the words can reach come back as one space-separated text:
    vocabulary entries never hold whitespace (words are split on it, and analyzer terms are
    letters and digits), and one value is much cheaper to send than thousands of rows.
    """
    if not words:
        return []
    lengths = sorted(
        {
            length
            for word in words
            for length in range(max(1, len(word) - max_distance), len(word) + max_distance + 1)
        }
    )
    found = conn.execute(
        tables(
            "SELECT string_agg({column}, ' ') FROM {table}"
            " WHERE collection_id = %s AND char_length({column}) = ANY(%s)",
            column=column,
            table=tables.table(table),
        ),
        (row.id, lengths),
    ).fetchone()
    if not found or not found[0]:
        return []
    entries: list[str] = found[0].split(" ")
    # A row per word, a column per entry; entries farther away come back as max_distance + 1.
    distances = process.cdist(
        words, entries, scorer=Levenshtein.distance, score_cutoff=max_distance, dtype=np.int32
    )
    return [entries[i] for i in np.flatnonzero((distances <= max_distance).any(axis=0)).tolist()]


def correct_query(
    conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow, query: str
) -> QueryCorrection:
    """Correct each query word to the closest vocabulary term, as a readable word (SPEC L3)."""

    def closest(terms: Sequence[str]) -> dict[str, tuple[str, int] | None]:
        vocabulary = near_terms(conn, tables, row, terms, DEFAULT_MAX_DISTANCE)
        return {
            term: correct_word_against(term, vocabulary, DEFAULT_MAX_DISTANCE, vocabulary)
            for term in terms
        }

    def words_starting_with(prefixes: Sequence[str]) -> list[tuple[str, int]]:
        return words_with_prefixes(conn, tables, row, prefixes)

    return correct_with(get_analyzer(row.info.analyzer), query, closest, words_starting_with)


def words_with_prefixes(
    conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow, prefixes: Sequence[str]
) -> list[tuple[str, int]]:
    """The word vocabulary's words beginning with one of ``prefixes``, with their df.

    Each prefix is one range of the primary key ``(collection_id, word)``: under the "C"
    collation the words beginning with ``p`` are exactly those in ``[p, prefix_end(p))``.
    Prefixes must not begin one another, or a word would come back twice.
    """
    if not prefixes:
        return []
    ends = [prefix_end(prefix) for prefix in prefixes]
    if any(end is None for end in ends):  # the empty prefix: every word
        found = conn.execute(
            tables("SELECT word, df FROM {word_vocabulary} WHERE collection_id = %s"), (row.id,)
        ).fetchall()
    else:
        found = conn.execute(
            tables(
                "SELECT v.word, v.df FROM unnest(%s::text[], %s::text[]) AS r(low, high)"
                " CROSS JOIN LATERAL (SELECT word, df FROM {word_vocabulary}"
                "  WHERE collection_id = %s AND word >= r.low AND word < r.high) AS v"
            ),
            (list(prefixes), ends, row.id),
        ).fetchall()
    return [(word, int(df)) for word, df in found]
