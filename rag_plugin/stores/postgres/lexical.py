"""The BM25 leg, computed from the database's lexical state.

BM25 (exact): SQL finds and ranks every chunk of the collection that holds a query term, from
``rag_postings`` (tf, dl), ``rag_vocabulary`` (df) and the collection row (N, Σdl), with the
metadata filter applied before ranking. It keeps the top ``n`` plus a margin (and every chunk
tied with the last of them); Python then scores those rows with the very functions
:class:`~rag_plugin.lexical.bm25.Bm25Index` uses and re-sorts them, so scores are equal to the
in-memory index's bit for bit, whatever order PostgreSQL adds floats in.

Fuzzy: see ``fuzzy.py`` (word postings of its own, ``words.py``); correction: ``correction.py``.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import DEFAULT_B, DEFAULT_K1, bm25_idf, bm25_term_score
from rag_plugin.stores.base import ScoredChunk
from rag_plugin.stores.postgres.rows import CollectionRow, Tables, chunk_record

__all__ = ["bm25_search"]

_FILTER = (
    " AND p.chunk_id IN (SELECT id FROM {chunks}"
    " WHERE collection_id = %(coll)s AND metadata @> %(filters)s::jsonb)"
)


def _margin(n: int) -> int:
    # Rows beyond n that SQL hands to Python, so float rounding in SQL's sums can never push a
    # chunk of the true top n out of the candidates.
    return n + max(n, 10)


def bm25_search(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    query: str,
    n: int,
    filters: str | None,
) -> list[ScoredChunk]:
    """Top ``n`` chunks by BM25 over the whole collection; only scores > 0.

    MaxScore pruning keeps common terms cheap without changing the answer: candidates are
    the chunks holding one of the rarest ("essential") query terms, scored on every query
    term. A chunk holding only the other terms scores at most the sum of their upper bounds
    ``qtf·idf·(k1+1)``; while that sum is below the k-th candidate's score no such chunk can
    enter the top k. Otherwise the next rarest term becomes essential, up to all of them.
    """
    tokens = get_analyzer(row.info.analyzer).tokens(query)
    if not tokens or row.chunk_count == 0:
        return []
    df = dict(
        conn.execute(
            tables("SELECT term, df FROM {vocabulary} WHERE collection_id = %s AND term = ANY(%s)"),
            (row.id, sorted(set(tokens))),
        ).fetchall()
    )
    if not df:
        return []
    k1, b = DEFAULT_K1, DEFAULT_B
    idf = {term: bm25_idf(row.chunk_count, df[term]) for term in df}
    weight = {term: tokens.count(term) * idf[term] for term in df}
    rarest_first = sorted(df, key=lambda term: (df[term], term))
    k = _margin(n)
    # Start with enough essential terms to reach k postings: fewer cannot give a threshold.
    first, postings = len(rarest_first), 0
    for index, term in enumerate(rarest_first, start=1):
        postings += df[term]
        if postings >= k:
            first = index
            break
    rows: list[tuple[Any, ...]] = []
    for split in range(first, len(rarest_first) + 1):
        rows = _bm25_candidates(conn, tables, row, rarest_first[:split], weight, k, filters)
        rest_bound = sum(weight[term] * (k1 + 1.0) for term in rarest_first[split:])
        threshold = rows[-1][-1] if len(rows) >= k else None
        # The relative margin covers the last bits SQL's float sums may differ by.
        if rest_bound == 0.0 or (threshold is not None and rest_bound < threshold * (1 - 1e-9)):
            break
    avgdl = row.average_length
    hits: list[ScoredChunk] = []
    for r in rows:
        tf = dict(zip(r[-3], r[-2], strict=True))
        length = int(r[-4])
        score = 0.0
        # Query terms with repetition, in query order, as Bm25Index adds them.
        for token in tokens:
            if token in tf:
                score += bm25_term_score(tf[token], length, avgdl, idf[token], k1, b)
        if score > 0.0:
            hits.append(ScoredChunk(chunk_record(r), score))
    hits.sort(key=lambda hit: (-hit.score, hit.chunk.id))
    return hits[:n]


def _bm25_candidates(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    essential: list[str],
    weight: dict[str, float],
    k: int,
    filters: str | None,
) -> list[tuple[Any, ...]]:
    """The top ``k`` chunks holding an essential term (plus ties), by SQL's BM25 sum.

    Each row is the chunk's columns, its length, its query terms and their tfs, and the score.
    The essential terms' postings are read in full; the other terms are looked up per
    candidate in the primary key (the ``OFFSET 0`` keeps the planner from turning those
    probes into a scan of the common terms' long posting lists).
    """
    terms = sorted(weight)
    rest = [term for term in terms if term not in essential]
    other = (
        " UNION ALL SELECT o.* FROM (SELECT DISTINCT chunk_id FROM ess) AS cand"
        " CROSS JOIN LATERAL (SELECT p.chunk_id, p.term, p.tf, p.dl FROM {postings} p"
        "  WHERE p.collection_id = %(coll)s AND p.term = ANY(%(rest)s)"
        "  AND p.chunk_id = cand.chunk_id OFFSET 0) AS o"
        if rest
        else ""
    )
    return conn.execute(
        tables(
            "WITH q AS (SELECT * FROM unnest(%(terms)s::text[], %(weights)s::float8[])"
            "  AS u(term, w)),"
            " ess AS MATERIALIZED (SELECT p.chunk_id, p.term, p.tf, p.dl FROM {postings} p"
            "  WHERE p.collection_id = %(coll)s AND p.term = ANY(%(essential)s){where}),"
            " hits AS (SELECT * FROM ess{other}),"
            " scored AS MATERIALIZED ("
            "  SELECT h.chunk_id, array_agg(h.term) AS terms, array_agg(h.tf) AS tfs,"
            "   sum(q.w * h.tf * (%(k1)s + 1.0)"
            "    / (h.tf + %(k1)s * (1.0 - %(b)s + %(b)s * h.dl / %(avgdl)s))) AS score"
            "  FROM hits h JOIN q ON h.term = q.term GROUP BY h.chunk_id),"
            " cut AS (SELECT score FROM scored ORDER BY score DESC LIMIT 1 OFFSET %(k)s - 1)"
            " SELECT {chunk_columns}, c.token_count, s.terms, s.tfs, s.score"
            " FROM scored s JOIN {chunks} c ON c.id = s.chunk_id"
            " WHERE s.score >= coalesce((SELECT score FROM cut), '-infinity')"
            " ORDER BY s.score DESC, c.chunk_key LIMIT %(k)s",
            where=tables(_FILTER) if filters else sql.SQL(""),
            other=tables(other) if rest else sql.SQL(""),
        ),
        {
            "terms": terms,
            "weights": [weight[t] for t in terms],
            "essential": essential,
            "rest": rest,
            "coll": row.id,
            "filters": filters,
            "k1": DEFAULT_K1,
            "b": DEFAULT_B,
            "avgdl": row.average_length,
            "k": k,
        },
    ).fetchall()
