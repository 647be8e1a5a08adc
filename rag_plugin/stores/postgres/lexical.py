"""The BM25 leg, computed from the database's lexical state.

BM25 (exact, over the whole collection): one round trip reads every posting of the query's
terms from the term blocks (``blocks.py``: a few array rows per term, decoded by numpy), and
numpy scores them exactly as :class:`~rag_plugin.lexical.bm25.Bm25Index` does — the same
float operations per posting, added term by term in query order with repetitions — so scores
are equal to the in-memory index's bit for bit. df is each term's number of postings, N and
Σdl come from the collection row. A metadata filter picks the allowed chunk ids in SQL and
removes the others before ranking. Ties with the ``n``-th score are broken by chunk id (the
chunk key), as in the in-memory store; only the tied chunks' keys are read for it.

Reading everything is what makes long queries cheap: a 24-term claim over 100k chunks holds
≈ 30k postings (0.5 MB), which take about a millisecond to read and score, where pruning
row by row had to probe tens of thousands of (chunk, term) pairs.

Fuzzy: see ``fuzzy.py`` (word postings of its own); correction: ``correction.py``. Both
word-based legs run through :func:`lexical_leg`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psycopg

from rag_plugin.lexical.bm25 import bm25_idf, bm25_term_scores
from rag_plugin.lexical.slots import FloatArray, IntArray
from rag_plugin.stores.base import CollectionInfo, ScoredChunk, SearchContext
from rag_plugin.stores.postgres.block_reads import decode_int_array, read_term_postings, union_ids
from rag_plugin.stores.postgres.connection import Database
from rag_plugin.stores.postgres.filters import SqlFilter, sql_filter
from rag_plugin.stores.postgres.reads import collection_row
from rag_plugin.stores.postgres.rows import CollectionRow, Tables, chunk_record

__all__ = [
    "Analysis",
    "LexicalSearch",
    "allowed_chunks",
    "bm25_search",
    "lexical_leg",
    "top_chunks",
]


LexicalSearch = Callable[
    [psycopg.Connection[Any], Tables, CollectionRow, list[str], int, SqlFilter | None],
    list[ScoredChunk],
]
"""A word-based leg: (connection, tables, collection row, the query's analysed words, n,
compiled filter) → hits."""

Analysis = Callable[[str, str], list[str]]
"""How a leg's query is analysed: (analyzer name, query) → its terms or words (a
:class:`~rag_plugin.stores.context.SearchContext` method, so once a search)."""


def lexical_leg(
    db: Database,
    tables: Tables,
    search: LexicalSearch,
    analyse: Analysis,
    collection: CollectionInfo,
    query: str,
    n: int,
    context: SearchContext,
) -> list[ScoredChunk]:
    """Run one word-based leg (BM25 or fuzzy) in a transaction on the collection's row,
    the query analysed by the stored collection's analyzer."""
    where = sql_filter(context)

    def leg(conn: psycopg.Connection[Any]) -> list[ScoredChunk]:
        row = collection_row(conn, tables, collection)
        if n == 0:
            return []
        return search(conn, tables, row, analyse(row.info.analyzer, query), n, where)

    return db.read(leg)


def bm25_search(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    tokens: Sequence[str],
    n: int,
    filters: SqlFilter | None,
) -> list[ScoredChunk]:
    """Top ``n`` chunks by BM25 over the whole collection for the query's analysed
    ``tokens`` (in order, repetitions kept); only scores > 0 (module docstring)."""
    if not tokens or row.chunk_count == 0 or n == 0:
        return []
    postings = read_term_postings(conn, tables, row.id, sorted(set(tokens)))
    if not postings:
        return []
    ids = union_ids([p.ids for p in postings.values()])
    scores = np.zeros(len(ids), dtype=np.float64)
    avgdl = row.average_length
    contributions: dict[str, tuple[IntArray, FloatArray]] = {}
    # Term by term in query order, repetitions included, exactly as Bm25Index sums.
    for token in tokens:
        found = postings.get(token)
        if found is None:
            continue
        if token not in contributions:
            idf = bm25_idf(row.chunk_count, len(found))
            contributions[token] = (
                np.searchsorted(ids, found.ids),
                bm25_term_scores(found.tfs, found.dls.astype(np.float64), avgdl, idf),
            )
        positions, values = contributions[token]
        scores[positions] += values
    keep = scores > 0.0
    if filters:
        keep &= np.isin(ids, allowed_chunks(conn, tables, row, filters))
    return top_chunks(conn, tables, ids[keep], scores[keep], n)


def allowed_chunks(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    filters: SqlFilter,
) -> IntArray:
    """The ids of the chunks matching ``filters``, in no order: the lexical legs test
    membership.

    Read from the narrow filter table (migration 13), never from the chunk rows. Its alias is
    ``c`` because a compiled filter names ``c.metadata``; the table has that column too (the
    dense leg reads the same table, ``dense._filtered_candidates``). When the legs of one
    search share the filter, the first leg to ask reads them and the others get the same ids
    (at 100k chunks a 10 % filter's ids cost ≈ 8 ms a leg).
    """

    def read() -> IntArray:
        found = conn.execute(
            tables(
                "SELECT array_send(coalesce(array_agg(m.id), ARRAY[]::bigint[]))"
                " FROM (SELECT c.chunk_id AS id FROM {chunk_filters} c"
                " WHERE c.collection_id = %(coll)s AND {condition}) AS m",
                condition=filters.condition,
            ),
            {**filters.params, "coll": row.id},
            binary=True,
        ).fetchone()
        return decode_int_array(found[0], wide=True) if found else np.zeros(0, dtype=np.int64)

    return filters.context.once(("allowed_chunks", row.id), read)


def top_chunks(
    conn: psycopg.Connection[Any],
    tables: Tables,
    ids: IntArray,
    scores: FloatArray,
    n: int,
) -> list[ScoredChunk]:
    """The ``n`` best of ``ids`` by ``scores``, ties by chunk key, with their chunk rows.

    Every chunk above the ``n``-th score is in; of those tied with it, the ones with the
    lowest keys, which SQL orders (float8 round-trips exactly, so SQL sorts Python's scores).
    """
    if len(ids) > n:
        kth = np.partition(scores, len(scores) - n)[len(scores) - n]
        keep = scores >= kth
        ids, scores = ids[keep], scores[keep]
    rows = conn.execute(
        tables(
            "SELECT {chunk_columns}, t.score FROM (SELECT u.id, u.score, k.chunk_key"
            "  FROM unnest(%b::bigint[], %b::float8[]) AS u(id, score)"
            "  JOIN {chunks} k ON k.id = u.id ORDER BY u.score DESC, k.chunk_key LIMIT %s) AS t"
            " JOIN {chunks} c ON c.id = t.id ORDER BY t.score DESC, t.chunk_key"
        ),
        (ids.tolist(), scores.tolist(), n),
    ).fetchall()
    return [ScoredChunk(chunk_record(r), float(r[-1])) for r in rows]
