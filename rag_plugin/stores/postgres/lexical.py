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
terms and Python scores the best ``max(2n, n + 20)`` exactly with ``fuzzy_score``. A chunk
whose only match is a whitespace word that shares no close term with the query can be missed,
where the in-memory index (which looks at the words themselves) finds it: with the seed
analyzer that takes a word glued to punctuation on both sides; with a stemming analyzer it is
more common (a typo whose stem is far from the word's stem, or a stopword). The differential
test measures it: exact on random corpora with the seed analyzer, ≥ 0.8 overlap with stemming.
Storing each chunk's distinct whitespace words as a second posting list would make it exact.

Correction (exact): the vocabulary table holds each term with its df; SQL returns every term
that can be within ``max_distance`` edits of a query word (length window plus the partition
lemma, see ``_pieces``) and :func:`~rag_plugin.lexical.fuzzy.correct_word_against` picks among
them with the in-memory index's tie-breaking.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import psycopg
from psycopg import sql
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

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
    """Top ``n`` chunks by BM25 over the whole collection; only scores > 0.

    Exact top-k with impact thresholds, so a common term's long posting list is not read in
    full. A term's normalised impact in a chunk, ``s = tf(k1+1) / (tf + k1(1 − b + b·dl/avgdl))``,
    rises with tf and falls with dl, and a chunk's score is ``Σ w_t·s_t`` with
    ``w_t = qtf·idf``. Round 1 takes each term's ``k`` highest-impact postings (one short
    ``ORDER BY dl LIMIT k`` index scan per distinct tf, see ``rag_postings_impact``) and
    scores those chunks fully; the ``k``-th score is a lower bound θ of the true ``k``-th.
    Round 2 splits θ into per-term thresholds ``τ_t`` with ``Σ w_t·τ_t < θ``: the lightest
    terms get ``τ = k1+1`` (no posting reaches it: MaxScore's non-essential terms), the others
    one shared τ. A chunk whose every impact is below its term's τ scores below θ, so the top
    ``k`` lie among the chunks with some ``s_t ≥ τ_t``, read as a staircase of ``tf = j AND
    dl ≤ D_j`` index ranges and scored fully.
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
    k = _margin(n)
    rows = _bm25_round(conn, tables, row, weight, k, filters, thresholds=None)
    if len(rows) >= k:
        # The relative margin covers the last bits SQL's float sums may differ by.
        budget = float(rows[k - 1][-1]) * (1 - 1e-9)
        thresholds: dict[str, float] = {}
        lightest_first = sorted(weight, key=lambda term: (weight[term], term))
        for index, term in enumerate(lightest_first):
            ceiling = weight[term] * (k1 + 1.0)
            if ceiling < budget:
                budget -= ceiling
                continue
            rest = lightest_first[index:]
            tau = budget / sum(weight[t] for t in rest)
            thresholds = dict.fromkeys(rest, tau)
            break
        # Every chunk scoring θ or more is a round-2 candidate, round 1's top k included.
        # (No threshold means every term fits under θ, which float sums alone could cause;
        # round 1 then read every posting that matters.)
        if thresholds:
            rows = _bm25_round(conn, tables, row, weight, k, filters, thresholds=thresholds)
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


# Round 1: each term's k highest-impact postings. For one tf, impact falls as dl grows, so
# ``ORDER BY dl LIMIT k`` per distinct tf holds the term's top k; ``max(tf)`` bounds the tfs.
_TOP_IMPACT = (
    "SELECT best.chunk_id FROM q"
    " CROSS JOIN LATERAL (SELECT max(p.tf) AS m FROM {postings} p"
    "  WHERE p.collection_id = %(coll)s AND p.term = q.term) AS mt"
    " CROSS JOIN LATERAL (SELECT s.chunk_id FROM generate_series(1, mt.m) AS j(tf)"
    "  CROSS JOIN LATERAL (SELECT p.chunk_id, p.tf * (%(k1)s + 1.0)"
    "   / (p.tf + %(k1)s * (1.0 - %(b)s + %(b)s * p.dl / %(avgdl)s)) AS impact FROM {postings} p"
    "   WHERE p.collection_id = %(coll)s AND p.term = q.term AND p.tf = j.tf{where}"
    "   ORDER BY p.dl LIMIT %(k)s) AS s"
    "  ORDER BY s.impact DESC LIMIT %(k)s) AS best"
)

# Round 2: every posting with impact ≥ τ of its term: s(j, dl) ≥ τ ⟺ dl ≤ D_j, one index
# range per tf. D_j is widened by a hair so float rounding can only add candidates.
_ABOVE_THRESHOLD = (
    "SELECT s.chunk_id FROM q"
    " CROSS JOIN LATERAL (SELECT max(p.tf) AS m FROM {postings} p"
    "  WHERE p.collection_id = %(coll)s AND p.term = q.term) AS mt"
    " CROSS JOIN LATERAL generate_series(1, mt.m) AS j(tf)"
    " CROSS JOIN LATERAL (SELECT p.chunk_id FROM {postings} p"
    "  WHERE p.collection_id = %(coll)s AND p.term = q.term AND p.tf = j.tf"
    "  AND p.dl <= (j.tf * ((%(k1)s + 1.0) / q.tau - 1.0) - %(k1)s * (1.0 - %(b)s))"
    "   * %(avgdl)s / (%(k1)s * %(b)s) * (1.0 + 1e-9) + 1e-9{where}) AS s"
)


def _bm25_round(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    weight: dict[str, float],
    k: int,
    filters: str | None,
    *,
    thresholds: dict[str, float] | None,
) -> list[tuple[Any, ...]]:
    """The top ``k`` candidates by SQL's BM25 sum over every query term.

    Candidates are each term's top ``k`` by impact (``thresholds`` None) or the postings at
    or above each term's threshold. Each row is the chunk's columns, its length, its query
    terms and their tfs, and the score; a candidate's postings of every query term are probed
    in the primary key (``OFFSET 0`` keeps the planner from scanning long lists instead).
    """
    terms = sorted(weight)
    if thresholds is None:
        candidates, probe_terms, taus = _TOP_IMPACT, terms, [0.0] * len(terms)
    else:
        probe_terms = sorted(thresholds)
        candidates, taus = _ABOVE_THRESHOLD, [thresholds[t] for t in probe_terms]
    if not probe_terms:
        return []
    where = tables(_FILTER) if filters else sql.SQL("")
    return conn.execute(
        tables(
            "WITH w AS (SELECT * FROM unnest(%(terms)s::text[], %(weights)s::float8[])"
            "  AS u(term, w)),"
            " q AS (SELECT * FROM unnest(%(probe)s::text[], %(taus)s::float8[])"
            "  AS u(term, tau)),"
            " cand AS MATERIALIZED (SELECT DISTINCT chunk_id FROM ({candidates}) AS c),"
            " hits AS (SELECT o.* FROM cand CROSS JOIN LATERAL (SELECT p.chunk_id, p.term,"
            "  p.tf, p.dl FROM {postings} p WHERE p.collection_id = %(coll)s"
            "  AND p.term = ANY(%(terms)s) AND p.chunk_id = cand.chunk_id OFFSET 0) AS o),"
            " scored AS MATERIALIZED ("
            "  SELECT h.chunk_id, array_agg(h.term) AS terms, array_agg(h.tf) AS tfs,"
            "   sum(w.w * h.tf * (%(k1)s + 1.0)"
            "    / (h.tf + %(k1)s * (1.0 - %(b)s + %(b)s * h.dl / %(avgdl)s))) AS score"
            "  FROM hits h JOIN w ON h.term = w.term GROUP BY h.chunk_id),"
            " cut AS (SELECT score FROM scored ORDER BY score DESC LIMIT 1 OFFSET %(k)s - 1)"
            " SELECT {chunk_columns}, c.token_count, s.terms, s.tfs, s.score"
            " FROM scored s JOIN {chunks} c ON c.id = s.chunk_id"
            " WHERE s.score >= coalesce((SELECT score FROM cut), '-infinity')"
            " ORDER BY s.score DESC, c.chunk_key LIMIT %(k)s",
            candidates=tables(candidates, where=where),
        ),
        {
            "terms": terms,
            "weights": [weight[t] for t in terms],
            "probe": probe_terms,
            "taus": taus,
            "coll": row.id,
            "filters": filters,
            "k1": DEFAULT_K1,
            "b": DEFAULT_B,
            "avgdl": row.average_length,
            "k": k,
        },
    ).fetchall()


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


def _near_terms(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    words: Collection[str],
    max_distance: int,
) -> dict[str, int]:
    """Every vocabulary term that may be within ``max_distance`` edits of a word, with its df.

    A superset: the length window and the partition filter only drop terms that cannot be
    that close, so the caller's exact distance check decides.
    """
    lengths = [len(word) for word in words]
    if not lengths:
        return {}
    patterns = sorted(
        {
            "%" + piece.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            for word in words
            for piece in _pieces(word, max_distance)
        }
    )
    # One pass over the length window; a term passes if it holds a piece of any word, which
    # is a superset of each word's own candidates (the caller checks distances exactly).
    found = conn.execute(
        tables(
            "SELECT term, df FROM {vocabulary} WHERE collection_id = %s"
            " AND char_length(term) BETWEEN %s AND %s AND term LIKE ANY(%s)"
        ),
        (row.id, max(1, min(lengths) - max_distance), max(lengths) + max_distance, patterns),
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
    terms = list(vocabulary)
    positions: list[int] = []
    near: list[str] = []
    similarities: list[float] = []
    for i, variants in probes.items():
        best: dict[str, float] = {}
        for variant in variants:
            # rapidfuzz's C loop finds the few terms within reach among possibly thousands.
            for term, distance, _ in process.extract(
                variant,
                terms,
                scorer=Levenshtein.distance,
                score_cutoff=DEFAULT_MAX_DISTANCE,
                limit=None,
            ):
                # Used only to pre-rank candidates; fuzzy_score decides the scores.
                similarity = word_similarity(variant, term, int(distance))
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
            " ranked AS MATERIALIZED (SELECT chunk_id, sum(sim) * count(*) AS score FROM best"
            "  GROUP BY chunk_id),"
            " cut AS (SELECT score FROM ranked ORDER BY score DESC LIMIT 1 OFFSET %(k)s - 1)"
            " SELECT {chunk_columns} FROM ranked r JOIN {chunks} c ON c.id = r.chunk_id"
            " WHERE r.score >= coalesce((SELECT score FROM cut), '-infinity')"
            " ORDER BY r.score DESC, c.chunk_key LIMIT %(k)s",
            where=where,
        ),
        {
            "pos": positions,
            "terms": near,
            "sims": similarities,
            "coll": row.id,
            "filters": filters,
            "k": max(2 * n, n + 20),
        },
    ).fetchall()
    hits = [
        ScoredChunk(chunk_record(r), fuzzy_score(query, r[3], DEFAULT_MAX_DISTANCE)) for r in rows
    ]
    hits = [hit for hit in hits if hit.score > 0.0]
    hits.sort(key=lambda hit: (-hit.score, hit.chunk.id))
    return hits[:n]
