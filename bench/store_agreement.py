"""How closely a store's legs agree with the memory store's on real text (issue 18).

Not a test. Run from the repository root, e.g.:
``PYTHONPATH=. .venv/bin/python bench/store_agreement.py --store qdrant --documents 1500``

The first ``--documents`` documents of a BEIR corpus (SciFact train by default) go into a
memory store and into the store under test through the same ingest (the API's chunker, the
bundled model's cached vectors), and every judged query runs through each leg of both with
``n`` 10 and 50. Per leg it prints: the share of queries whose ranked ids are identical, the
mean overlap of the two top-``n`` sets, and the largest score difference of a chunk both
returned; then how many queries typo correction treats identically. The memory store is
exact, so any difference is the other store's approximation (the Qdrant store's BM25
candidates above ``max(4n, n+200)`` chunks holding a query term, its HNSW in server mode) or
a bug.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable
from typing import Any

from bench.beir import load_beir
from bench.quality import make_embedder, open_store
from rag_plugin.chunking import TextChunker, api_chunker_config
from rag_plugin.embedding import FastEmbedEmbedder
from rag_plugin.exceptions import CollectionNotFoundError
from rag_plugin.ingest import get_or_create_collection, ingest_text
from rag_plugin.stores.base import CollectionInfo, DocumentInput, ScoredChunk, Store

LEGS = ("dense", "bm25", "fuzzy")


def fill(
    store: Store, documents: list[tuple[str, str, str]], embedder: FastEmbedEmbedder
) -> CollectionInfo:
    """Ingest ``(id, title, text)`` documents into a fresh collection ``agreement``."""
    with contextlib.suppress(CollectionNotFoundError):
        store.delete_collection("agreement")  # a PostgreSQL store keeps the last run's
    collection = get_or_create_collection(store, "agreement", embedder=embedder)
    chunker = TextChunker(api_chunker_config())
    for doc_id, title, text in documents:
        if chunker.chunk(text):
            ingest_text(
                store,
                embedder,
                collection,
                text,
                document=DocumentInput(source=doc_id, title=title),
                chunker=chunker,
            )
    return store.get_collection("agreement")


def ask_both(
    queries: list[str],
    reference: tuple[Store, CollectionInfo],
    other: tuple[Store, CollectionInfo],
    ask: Callable[[Store, CollectionInfo, str], Any],
) -> tuple[list[tuple[Any, Any]], tuple[float, float]]:
    """``ask`` each query of the reference and the other store: the answer pairs, and each
    side's mean milliseconds per query."""
    pairs = []
    spent = [0.0, 0.0]
    for query in queries:
        answers = []
        for side, (store, info) in enumerate((reference, other)):
            begun = time.perf_counter()
            answers.append(ask(store, info, query))
            spent[side] += time.perf_counter() - begun
        pairs.append((answers[0], answers[1]))
    count = len(queries)
    return pairs, (1000 * spent[0] / count, 1000 * spent[1] / count)


def compare(
    leg: str,
    n: int,
    queries: list[str],
    vectors: dict[str, list[float]],
    reference: tuple[Store, CollectionInfo],
    other: tuple[Store, CollectionInfo],
) -> str:
    """One table row: ``leg`` at depth ``n`` in both stores over every query."""

    def ask(store: Store, info: CollectionInfo, query: str) -> list[ScoredChunk]:
        call: Callable[..., list[ScoredChunk]] = getattr(store, leg)
        return call(info, vectors[query] if leg == "dense" else query, n)

    pairs, (memory_ms, store_ms) = ask_both(queries, reference, other, ask)
    identical, overlap, worst = 0, 0.0, 0.0
    for want, got in pairs:
        want_ids, got_ids = [h.chunk.id for h in want], [h.chunk.id for h in got]
        identical += want_ids == got_ids
        overlap += len(set(want_ids) & set(got_ids)) / max(len(want_ids), 1)
        scores = {h.chunk.id: h.score for h in want}
        for hit in got:
            if hit.chunk.id in scores:
                worst = max(worst, abs(hit.score - scores[hit.chunk.id]))
    count = len(queries)
    return (
        f"| {leg} | {n} | {identical / count:.3f} | {overlap / count:.4f} | {worst:.2e} "
        f"| {memory_ms:.1f} | {store_ms:.1f} |"
    )


def compare_corrections(
    queries: list[str], reference: tuple[Store, CollectionInfo], other: tuple[Store, CollectionInfo]
) -> str:
    """One line: the share of queries both stores correct identically, and their times."""
    pairs, (memory_ms, store_ms) = ask_both(
        queries, reference, other, lambda store, info, query: store.correct_query(info, query)
    )
    same = sum(want == got for want, got in pairs)
    return (
        f"typo correction: identical for {same / len(queries):.3f} of the queries; ms/query "
        f"{memory_ms:.1f} memory, {store_ms:.1f} store"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/eval/scifact")
    parser.add_argument("--split", default="train")
    parser.add_argument("--store", choices=("qdrant", "postgres"), default="qdrant")
    parser.add_argument("--documents", type=int, default=1500)
    parser.add_argument("--max-queries", type=int, default=300)
    args = parser.parse_args()

    data = load_beir(args.data, args.split)
    documents = [
        (doc.id, doc.title, doc.ingest_text(with_title=True))
        for doc in list(data.corpus.values())[: args.documents]
    ]
    queries = list(data.queries.values())[: args.max_queries]
    embedder = make_embedder()
    reference, other = open_store("memory"), open_store(args.store, schema="bench_agreement")
    started = time.perf_counter()
    expected = fill(reference, documents, embedder)
    memory_seconds = time.perf_counter() - started
    started = time.perf_counter()
    collection = fill(other, documents, embedder)
    other_seconds = time.perf_counter() - started
    print(
        f"{args.documents} documents → {expected.chunk_count} chunks "
        f"({collection.chunk_count} in {args.store}); ingest {memory_seconds:.1f} s memory, "
        f"{other_seconds:.1f} s {args.store} ({other_seconds / memory_seconds:.1f}×); "
        f"{len(queries)} queries"
    )
    vectors = {query: embedder.embed_query(query) for query in queries}
    print(
        "| leg | n | identical rankings | mean overlap | max score difference "
        "| ms/query memory | ms/query store |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for leg in LEGS:
        for n in (10, 50):
            print(compare(leg, n, queries, vectors, (reference, expected), (other, collection)))
    print(compare_corrections(queries, (reference, expected), (other, collection)))


if __name__ == "__main__":
    main()
