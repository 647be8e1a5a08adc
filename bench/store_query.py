"""PostgresStore query latency, HNSW recall, ingest rate and memory vs stock LlamaIndex.

Not a test. Run from the repository root:
``PYTHONPATH=. .venv/bin/python bench/store_query.py [--sizes 10000 100000] [--queries 200]``.

For each size it loads one collection of synthetic chunks (Zipf-distributed words from a
20k-word vocabulary; clustered random 384-d unit vectors, no model) through ``upsert_document``
in documents of 10 chunks, then measures p50/p95 of semantic, BM25 and hybrid (dense + BM25 +
fuzzy legs at 2k each, weighted RRF 0.6/0.3/0.1) queries, HNSW recall@10 against the exact
answer, and the app process's RSS before and after its queries (queries run in a fresh process
so its memory is the app's, not the generator's). The same queries then go through stock
LlamaIndex in this run: ``VectorStoreIndex`` (SimpleVectorStore), ``BM25Retriever`` and
``QueryFusionRetriever(mode=FUSION_MODES.RECIPROCAL_RANK)``.

At the largest size the HNSW index is dropped during the load and built once afterwards (a bulk
load, as an operator would do it); the build time is reported separately. Smaller sizes are
ingested with the index live, which is what the reported ingest rate means there.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from portal.embedded_db import database_url
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput, ScoredChunk
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres.schema import ensure_vector_index, vector_index_name
from rag_plugin.vectors import DistanceMetric

DIMENSIONS = 384
VOCABULARY_SIZE = 20_000
CLUSTERS = 200
CHUNKS_PER_DOCUMENT = 10
WEIGHTS = {"semantic": 0.6, "bm25": 0.3, "fuzzy": 0.1}
RRF_K = 60.0


def vocabulary() -> list[str]:
    rng = np.random.default_rng(11)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: set[str] = set()
    while len(words) < VOCABULARY_SIZE:
        words.add("".join(rng.choice(letters, size=int(rng.integers(3, 10)))))
    return sorted(words)


WORDS = vocabulary()
ZIPF = 1.0 / np.arange(1, VOCABULARY_SIZE + 1)
ZIPF /= ZIPF.sum()


def centroids() -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(5)
    c = rng.normal(size=(CLUSTERS, DIMENSIONS))
    normalised: np.ndarray[Any, Any] = c / np.linalg.norm(c, axis=1, keepdims=True)
    return normalised


CENTROIDS = centroids()


def vectors(rng: np.random.Generator, count: int) -> np.ndarray[Any, Any]:
    picks = CENTROIDS[rng.integers(0, CLUSTERS, size=count)]
    v = picks + rng.normal(scale=0.6 / np.sqrt(DIMENSIONS) * 3, size=(count, DIMENSIONS))
    normalised: np.ndarray[Any, Any] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return normalised


def texts(rng: np.random.Generator, count: int) -> list[str]:
    lengths = rng.integers(20, 60, size=count)
    ids = rng.choice(VOCABULARY_SIZE, size=int(lengths.sum()), p=ZIPF)
    out, start = [], 0
    for length in lengths:
        out.append(" ".join(WORDS[i] for i in ids[start : start + length]))
        start += length
    return out


def batches(size: int) -> Iterator[tuple[list[str], np.ndarray[Any, Any]]]:
    """The corpus in batches of documents, regenerated identically from the seed."""
    rng = np.random.default_rng(size)
    step = 1000
    for _ in range(0, size, step):
        yield texts(rng, step), vectors(rng, step)


def queries(count: int) -> tuple[list[str], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(99)
    words = [
        " ".join(
            WORDS[i] for i in rng.choice(VOCABULARY_SIZE, size=int(rng.integers(2, 4)), p=ZIPF)
        )
        for _ in range(count)
    ]
    return words, vectors(rng, count)


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def timed(run: Callable[[int], object], count: int) -> tuple[float, float]:
    samples = []
    for i in range(count):
        started = time.perf_counter()
        run(i)
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def fuse(legs: dict[str, list[ScoredChunk]], top_k: int) -> list[str]:
    scores: dict[str, float] = {}
    for leg, hits in legs.items():
        for rank, hit in enumerate(hits, start=1):
            scores[hit.chunk.id] = scores.get(hit.chunk.id, 0.0) + WEIGHTS[leg] / (RRF_K + rank)
    return sorted(scores, key=lambda cid: (-scores[cid], cid))[:top_k]


def load(store: PostgresStore, dsn: str, size: int, bulk: bool) -> tuple[CollectionInfo, float]:
    collection = store.create_collection(
        f"bench_{size}", dimensions=DIMENSIONS, embedding_model="synthetic"
    )
    if bulk:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP INDEX IF EXISTS {}").format(
                    sql.Identifier(
                        store.schema, vector_index_name(DIMENSIONS, DistanceMetric.COSINE)
                    )
                )
            )
    spent = 0.0
    number = 0
    for chunk_texts, chunk_vectors in batches(size):
        prepared = [
            (
                DocumentInput(source=f"doc{number + d}"),
                [
                    ChunkInput(j, text, 0, len(text), vector.tolist())
                    for j, (text, vector) in enumerate(
                        zip(
                            chunk_texts[d * CHUNKS_PER_DOCUMENT : (d + 1) * CHUNKS_PER_DOCUMENT],
                            chunk_vectors[d * CHUNKS_PER_DOCUMENT : (d + 1) * CHUNKS_PER_DOCUMENT],
                            strict=True,
                        )
                    )
                ],
            )
            for d in range(len(chunk_texts) // CHUNKS_PER_DOCUMENT)
        ]
        started = time.perf_counter()
        for document, chunks in prepared:
            store.upsert_document(collection, document, chunks)
        spent += time.perf_counter() - started
        number += len(prepared)
    return collection, spent


def build_index(store: PostgresStore, dsn: str) -> float:
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        ensure_vector_index(
            conn,
            store.schema,
            DIMENSIONS,
            DistanceMetric.COSINE,
            m=store.hnsw_m,
            ef_construction=store.hnsw_ef_construction,
        )
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(store.schema, "rag_chunks")))
    return time.perf_counter() - started


def query_process(dsn: str, schema: str, name: str, count: int, out: Any) -> None:
    """Run in a fresh process: the latencies, recall and RSS of an app process."""
    before = rss_mib()
    store = PostgresStore(dsn, schema=schema, create_schema=False)
    exact = PostgresStore(dsn, schema=schema, create_schema=False, exact_search_below=10**12)
    collection = store.get_collection(name)
    words, vecs = queries(count)
    query_vectors = [v.tolist() for v in vecs]
    for i in range(min(20, count)):  # warm the caches and connections
        store.dense(collection, query_vectors[i], 10)
        store.bm25(collection, words[i], 10)
    result: dict[str, Any] = {"rss_start": before, "rss_ready": rss_mib()}
    result["semantic"] = timed(lambda i: store.dense(collection, query_vectors[i], 10), count)
    result["plan"] = store.last_dense_plan
    result["bm25"] = timed(lambda i: store.bm25(collection, words[i], 10), count)
    result["fuzzy"] = timed(lambda i: store.fuzzy(collection, words[i], 10), count)

    def hybrid(i: int) -> list[str]:
        legs = {
            "semantic": store.dense(collection, query_vectors[i], 20),
            "bm25": store.bm25(collection, words[i], 20),
            "fuzzy": store.fuzzy(collection, words[i], 20),
        }
        return fuse(legs, 10)

    result["hybrid"] = timed(hybrid, count)
    found = 0
    recall_queries = min(count, 100)
    for i in range(recall_queries):
        approximate = {h.chunk.id for h in store.dense(collection, query_vectors[i], 10)}
        truth = {h.chunk.id for h in exact.dense(collection, query_vectors[i], 10)}
        found += len(approximate & truth)
    result["recall@10"] = found / (10 * recall_queries)
    result["exact_semantic"] = timed(
        lambda i: exact.dense(collection, query_vectors[i], 10), min(count, 30)
    )
    result["rss_end"] = rss_mib()
    out.put(result)


def llama_index(size: int, count: int) -> dict[str, Any]:
    """The same queries through stock LlamaIndex retrievers, all in this process."""
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
    from llama_index.core.schema import QueryBundle, TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    Settings.llm = MockLLM()
    Settings.embed_model = MockEmbedding(embed_dim=DIMENSIONS)
    nodes: list[TextNode] = []
    for chunk_texts, chunk_vectors in batches(size):
        nodes.extend(
            TextNode(text=text, embedding=vector.tolist())
            for text, vector in zip(chunk_texts, chunk_vectors, strict=True)
        )
    started = time.perf_counter()
    index = VectorStoreIndex(nodes)
    vector_retriever = index.as_retriever(similarity_top_k=20)
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=20)
    fusion = QueryFusionRetriever(
        [vector_retriever, bm25],
        mode=FUSION_MODES.RECIPROCAL_RANK,
        num_queries=1,
        similarity_top_k=10,
        use_async=False,
    )
    build = time.perf_counter() - started
    words, vecs = queries(count)
    bundles = [QueryBundle(w, embedding=v.tolist()) for w, v in zip(words, vecs, strict=True)]
    vector_10 = index.as_retriever(similarity_top_k=10)
    return {
        "build_s": build,
        "semantic": timed(lambda i: vector_10.retrieve(bundles[i]), count),
        "bm25": timed(lambda i: bm25.retrieve(bundles[i]), count),
        "hybrid": timed(lambda i: fusion.retrieve(bundles[i]), count),
        "rss": rss_mib(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--llama-queries",
        type=int,
        default=30,
        help="queries through LlamaIndex (its dense search is slow at 100k)",
    )
    parser.add_argument("--skip-llama", action="store_true")
    args = parser.parse_args()
    dsn = database_url()
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    store = PostgresStore(dsn, schema=schema)
    context = multiprocessing.get_context("spawn")
    try:
        for size in args.sizes:
            bulk = size == max(args.sizes) and size > 10_000
            collection, seconds = load(store, dsn, size, bulk)
            build = build_index(store, dsn) if bulk else 0.0
            with psycopg.connect(dsn, autocommit=True) as conn:
                # Settle the freshly loaded tables, so autovacuum does not run during queries.
                for table in ("rag_postings", "rag_chunks", "rag_vocabulary", "rag_documents"):
                    conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, table)))
            mode = "bulk, HNSW built after" if bulk else "HNSW maintained live"
            print(f"\n== {size} chunks ({mode}) ==")
            print(
                f"ingest: {size / seconds:,.0f} chunks/s ({seconds:.1f} s)"
                + (f"; HNSW build {build:.1f} s" if bulk else "")
            )
            out = context.Queue()
            child = context.Process(
                target=query_process, args=(dsn, schema, collection.name, args.queries, out)
            )
            child.start()
            ours = out.get()
            child.join()
            print(
                f"app RSS MiB: start {ours['rss_start']:.0f}, ready {ours['rss_ready']:.0f}, "
                f"after {args.queries * 4} queries {ours['rss_end']:.0f}"
            )
            print(f"recall@10 (HNSW vs exact): {ours['recall@10']:.3f}; dense plan: {ours['plan']}")
            print(
                f"exact dense scan p50/p95: {ours['exact_semantic'][0]:.1f} / "
                f"{ours['exact_semantic'][1]:.1f} ms"
            )
            for leg in ("semantic", "bm25", "fuzzy", "hybrid"):
                print(f"ours {leg:<9} p50 {ours[leg][0]:7.1f} ms  p95 {ours[leg][1]:7.1f} ms")
            theirs = None if args.skip_llama else llama_index(size, args.llama_queries)
            if theirs:
                print(f"LlamaIndex build {theirs['build_s']:.1f} s, RSS {theirs['rss']:.0f} MiB")
            print(
                f"{'leg':<9}{'ours p50':>10}{'ours p95':>10}{'LI p50':>10}{'LI p95':>10}"
                f"{'p95 ratio LI/ours':>19}"
            )
            for leg in ("semantic", "bm25", "fuzzy", "hybrid"):
                p50, p95 = ours[leg]
                line = f"{leg:<9}{p50:>10.1f}{p95:>10.1f}"
                if theirs and leg in theirs:
                    t50, t95 = theirs[leg]
                    line += f"{t50:>10.1f}{t95:>10.1f}{t95 / p95:>19.1f}"
                print(line)
    finally:
        store.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


if __name__ == "__main__":
    main()
