"""The BM25 leg, computed from the database's lexical state.

BM25 (exact): SQL finds and ranks the chunks of the collection that can hold a top score, from
``rag_postings`` (tf, dl), ``rag_vocabulary`` (df) and the collection row (N, Σdl), with the
metadata filter applied before ranking. It keeps the top ``n`` plus a margin (and every chunk
tied with the last of them); Python then scores those rows with the very functions
:class:`~rag_plugin.lexical.bm25.Bm25Index` uses and re-sorts them, so scores are equal to the
in-memory index's bit for bit, whatever order PostgreSQL adds floats in.

Which chunks are read (exact pruning, so common terms stay cheap):

1. A floor τ: the chunks with the highest tf of each query term (read from the impact index
   ``(term, tf DESC, dl)``), scored on every term; τ is the k-th best of those real scores, so
   the true k-th score is at least τ.
2. MaxScore: the weakest terms whose upper bounds ``qtf·idf·(k1+1)`` add up to less than τ
   are never read: a chunk holding only them cannot reach τ.
3. The remaining ("essential") terms split what is left of τ among themselves in proportion
   to their bounds, ``θ_t``; each is read only where its own contribution reaches ``θ_t`` (an
   index range on tf, then a check on dl). A chunk below ``θ_t`` on every essential term
   scores less than ``Σθ_t`` plus the skipped terms' bounds, which is τ: it cannot be in the
   top k. Every chunk read is then scored on every query term through the primary key.

A query whose terms have few postings in all is read in full instead (one statement).

Fuzzy: see ``fuzzy.py`` (word postings of its own, ``words.py``); correction: ``correction.py``.
"""

from __future__ import annotations

import math
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

_READ_IN_FULL = 20_000
"""Queries whose terms hold at most this many postings together are read in full: reading them
in index order costs less than probing candidates one by one."""

_CHEAP_TERM = 1000
"""An essential term with at most this many postings is read in full (its threshold is 0)."""

_SEEDS_PER_TERM = 4
"""Each term's highest-tf chunks read for the floor τ, in multiples of k."""

_SAFETY = 1e-9
"""Relative slack on τ: SQL's float sums may differ from Python's in the last bits."""


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
    """Top ``n`` chunks by BM25 over the whole collection; only scores > 0 (module docstring)."""
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
    scoring = _Scoring(conn, tables, row, weight, k, filters)
    if sum(df.values()) <= _READ_IN_FULL:
        rows = scoring.rows(None, {})
    else:
        seeds = scoring.rows(_HIGHEST_TF, {"per_term": _SEEDS_PER_TERM * k})
        floor = seeds[k - 1][-1] * (1.0 - _SAFETY) if len(seeds) >= k else 0.0
        if floor <= 0.0:
            rows = scoring.rows(None, {})
        else:
            rows = scoring.rows(_ABOVE_THRESHOLD, _thresholds(weight, df, floor, k1, b))
            rows = _merge(rows, seeds, k)
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


def _thresholds(
    weight: dict[str, float], df: dict[str, int], floor: float, k1: float, b: float
) -> dict[str, Any]:
    """MaxScore's skipped terms, and each essential term's share θ of ``floor`` (steps 2–3).

    Terms with few postings take θ = 0 (they are read in full, which costs little); the
    expensive ones share what is left in proportion to their bounds.
    """
    bound = {term: w * (k1 + 1.0) for term, w in weight.items()}
    skipped_bound = 0.0
    essential: list[str] = []
    for term in sorted(bound, key=lambda t: (bound[t], t)):
        if not essential and skipped_bound + bound[term] < floor:
            skipped_bound += bound[term]
        else:
            essential.append(term)
    expensive = [term for term in essential if df[term] > _CHEAP_TERM]
    share = floor - skipped_bound
    total = sum(bound[term] for term in expensive)
    read, weights, thetas, min_tfs = [], [], [], []
    for term in sorted(essential):
        theta = share * bound[term] / total if term in expensive else 0.0
        # Smallest tf that can reach θ at all (at dl = 0); the dl check in SQL decides.
        needed = theta / weight[term]
        if needed >= k1 + 1.0:
            continue  # no tf is high enough (only possible through rounding)
        min_tf = max(1, math.floor(needed * k1 * (1.0 - b) / (k1 + 1.0 - needed)))
        read.append(term)
        weights.append(weight[term])
        thetas.append(theta)
        min_tfs.append(min_tf)
    return {"read": read, "read_weights": weights, "thetas": thetas, "min_tfs": min_tfs}


def _merge(rows: list[tuple[Any, ...]], seeds: list[tuple[Any, ...]], k: int) -> list[Any]:
    """The best ``k`` of two scored row lists (plus ties with the k-th), each chunk once."""
    best: dict[Any, tuple[Any, ...]] = {}
    for r in (*rows, *seeds):
        best.setdefault(r[0], r)
    ordered = sorted(best.values(), key=lambda r: (-r[-1], r[0]))
    if len(ordered) <= k:
        return ordered
    cut = ordered[k - 1][-1]
    return [r for r in ordered if r[-1] >= cut]


# How the candidates' postings are found (the ``{hits}`` of _SCORED). Read in full: every
# posting of every query term. Otherwise candidate chunks (``{candidates}``) come first and are
# probed for every query term per (chunk, term) through the primary key: one descent and at
# most one row each, where the per-chunk index would fetch all of a chunk's postings
# (``OFFSET 0`` keeps the planner from turning the probes into a scan of the common terms'
# long posting lists).
_IN_FULL = (
    "SELECT p.chunk_id, p.term, p.tf, p.dl FROM {postings} p"
    " WHERE p.collection_id = %(coll)s AND p.term = ANY(%(terms)s){where}"
)
_PROBED = (
    "SELECT o.* FROM (SELECT DISTINCT chunk_id FROM ({candidates}) AS x) AS cand"
    " CROSS JOIN q CROSS JOIN LATERAL (SELECT p.chunk_id, p.term, p.tf, p.dl FROM {postings} p"
    "  WHERE p.collection_id = %(coll)s AND p.term = q.term AND p.chunk_id = cand.chunk_id"
    "  OFFSET 0) AS o"
)
_HIGHEST_TF = (
    "SELECT t.chunk_id FROM unnest(%(terms)s::text[]) AS r(term)"
    " CROSS JOIN LATERAL (SELECT p.chunk_id FROM {postings} p"
    "  WHERE p.collection_id = %(coll)s AND p.term = r.term{where}"
    "  ORDER BY p.tf DESC, p.dl LIMIT %(per_term)s) AS t"
)
_ABOVE_THRESHOLD = (
    "SELECT t.chunk_id FROM unnest(%(read)s::text[], %(read_weights)s::float8[],"
    "  %(thetas)s::float8[], %(min_tfs)s::int[]) AS r(term, w, theta, min_tf)"
    " CROSS JOIN LATERAL (SELECT p.chunk_id FROM {postings} p"
    "  WHERE p.collection_id = %(coll)s AND p.term = r.term AND p.tf >= r.min_tf"
    "  AND r.w * p.tf * (%(k1)s + 1.0)"
    "   / (p.tf + %(k1)s * (1.0 - %(b)s + %(b)s * p.dl / %(avgdl)s)) >= r.theta{where}) AS t"
)

# Each row: the chunk's columns, its length, its query terms and their tfs, and SQL's score.
_SCORED = (
    "WITH q AS (SELECT * FROM unnest(%(terms)s::text[], %(weights)s::float8[]) AS u(term, w)),"
    " hits AS ({hits}),"
    " scored AS MATERIALIZED ("
    "  SELECT h.chunk_id, array_agg(h.term) AS terms, array_agg(h.tf) AS tfs,"
    "   sum(q.w * h.tf * (%(k1)s + 1.0)"
    "    / (h.tf + %(k1)s * (1.0 - %(b)s + %(b)s * h.dl / %(avgdl)s))) AS score"
    "  FROM hits h JOIN q ON h.term = q.term GROUP BY h.chunk_id),"
    " cut AS (SELECT score FROM scored ORDER BY score DESC LIMIT 1 OFFSET %(k)s - 1)"
    " SELECT {chunk_columns}, c.token_count, s.terms, s.tfs, s.score"
    " FROM scored s JOIN {chunks} c ON c.id = s.chunk_id"
    " WHERE s.score >= coalesce((SELECT score FROM cut), '-infinity')"
    " ORDER BY s.score DESC, c.chunk_key LIMIT %(k)s"
)


class _Scoring:
    """Runs _SCORED for one query with one way of finding candidates."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        tables: Tables,
        row: CollectionRow,
        weight: dict[str, float],
        k: int,
        filters: str | None,
    ) -> None:
        self.conn, self.tables = conn, tables
        terms = sorted(weight)
        self.params: dict[str, Any] = {
            "terms": terms,
            "weights": [weight[t] for t in terms],
            "coll": row.id,
            "filters": filters,
            "k1": DEFAULT_K1,
            "b": DEFAULT_B,
            "avgdl": row.average_length,
            "k": k,
        }
        self.where = tables(_FILTER) if filters else sql.SQL("")

    def rows(self, candidates: str | None, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The top k chunks (at most) by SQL's BM25 sum, best first.

        ``candidates`` is the SQL giving the candidate chunks (scored on every query term), or
        None to read every posting of every query term.
        """
        if candidates is None:
            hits = self.tables(_IN_FULL, where=self.where)
        elif params.get("read") == []:
            return []
        else:
            hits = self.tables(_PROBED, candidates=self.tables(candidates, where=self.where))
        return self.conn.execute(
            self.tables(_SCORED, hits=hits), {**self.params, **params}
        ).fetchall()
