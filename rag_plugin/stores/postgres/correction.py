"""Query correction, computed from the database's vocabularies: the same answers as FuzzyIndex.

Close terms (exact): the vocabulary table holds each term with its df; SQL returns every term
that can be within ``max_distance`` edits of a query word (length window plus the partition
lemma, see ``_pieces``) and :func:`~rag_plugin.lexical.fuzzy.correct_word_against` picks among
them with the in-memory index's tie-breaking. The fuzzy leg finds its close words the same way
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

import psycopg
from psycopg import sql

from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.correction import correct_with, prefix_end
from rag_plugin.lexical.fuzzy import DEFAULT_MAX_DISTANCE, correct_word_against
from rag_plugin.stores.base import QueryCorrection
from rag_plugin.stores.postgres.rows import CollectionRow, Tables

__all__ = ["correct_query", "near_terms", "words_with_prefixes"]


def _pieces(word: str, max_distance: int) -> list[str]:
    """``word`` cut into ``max_distance + 1`` parts; one survives any ``max_distance`` edits.

    Each edit changes at most one part, so every string within the distance contains one of
    them unchanged (the partition lemma): an exact filter for candidate terms. Words too short
    to cut yield an empty part, which every term contains.
    """
    parts = max_distance + 1
    if len(word) < parts:
        return [""]
    size, extra = divmod(len(word), parts)
    pieces, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        pieces.append(word[start:end])
        start = end
    return pieces


_NEAR = {
    "terms": ("SELECT term, df FROM {vocabulary} WHERE collection_id = %s AND ({near})", "term"),
    "words": (
        "SELECT word, df FROM {word_vocabulary} WHERE collection_id = %s AND ({near})",
        "word",
    ),
}


def _like(piece: str) -> str:
    return "%" + piece.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


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
    leg's whitespace words). A superset: each word's length window and partition filter only
    drop entries that cannot be that close to it, so the caller's exact distance check decides.
    """
    distinct = sorted(set(words))
    if not distinct:
        return {}
    template, column = _NEAR[vocabulary]
    # One clause per word: its own length window and pieces (a long word's long pieces must
    # not be diluted by a short word's one-letter ones); the index serves each window.
    clause = sql.SQL("(char_length({column}) BETWEEN %s AND %s AND {column} LIKE ANY(%s))").format(
        column=sql.Identifier(column)
    )
    params: list[Any] = [row.id]
    for word in distinct:
        params += [
            max(1, len(word) - max_distance),
            len(word) + max_distance,
            sorted({_like(piece) for piece in _pieces(word, max_distance)}),
        ]
    # Never a prepared statement: the plan depends on the pieces (three letters or more: the
    # trigram index; shorter: the length index), and a generic plan, blind to them, chose
    # the trigram index for one-letter pieces too (fuzzy p50 17 → 50 ms at 100k chunks).
    found = conn.execute(
        tables(template, near=sql.SQL(" OR ").join([clause] * len(distinct))),
        params,
        prepare=False,
    ).fetchall()
    return {term: int(df) for term, df in found}


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
