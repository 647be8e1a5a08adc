"""The filtered dense leg's signature pass on real vectors: recall and time against exact.

Not a test. Run from the repository root after ``bench/quality.py`` has filled its embedding
cache (``.bench-cache/embeddings.sqlite3``: the bundled model's vectors of SciFact and Vaswani
chunks and queries):
``PYTHONPATH=. .venv/bin/python bench/signature_recall.py [--queries 300] [--keep 1000]``.

What it does: every cached vector but ``--queries`` of them (chosen by a seeded RNG, which are
the queries) becomes a chunk of one PostgresStore collection, each with ``shard`` 0–9 (by its
position). For a filter keeping 10 % (``shard == 3``) and 30 % (``shard in [0, 1, 2]``) of the
chunks, each query runs through ``store.dense(..., n=50, filters)`` twice in the same process,
interleaved: with the signature pass (the default; it keeps ``--keep`` of the matches, the
store's ``QUANTIZED_KEEP``) and with every match ranked exactly (the same store with the pass
keeping all of them, so the baseline still pays for sorting the matches' signatures). It
prints recall@10 and recall@50 of the pass against the exact answer, the worst query's, and
p50 / p95 of both plans.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import time
import uuid
from pathlib import Path

import numpy as np

from bench.store_schema import drop_schema
from portal.embedded_db import database_url
from rag_plugin.filters import filters_from_json
from rag_plugin.stores.base import ChunkInput, DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres import dense as postgres_dense
from rag_plugin.vectors import DistanceMetric

CACHE_PATH = Path(".bench-cache/embeddings.sqlite3")
BATCH = 500


def cached_vectors() -> np.ndarray:
    with sqlite3.connect(CACHE_PATH) as cache:
        rows = cache.execute("SELECT vector FROM embedding_cache ORDER BY content_hash").fetchall()
    return np.stack([np.frombuffer(blob, dtype=np.float64) for (blob,) in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--keep", type=int, default=postgres_dense.QUANTIZED_KEEP)
    args = parser.parse_args()
    vectors = cached_vectors()
    order = list(range(len(vectors)))
    random.Random(17).shuffle(order)
    queries, corpus = vectors[order[: args.queries]], vectors[order[args.queries :]]
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    store = PostgresStore(database_url(), schema=schema)
    try:
        collection = store.create_collection(
            "signatures",
            dimensions=vectors.shape[1],
            embedding_model="bundled",
            metric=DistanceMetric.COSINE,
        )
        for start in range(0, len(corpus), BATCH):
            chunks = [
                ChunkInput(i - start, f"v{i}", 0, 1, corpus[i].tolist(), {"shard": i % 10})
                for i in range(start, min(start + BATCH, len(corpus)))
            ]
            store.upsert_document(collection, DocumentInput(source=f"d{start}"), chunks)
        print(
            f"{len(corpus):,} chunks of real vectors, {len(queries)} queries, "
            f"signature pass keeps {args.keep}"
        )
        filters = {
            "10 % (shard == 3)": {"shard": 3},
            "30 % (shard in 0..2)": filters_from_json(
                {"filters": [{"key": "shard", "operator": "in", "value": [0, 1, 2]}]}
            ),
        }
        for name, where in filters.items():
            recall10, recall50 = [], []
            times: dict[str, list[float]] = {"signatures": [], "exact": []}
            plans = set()
            for j, query in enumerate(queries.tolist()):
                answers = {}
                for plan in ("signatures", "exact") if j % 2 else ("exact", "signatures"):
                    postgres_dense.QUANTIZED_KEEP = args.keep if plan == "signatures" else 10**9
                    started = time.perf_counter()
                    hits = store.dense(collection, query, 50, where)
                    times[plan].append((time.perf_counter() - started) * 1000)
                    answers[plan] = [h.chunk.id for h in hits]
                    if plan == "signatures":
                        plans.add(store.last_dense_plan)
                exact = answers["exact"]
                recall10.append(len(set(answers["signatures"][:10]) & set(exact[:10])) / 10)
                recall50.append(len(set(answers["signatures"]) & set(exact)) / len(exact))
            print(f"\nfilter {name}: plan {sorted(plans)}")
            print(
                f"  recall@10 {statistics.mean(recall10):.4f} (worst {min(recall10):.2f}), "
                f"recall@50 {statistics.mean(recall50):.4f} (worst {min(recall50):.2f})"
            )
            for plan, samples in times.items():
                ordered = sorted(samples)
                p95 = ordered[int(0.95 * (len(ordered) - 1))]
                print(f"  {plan:10s} p50 {statistics.median(ordered):6.1f}  p95 {p95:6.1f} ms")
            ratio = statistics.median(times["signatures"]) / statistics.median(times["exact"])
            print(f"  signatures ÷ exact at p50: {ratio:.2f}×")
    finally:
        store.close()
        drop_schema(database_url(), schema)


if __name__ == "__main__":
    main()
