"""The dense leg in SQL: an exact scan for small sets, HNSW with iterative scans for large ones.

Which plan runs is decided here, explicitly, rather than left to the planner:

- a collection with fewer than ``exact_below`` chunks is ranked exactly: its rows come from
  the btree on ``collection_id`` and are sorted by ``embedding <op> q``, an expression no
  HNSW index can serve. Exact, and fast for the many small per-user collections;
- a filtered query whose filter matches fewer than ``exact_below`` chunks (counted in the
  narrow filter table by a bounded query that stops there) is ranked exactly too, by the
  primary key of those ids. With cosine distance and more matches than
  :func:`quantized_keep`, a first pass over the filter table keeps the matches whose binary
  signatures (the signs of the vector, migration 14) are nearest the query's by Hamming
  distance, and only those are ranked exactly: 1,000 of 9,869 matches at 100k chunks, ≈ 3×
  cheaper than ranking them all. Signs approximate the angle, so this pass is for cosine
  only (an inner product also weighs the lengths); on the bundled model's vectors it kept
  every one of the exact top 50 in the mean (``QUANTIZED_KEEP``);
- otherwise the query uses the partial HNSW index of its (dimension, metric) by ordering on
  the indexed expression ``embedding::vector(d) <op> q::vector(d)`` under the index's
  predicate, with ``hnsw.iterative_scan = relaxed_order`` (pgvector 0.8) so the scan keeps
  going until the LIMIT is met after the collection and metadata filters, and ``ef_search``
  widened by the collection's share of the index (so it means the same per collection).
  Relaxed order is
  re-sorted in the outer query. If the scan still comes back short (it gives up after
  ``hnsw.max_scan_tuples``), the exact plan answers instead, so k results come back whenever
  k exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.lexical.slots import IntArray
from rag_plugin.stores.base import ScoredChunk
from rag_plugin.stores.postgres.block_reads import decode_int_array
from rag_plugin.stores.postgres.filters import SqlFilter
from rag_plugin.stores.postgres.rows import (
    CollectionRow,
    Tables,
    chunk_record,
    vector_literal,
)
from rag_plugin.stores.postgres.schema import HNSW_MAX_DIMENSIONS
from rag_plugin.vectors import DistanceMetric, distance_to_similarity

__all__ = ["QUANTIZED_KEEP", "DensePlan", "dense_search", "quantized_keep"]

OPERATORS = {
    DistanceMetric.COSINE: "<=>",
    DistanceMetric.L2: "<->",
    DistanceMetric.INNER_PRODUCT: "<#>",
}


QUANTIZED_KEEP = 1000
"""At least this many of a filter's matches (and 20 per result asked for) are ranked exactly
after the signatures' first pass. Measured on the bundled model's vectors of SciFact and
Vaswani (300 queries, a random 30 % filter, 6,072 matches): keeping 1,000 found every one of
the exact top 50 in the mean (the worst query 49 of 50), 500 found 99.5 %, 200 found 95 %.
Through this store (``bench/signature_recall.py``, 20,240 chunks, n = 50): recall@50 0.9999
for a 10 % filter and 0.9993 for 30 %."""


class DensePlan:
    """Names of the plans, recorded on the store for tests and benchmarks."""

    EXACT = "exact"
    QUANTIZED = "signatures+exact"
    HNSW = "hnsw"
    HNSW_THEN_EXACT = "hnsw+exact"


def dense_search(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    vector: Sequence[float],
    n: int,
    filters: SqlFilter | None,
    *,
    ef_search: int,
    exact_below: int,
) -> tuple[list[ScoredChunk], str]:
    """Top ``n`` chunks of the collection by similarity, and the plan that found them."""
    query = vector_literal(vector)
    indexable = row.info.dimensions <= HNSW_MAX_DIMENSIONS
    if not indexable or row.chunk_count < exact_below:
        return _exact(conn, tables, row, query, n, filters), DensePlan.EXACT
    if filters is not None:
        # The filter's matches, read from the filter table no further than the bound: fewer
        # than that, and the exact plan ranks them (or the best of them by signature).
        keep = quantized_keep(n) if row.info.metric is DistanceMetric.COSINE else None
        count, candidates = _filtered_candidates(
            conn, tables, row, query, filters, limit=exact_below, keep=keep
        )
        if count < exact_below:
            plan = DensePlan.EXACT if keep is None or count <= keep else DensePlan.QUANTIZED
            return _exact(conn, tables, row, query, n, filters, candidates), plan
    hits = _approximate(conn, tables, row, query, n, filters, ef_search=ef_search)
    if len(hits) >= n:
        return hits, DensePlan.HNSW
    return _exact(conn, tables, row, query, n, filters), DensePlan.HNSW_THEN_EXACT


def quantized_keep(n: int) -> int:
    """How many of a filter's matches the binary signatures pass on to the exact ranking."""
    return max(QUANTIZED_KEEP, 20 * n)


def _filtered_candidates(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    query: str,
    filters: SqlFilter,
    *,
    limit: int,
    keep: int | None,
) -> tuple[int, IntArray]:
    """How many chunks match ``filters`` (counted up to ``limit``), and the ids of the
    ``keep`` of them whose signatures are nearest the query's (all of them when they are
    ``keep`` or fewer, or ``keep`` is None: then no signature is compared), from the filter
    table alone, in one statement."""
    nearest = (
        sql.SQL(" ORDER BY signature <~> binary_quantize(%(q)s::vector), id")
        if keep is not None
        else sql.SQL("")
    )
    found = conn.execute(
        tables(
            "WITH m AS MATERIALIZED (SELECT c.chunk_id AS id, c.signature FROM {chunk_filters} c"
            "  WHERE c.collection_id = %(coll)s AND {condition} LIMIT %(limit)s)"
            " SELECT (SELECT count(*) FROM m),"
            " array_send(ARRAY(SELECT id FROM m{nearest} LIMIT %(keep)s))",
            condition=filters.condition,
            nearest=nearest,
        ),
        {**filters.params, "coll": row.id, "limit": limit, "keep": keep, "q": query},
        binary=True,
    ).fetchone()
    assert found is not None  # an aggregate always returns its row
    return int(found[0]), decode_int_array(found[1], wide=True)


def _where(
    filters: SqlFilter | None, matching: IntArray | None = None
) -> tuple[sql.Composable, dict[str, Any]]:
    """The filter as an ``AND`` clause on ``c`` with its parameters (nothing without one):
    the chunk ids that match it when they are known, else the condition on each row."""
    if matching is not None:
        return sql.SQL(" AND c.id = ANY(%(matching)s::bigint[])"), {"matching": matching.tolist()}
    if filters is None:
        return sql.SQL(""), {}
    return sql.SQL(" AND {}").format(filters.condition), filters.params


def _scored(row: CollectionRow, rows: list[tuple[Any, ...]]) -> list[ScoredChunk]:
    metric = row.info.metric
    return [
        ScoredChunk(chunk_record(r), distance_to_similarity(float(r[-1]), metric)) for r in rows
    ]


def _exact(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    query: str,
    n: int,
    filters: SqlFilter | None,
    matching: IntArray | None = None,
) -> list[ScoredChunk]:
    where, params = _where(filters, matching)
    rows = conn.execute(
        tables(
            "SELECT {chunk_columns}, c.embedding {op} %(q)s::vector AS distance"
            " FROM {chunks} c WHERE c.collection_id = %(coll)s{where}"
            " ORDER BY distance, c.chunk_key LIMIT %(n)s",
            op=sql.SQL(OPERATORS[row.info.metric]),
            where=where,
        ),
        {**params, "q": query, "coll": row.id, "n": n},
    ).fetchall()
    return _scored(row, rows)


def _approximate(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    query: str,
    n: int,
    filters: SqlFilter | None,
    *,
    ef_search: int,
) -> list[ScoredChunk]:
    # Transaction-local settings: they end with this query's transaction, whoever's
    # connection it is. ef_search below n would cap each scan pass at fewer than n rows.
    # ef_search is meant per collection, but the index holds every collection of this
    # (dimension, metric): a collection that is a share s of it sees about s·ef of each pass's
    # candidates, so the pass is widened by 1/s (pgvector caps ef_search at 1,000).
    conn.execute(
        tables(
            "SELECT set_config('hnsw.ef_search', least(1000, greatest(%(n)s,"
            "  ceil(%(ef)s * sum(chunk_count)::float8 / %(own)s)))::int::text, true),"
            " set_config('hnsw.iterative_scan', 'relaxed_order', true)"
            " FROM {collections} WHERE dimensions = %(dims)s AND metric = %(metric)s"
        ),
        {
            "n": n,
            "ef": ef_search,
            "own": max(row.chunk_count, 1),
            "dims": row.info.dimensions,
            "metric": row.info.metric.value,
        },
    )
    dims = sql.Literal(row.info.dimensions)
    where, params = _where(filters)
    rows = conn.execute(
        tables(
            "WITH hits AS MATERIALIZED ("
            " SELECT c.id, (c.embedding::vector({dims})) {op} %(q)s::vector({dims}) AS distance"
            " FROM {chunks} c WHERE c.dimensions = {dims} AND c.metric = {metric}"
            " AND c.collection_id = %(coll)s{where} ORDER BY distance LIMIT %(n)s)"
            " SELECT {chunk_columns}, h.distance FROM hits h JOIN {chunks} c ON c.id = h.id"
            " ORDER BY h.distance, c.chunk_key",
            dims=dims,
            op=sql.SQL(OPERATORS[row.info.metric]),
            metric=sql.Literal(row.info.metric.value),
            where=where,
        ),
        {**params, "q": query, "coll": row.id, "n": n},
    ).fetchall()
    return _scored(row, rows)
