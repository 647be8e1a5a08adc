"""PostgresStore query latency, HNSW recall, ingest rate and memory vs stock LlamaIndex.

Not a test. Run from the repository root:
``PYTHONPATH=. .venv/bin/python bench/store_query.py [--sizes 10000 100000] [--queries 200]``
``[--schema NAME] [--query-mix zipf|natural] [--analyzer seed|english]``.

``--schema NAME`` keeps the loaded collections in that schema after the run and reuses them on
the next run (the 100k load takes minutes), migrating the schema first if the store's tables
changed. ``--query-mix zipf`` (the default) draws query words from the corpus's Zipf
distribution, so about half of them are head words — the synthetic corpus's stopwords, which
the seed analyzer keeps — and BM25/fuzzy read long posting lists; ``natural`` draws 2-5 words
from outside the 100 most frequent ones, like a content-word query. ``--analyzer english``
loads a separate collection whose 100 most frequent words are real English stopwords (the
analyzer drops them), so the head of the distribution is handled as in English text.

For each size it loads one collection of synthetic chunks (Zipf-distributed words from a
20k-word vocabulary; clustered random 384-d unit vectors, no model) through ``upsert_document``
in documents of 10 chunks, then measures p50/p95 of semantic, BM25 and hybrid (dense + BM25 +
fuzzy legs at 2k each, fused with the engine's default weights and k) queries, HNSW
recall@10 against the exact answer, and the app process's RSS before and after its queries
(queries run in a fresh process so its memory is the app's, not the generator's). The same
queries then go through stock LlamaIndex in this run: ``VectorStoreIndex``
(SimpleVectorStore), ``BM25Retriever`` and
``QueryFusionRetriever(mode=FUSION_MODES.RECIPROCAL_RANK)``.

At the largest size the HNSW index is dropped during the load and built once afterwards (a bulk
load, as an operator would do it); the build time is reported separately. Smaller sizes are
ingested with the index live, which is what the reported ingest rate means there.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
import uuid
from typing import Any

import psycopg
from psycopg import sql

from bench.measure import rss_mib, timed
from bench.stock_llama import query_bundle, stock_retrievers
from bench.store_schema import (
    DIMENSIONS,
    build_index,
    drop_schema,
    drop_vector_index,
    kept_collection,
)
from bench.synthetic_corpus import ANALYZERS, batches, queries
from portal.embedded_db import database_url
from rag_plugin.embedding.base import Embedder
from rag_plugin.engine import CollectionSearcher
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput
from rag_plugin.stores.postgres import PostgresStore

CHUNKS_PER_DOCUMENT = 10


def collection_name(size: int, analyzer: str) -> str:
    return f"bench_{size}" if analyzer == "seed" else f"bench_{size}_{analyzer}"


def load(
    store: PostgresStore, dsn: str, size: int, bulk: bool, analyzer: str
) -> tuple[CollectionInfo, float]:
    collection = store.create_collection(
        collection_name(size, analyzer),
        dimensions=DIMENSIONS,
        embedding_model="synthetic",
        analyzer=analyzer,
    )
    if bulk:
        drop_vector_index(store, dsn)
    spent = 0.0
    number = 0
    for chunk_texts, chunk_vectors in batches(size, analyzer):
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


def index_share(dsn: str, schema: str, collection: CollectionInfo) -> str:
    """How many vectors the collection's HNSW index holds: every collection of the schema
    with the same dimension and metric shares it, and the dense leg walks all of them."""
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            sql.SQL(
                "SELECT count(*), sum(chunk_count) FROM {} WHERE dimensions = %s AND metric = %s"
            ).format(sql.Identifier(schema, "rag_collections")),
            (collection.dimensions, collection.metric.value),
        ).fetchone()
    collections, vectors = found if found else (0, 0)
    return f"HNSW index: {vectors:,} vectors of {collections} collection(s) in schema {schema}"


class PrecomputedEmbedder(Embedder):
    """The bench's query vectors by query text, so hybrid runs through the real engine."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        super().__init__()
        self._vectors = vectors

    @property
    def model_name(self) -> str:
        return "synthetic"

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        return [self._vectors[text] for text in texts]


def query_process(
    dsn: str, schema: str, name: str, count: int, mix: str, analyzer: str, out: Any
) -> None:
    """Run in a fresh process: the latencies, recall and RSS of an app process."""
    before = rss_mib()
    store = PostgresStore(dsn, schema=schema, create_schema=False)
    exact = PostgresStore(dsn, schema=schema, create_schema=False, exact_search_below=10**12)
    collection = store.get_collection(name)
    words, vecs = queries(count, mix, analyzer)
    query_vectors = [v.tolist() for v in vecs]
    searcher = CollectionSearcher(
        store, PrecomputedEmbedder(dict(zip(words, query_vectors, strict=True)))
    )
    for i in range(min(20, count)):  # warm the caches and connections
        store.dense(collection, query_vectors[i], 10)
        store.bm25(collection, words[i], 10)
    result: dict[str, Any] = {"rss_start": before, "rss_ready": rss_mib()}
    result["semantic"] = timed(lambda i: store.dense(collection, query_vectors[i], 10), count)
    result["plan"] = store.last_dense_plan
    result["bm25"] = timed(lambda i: store.bm25(collection, words[i], 10), count)
    result["fuzzy"] = timed(lambda i: store.fuzzy(collection, words[i], 10), count)
    # The app's path: CollectionSearcher runs the three legs (2·top_k each) and fuses them.
    result["hybrid"] = timed(
        lambda i: searcher.search(collection, words[i], strategy="hybrid", top_k=10),
        count,
    )
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


def llama_index(size: int, count: int, mix: str) -> dict[str, Any]:
    """The same queries through stock LlamaIndex retrievers, all in this process."""
    stock = stock_retrievers(
        (
            (text, vector.tolist())
            for chunk_texts, chunk_vectors in batches(size, "seed")
            for text, vector in zip(chunk_texts, chunk_vectors, strict=True)
        ),
        DIMENSIONS,
    )
    words, vecs = queries(count, mix, "seed")
    bundles = [query_bundle(w, v.tolist()) for w, v in zip(words, vecs, strict=True)]
    return {
        "build_s": stock.build_s,
        "semantic": timed(lambda i: stock.semantic.retrieve(bundles[i]), count),
        "bm25": timed(lambda i: stock.bm25.retrieve(bundles[i]), count),
        "hybrid": timed(lambda i: stock.hybrid.retrieve(bundles[i]), count),
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
    parser.add_argument(
        "--schema", help="load into (or reuse) this schema and keep it after the run"
    )
    parser.add_argument("--query-mix", choices=("zipf", "natural"), default="zipf")
    parser.add_argument("--analyzer", choices=ANALYZERS, default="seed")
    args = parser.parse_args()
    dsn = database_url()
    schema = args.schema or f"bench_{uuid.uuid4().hex[:8]}"
    store = PostgresStore(dsn, schema=schema)  # creates or migrates the tables
    context = multiprocessing.get_context("spawn")
    print(f"schema {schema}, query mix {args.query_mix}, analyzer {args.analyzer}")
    try:
        for size in args.sizes:
            bulk = size == max(args.sizes) and size > 10_000
            collection = kept_collection(store, collection_name(size, args.analyzer), size)
            if collection is None:
                collection, seconds = load(store, dsn, size, bulk, args.analyzer)
                build = build_index(store, dsn) if bulk else 0.0
                mode = "bulk, HNSW built after" if bulk else "HNSW maintained live"
                ingest = f"ingest: {size / seconds:,.0f} chunks/s ({seconds:.1f} s)" + (
                    f"; HNSW build {build:.1f} s" if bulk else ""
                )
            else:
                mode, ingest = "reused", "ingest: not measured (collection reused)"
            with psycopg.connect(dsn, autocommit=True) as conn:
                # Settle the freshly loaded tables, so autovacuum does not run during queries.
                for table in ("rag_term_blocks", "rag_chunks", "rag_vocabulary", "rag_documents"):
                    conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, table)))
            print(f"\n== {size} chunks ({mode}) ==")
            print(ingest)
            print(index_share(dsn, schema, collection))
            out = context.Queue()
            child = context.Process(
                target=query_process,
                args=(
                    dsn,
                    schema,
                    collection.name,
                    args.queries,
                    args.query_mix,
                    args.analyzer,
                    out,
                ),
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
            theirs = (
                None
                if args.skip_llama or args.analyzer != "seed"
                else llama_index(size, args.llama_queries, args.query_mix)
            )
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
        if not args.schema:
            drop_schema(dsn, schema)


if __name__ == "__main__":
    main()
