"""``bench/real_query.py --store qdrant``: the same real chunks and queries through the Qdrant
store and, as the baseline in the same process, the PostgreSQL store.

The Qdrant store runs in qdrant-client's local mode (Qdrant's Python implementation inside this
process, in a temporary folder): no Qdrant server is installable here, so these figures say
what the store's own work costs and what local mode costs, **not** how a Qdrant server
performs. Local mode scans every point for each filtered request (it has no payload indexes),
so it is slow by design at this size; a server answers the same requests from its keyword
indexes. One client, strategies and stores interleaved per query after a warm-up of 5.
"""

from __future__ import annotations

import tempfile
import time
import zlib
from typing import Any

from rag_plugin.engine import CollectionSearcher
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput, Store
from rag_plugin.stores.qdrant import QdrantStore
from rag_plugin.testing import FakeEmbedder, fake_vector

__all__ = ["compare"]


def load_qdrant(
    store: QdrantStore, like: CollectionInfo, documents: Any, shards: int, batch_size: int
) -> tuple[CollectionInfo, float]:
    """Load ``documents`` (source, texts) as bench.real_corpus.load does in PostgreSQL; seconds."""
    collection = store.create_collection(
        like.name,
        dimensions=like.dimensions,
        embedding_model=like.embedding_model,
        analyzer=like.analyzer,
    )
    started = time.perf_counter()
    batch: list[tuple[DocumentInput, list[ChunkInput]]] = []
    for source, texts in documents:
        chunks = [
            ChunkInput(
                j,
                t,
                0,
                len(t),
                fake_vector(t, like.dimensions),
                {"shard": zlib.crc32(f"{source}_{j}".encode()) % shards},
            )
            for j, t in enumerate(texts)
        ]
        batch.append((DocumentInput(source=source), chunks))
        if len(batch) == batch_size:
            store.upsert_documents(collection, batch)
            batch = []
    if batch:
        store.upsert_documents(collection, batch)
    return store.get_collection(like.name), time.perf_counter() - started


def compare(
    postgres: Store,
    collection: CollectionInfo,
    documents: Any,
    picks: list[int],
    searches: Any,
    strategies: tuple[str, ...],
    quantiles: Any,
    shards: int,
    batch_size: int,
) -> None:
    """Load the Qdrant store, then time every strategy on both stores and print the table."""
    with tempfile.TemporaryDirectory(prefix="bench-qdrant-") as folder:
        store = QdrantStore(path=folder)
        loaded, seconds = load_qdrant(store, collection, documents, shards, batch_size)
        print(
            f"qdrant local mode: loaded {loaded.chunk_count:,} chunks in {seconds:.0f} s "
            f"({loaded.chunk_count / seconds:,.0f} chunks/s)"
        )
        embedder = FakeEmbedder(collection.dimensions)
        runs = {
            "postgres": searches(CollectionSearcher(postgres, embedder), collection),
            "qdrant": searches(CollectionSearcher(store, embedder), loaded),
        }
        for run in runs.values():  # warm-up
            for strategy in strategies:
                for i in picks[:5]:
                    run[strategy](i)
        times: dict[tuple[str, str], list[float]] = {}
        for i in picks:
            for strategy in strategies:
                for name, run in runs.items():
                    started = time.perf_counter()
                    run[strategy](i)
                    spent = (time.perf_counter() - started) * 1000
                    times.setdefault((name, strategy), []).append(spent)
        store.close()
    print(f"\n{len(picks)} queries, ms (p50 / p95 / p99 / max); ratio of p95 and p99 to PostgreSQL")
    print("| strategy | PostgreSQL | Qdrant local mode | p95 ratio | p99 ratio |")
    print("|---|---|---|---:|---:|")
    for strategy in strategies:
        pg, qd = quantiles(times[("postgres", strategy)]), quantiles(times[("qdrant", strategy)])
        cells = [" / ".join(f"{q[k]:.1f}" for k in ("p50", "p95", "p99", "max")) for q in (pg, qd)]
        print(
            f"| {strategy} | {cells[0]} | {cells[1]} | {qd['p95'] / pg['p95']:.1f}× "
            f"| {qd['p99'] / pg['p99']:.1f}× |"
        )
