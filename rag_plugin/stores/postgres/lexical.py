"""The BM25 and fuzzy legs and query correction, computed from the database's lexical state.

BM25 (exact): SQL finds and ranks every chunk of the collection that holds a query term, from
``rag_postings`` (tf, dl), ``rag_vocabulary`` (df) and the collection row (N, Σdl), with the
metadata filter applied before ranking. It keeps the top ``n`` plus a margin (and every chunk
tied with the last of them); Python then scores those rows with the very functions
:class:`~rag_plugin.lexical.bm25.Bm25Index` uses and re-sorts them, so scores are equal to the
in-memory index's bit for bit, whatever order PostgreSQL adds floats in.

Fuzzy (exact scores, approximate candidate set): :func:`~rag_plugin.lexical.fuzzy.fuzzy_score`
compares query words with a chunk's *whitespace* words, while the database indexes *analyzer
tokens*. Candidates are the chunks holding a vocabulary term within ``max_distance`` edits of a
query word or of one of its tokens; SQL pre-ranks them by the same formula applied to those
terms and Python scores the best ``max(4n, n + 50)`` exactly with ``fuzzy_score``. A chunk
whose only match is a whitespace word that shares no close token with the query (e.g. a query
word glued to punctuation on both sides, or a stopword dropped by a language analyzer) can be
missed, where the in-memory index, which scores every chunk, finds it.

Correction: the vocabulary table holds each term with its df; candidates within the length
bound are fetched and :func:`~rag_plugin.lexical.fuzzy.correct_word_against` picks, so the
tie-breaking is the in-memory index's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import DEFAULT_B, DEFAULT_K1, bm25_idf, bm25_term_score
from rag_plugin.lexical.fuzzy import (
    DEFAULT_MAX_DISTANCE,
    correct_word_against,
    fuzzy_score,
    word_similarity,
)
from rag_plugin.stores.base import Correction, QueryCorrection, ScoredChunk
from rag_plugin.stores.postgres.rows import CollectionRow, Tables, chunk_record

__all__ = ["bm25_search", "correct_query", "fuzzy_search"]

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
    """Top ``n`` chunks by BM25 over the whole collection; only scores > 0."""
    tokens = get_analyzer(row.info.analyzer).tokens(query)
    if not tokens or row.chunk_count == 0:
        return []
    terms = sorted(set(tokens))
    k1, b = DEFAULT_K1, DEFAULT_B
    where = tables(_FILTER) if filters else sql.SQL("")
    rows = conn.execute(
        tables(
            "WITH q AS ("
            "  SELECT v.term, v.df, u.qtf,"
            "   ln((%(N)s::float8 - v.df + 0.5) / (v.df + 0.5) + 1.0) AS idf"
            "  FROM {vocabulary} v JOIN unnest(%(terms)s::text[], %(qtf)s::integer[])"
            "   AS u(term, qtf) ON v.term = u.term"
            "  WHERE v.collection_id = %(coll)s),"
            " scored AS MATERIALIZED ("
            "  SELECT p.chunk_id, array_agg(p.term) AS terms, array_agg(p.tf) AS tfs,"
            "   sum(q.qtf * q.idf * p.tf * (%(k1)s + 1.0)"
            "    / (p.tf + %(k1)s * (1.0 - %(b)s + %(b)s * p.dl / %(avgdl)s))) AS score"
            "  FROM {postings} p JOIN q ON p.term = q.term"
            "  WHERE p.collection_id = %(coll)s{where}"
            "  GROUP BY p.chunk_id),"
            " cut AS (SELECT score FROM scored ORDER BY score DESC LIMIT 1 OFFSET %(k)s - 1)"
            " SELECT {chunk_columns}, c.token_count, s.terms, s.tfs"
            " FROM scored s JOIN {chunks} c ON c.id = s.chunk_id"
            " WHERE s.score >= coalesce((SELECT score FROM cut), '-infinity')"
            " ORDER BY s.score DESC, c.chunk_key LIMIT %(k)s",
            where=where,
        ),
        {
            "N": row.chunk_count,
            "terms": terms,
            "qtf": [tokens.count(t) for t in terms],
            "coll": row.id,
            "filters": filters,
            "k1": k1,
            "b": b,
            "avgdl": row.average_length,
            "k": _margin(n),
        },
    ).fetchall()
    if not rows:
        return []
    df = dict(
        conn.execute(
            tables("SELECT term, df FROM {vocabulary} WHERE collection_id = %s AND term = ANY(%s)"),
            (row.id, terms),
        ).fetchall()
    )
    idf = {term: bm25_idf(row.chunk_count, df.get(term, 0)) for term in terms}
    avgdl = row.average_length
    hits: list[ScoredChunk] = []
    for r in rows:
        tf = dict(zip(r[-2], r[-1], strict=True))
        length = int(r[-3])
        score = 0.0
        # Query terms with repetition, in query order, as Bm25Index adds them.
        for token in tokens:
            if token in tf:
                score += bm25_term_score(idf[token], tf[token], length, avgdl, k1, b)
        if score > 0.0:
            hits.append(ScoredChunk(chunk_record(r), score))
    hits.sort(key=lambda hit: (-hit.score, hit.chunk.id))
    return hits[:n]


def _near_terms(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    words: Iterable[str],
    max_distance: int,
) -> dict[str, int]:
    """Vocabulary terms whose length is within ``max_distance`` of a word's, with their df."""
    lengths = sorted({len(word) for word in words})
    if not lengths:
        return {}
    bounds = [(max(1, length - max_distance), length + max_distance) for length in lengths]
    found = conn.execute(
        tables(
            "SELECT v.term, v.df FROM {vocabulary} v"
            " JOIN unnest(%s::integer[], %s::integer[]) AS l(lo, hi)"
            "  ON char_length(v.term) BETWEEN l.lo AND l.hi"
            " WHERE v.collection_id = %s"
        ),
        ([lo for lo, _ in bounds], [hi for _, hi in bounds], row.id),
    ).fetchall()
    return {term: int(df) for term, df in found}


def correct_query(
    conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow, query: str
) -> QueryCorrection:
    """Correct each query token to the closest vocabulary term (SPEC L3)."""
    tokens = get_analyzer(row.info.analyzer).tokens(query)
    if not tokens:
        return QueryCorrection(query=query)
    vocabulary = _near_terms(conn, tables, row, tokens, DEFAULT_MAX_DISTANCE)
    corrected: list[str] = []
    corrections: list[Correction] = []
    for token in tokens:
        match = correct_word_against(token, vocabulary, DEFAULT_MAX_DISTANCE, vocabulary)
        if match is None:
            corrected.append(token)
            continue
        word, distance = match
        corrected.append(word)
        if distance > 0:
            corrections.append(Correction(token, word, distance))
    return QueryCorrection(" ".join(corrected), tuple(corrections))


def fuzzy_search(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    query: str,
    n: int,
    filters: str | None,
) -> list[ScoredChunk]:
    """Top ``n`` chunks by the fuzzy word-match score; only scores > 0."""
    words = query.lower().split()
    if not words or row.chunk_count == 0:
        return []
    analyzer = get_analyzer(row.info.analyzer)
    probes = {i: {word, *analyzer.tokens(word)} for i, word in enumerate(words)}
    vocabulary = _near_terms(conn, tables, row, set().union(*probes.values()), DEFAULT_MAX_DISTANCE)
    positions: list[int] = []
    near: list[str] = []
    similarities: list[float] = []
    for i, variants in probes.items():
        best: dict[str, float] = {}
        for variant in variants:
            for term in vocabulary:
                similarity = word_similarity(variant, term, DEFAULT_MAX_DISTANCE)
                if similarity > best.get(term, 0.0):
                    best[term] = similarity
        for term, similarity in best.items():
            positions.append(i)
            near.append(term)
            similarities.append(similarity)
    if not near:
        return []
    where = tables(_FILTER) if filters else sql.SQL("")
    rows = conn.execute(
        tables(
            "WITH near AS (SELECT * FROM unnest(%(pos)s::integer[], %(terms)s::text[],"
            "  %(sims)s::float8[]) AS u(pos, term, sim)),"
            " best AS (SELECT p.chunk_id, n.pos, max(n.sim) AS sim"
            "  FROM {postings} p JOIN near n ON p.term = n.term"
            "  WHERE p.collection_id = %(coll)s{where} GROUP BY p.chunk_id, n.pos),"
            " ranked AS (SELECT chunk_id, sum(sim) * count(*) AS score FROM best"
            "  GROUP BY chunk_id ORDER BY score DESC, chunk_id LIMIT %(k)s)"
            " SELECT {chunk_columns} FROM ranked r JOIN {chunks} c ON c.id = r.chunk_id",
            where=where,
        ),
        {
            "pos": positions,
            "terms": near,
            "sims": similarities,
            "coll": row.id,
            "filters": filters,
            "k": max(4 * n, n + 50),
        },
    ).fetchall()
    hits = [
        ScoredChunk(chunk_record(r), fuzzy_score(query, r[3], DEFAULT_MAX_DISTANCE)) for r in rows
    ]
    hits = [hit for hit in hits if hit.score > 0.0]
    hits.sort(key=lambda hit: (-hit.score, hit.chunk.id))
    return hits[:n]
