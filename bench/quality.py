"""Retrieval quality on a BEIR data set through the product's real path, vs stock LlamaIndex.

Not a test. Run from the repository root, e.g.:
``PYTHONPATH=. .venv/bin/python bench/quality.py --data ../shared/eval/scifact --split train``
``PYTHONPATH=. .venv/bin/python bench/quality.py --data ../shared/eval/vaswani --split test``

Each document (``title``, a blank line, ``text``; ``--no-title`` ingests ``text`` alone) goes
through ``ingest_text`` — the API's word chunker (200/50), the bundled offline MiniLM model
behind ``FastEmbedEmbedder`` with a persistent ``SqliteEmbeddingCache`` (so a second run embeds
nothing), ``store.upsert_document`` — into a collection of the chosen store and analyzer. Every
judged query then runs through ``CollectionSearcher.search`` per strategy: with ``top_k=10`` for
nDCG@10 and MRR@10 (what a user asking for 10 results gets) and with ``top_k=100`` for
recall@100. A document ranks as its best chunk.

The profile rows rank as ``/api/rag/context`` does: a ``RetrievalProfile`` with the given
strategy and rerank mode (its other defaults: min relevance 0.05 with its fallback, 8·k
candidates), through ``MultiCollectionRetriever`` over the one collection.

The stock LlamaIndex row runs in the same process over the very same chunks and vectors:
``BM25Retriever`` (bm25s, English Snowball stemming and stopwords) and a ``VectorStoreIndex``
retriever, both with ``similarity_top_k`` 10 (100 for recall), fused by
``QueryFusionRetriever(mode="reciprocal_rerank", num_queries=1)``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.beir import BeirData, load_beir
from bench.metrics import best_chunk_documents, evaluate
from rag_plugin.chunking import TextChunker, api_chunker_config
from rag_plugin.embedding import BUNDLED_MODEL, FastEmbedEmbedder, SqliteEmbeddingCache
from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import CollectionNotFoundError
from rag_plugin.fusion import HybridWeights
from rag_plugin.ingest import get_or_create_collection, ingest_text
from rag_plugin.stores.base import CollectionInfo, DocumentInput, Store

STRATEGIES = ("semantic", "bm25", "fuzzy", "hybrid")
CACHE_PATH = Path(".bench-cache/embeddings.sqlite3")
NDCG_K, RECALL_K, MRR_K = 10, 100, 10

Ranker = Callable[[str, int], list[str]]
"""(query id, k) → the document id of each of the top ``k`` chunks, best chunk first."""


@dataclass(frozen=True)
class Ranking:
    """A ranker, and whether its top 10 is the first 10 of its top 100 (one leg, no fusion)."""

    rank: Ranker
    prefix: bool


@dataclass
class Corpus:
    """A data set ingested into one collection, and what the stock row needs of it."""

    data: BeirData
    store: Store
    collection: CollectionInfo
    embedder: FastEmbedEmbedder
    with_title: bool
    beir_ids: dict[str, str]  # store document id -> BEIR document id
    ingest_seconds: float


def open_store(kind: str, schema: str = "bench_quality") -> Store:
    """An empty memory store, an empty Qdrant store in qdrant-client's local mode (Qdrant's
    Python implementation in this process: not a Qdrant server's performance), or the
    PostgreSQL store of ``portal.embedded_db``."""
    if kind == "memory":
        from rag_plugin.stores.memory import MemoryStore

        return MemoryStore()
    if kind == "qdrant":
        from rag_plugin.stores.qdrant import QdrantStore

        return QdrantStore(location=":memory:")
    from portal.embedded_db import database_url
    from rag_plugin.stores.postgres import PostgresStore

    return PostgresStore(database_url(), schema=schema)


def make_embedder(cache_path: Path = CACHE_PATH) -> FastEmbedEmbedder:
    """The bundled offline model with the persistent benchmark cache."""
    cache = SqliteEmbeddingCache(cache_path)
    return FastEmbedEmbedder(BUNDLED_MODEL, fallback_model=None, cache=cache)


def ingest_corpus(
    store: Store,
    embedder: FastEmbedEmbedder,
    data: BeirData,
    *,
    analyzer: str | None,
    with_title: bool,
    progress: bool = False,
) -> Corpus:
    """Ingest every document of ``data`` into a fresh collection of ``store``."""
    name = f"{data.name}_{analyzer or 'default'}_{'title' if with_title else 'text'}"
    name = name.replace("-", "_").lower()
    with contextlib.suppress(CollectionNotFoundError):
        store.delete_collection(name)  # a PostgreSQL store keeps the last run's collection
    options: dict[str, Any] = {} if analyzer is None else {"analyzer": analyzer}
    collection = get_or_create_collection(store, name, embedder=embedder, **options)
    chunker = TextChunker(api_chunker_config())
    beir_ids: dict[str, str] = {}
    started = time.perf_counter()
    for count, doc in enumerate(data.corpus.values(), start=1):
        text = doc.ingest_text(with_title=with_title)
        if not chunker.chunk(text):
            continue  # under min_chunk_size: the API refuses it too ("Content too small")
        result = ingest_text(
            store,
            embedder,
            collection,
            text,
            document=DocumentInput(source=doc.id, title=doc.title),
            chunker=chunker,
        )
        beir_ids[result.document.id] = doc.id
        if progress and count % 1000 == 0:
            print(f"  ingested {count}/{len(data.corpus)}", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    collection = store.get_collection(name)
    return Corpus(data, store, collection, embedder, with_title, beir_ids, seconds)


def product_ranker(
    corpus: Corpus,
    strategy: str,
    *,
    weights: HybridWeights | None = None,
    rrf_k: float | None = None,
) -> Ranker:
    """Rank by ``CollectionSearcher.search`` with ``strategy``; documents by their best chunk."""
    searcher = CollectionSearcher(corpus.store, corpus.embedder)
    options: dict[str, Any] = {}
    if weights is not None:
        options["weights"] = weights
    if rrf_k is not None:
        options["rrf_k"] = rrf_k

    def rank(query_id: str, k: int) -> list[str]:
        outcome = searcher.search(
            corpus.collection, corpus.data.queries[query_id], strategy=strategy, top_k=k, **options
        )
        return [corpus.beir_ids[hit.chunk.document_id] for hit in outcome.hits]

    return rank


PROFILE_ROWS = ("semantic:lexical", "semantic:off", "hybrid:lexical", "hybrid:off")
"""``strategy:rerank`` of the retrieval-profile rows; a profile's defaults are the first."""


def profile_ranker(corpus: Corpus, strategy: str, rerank: str) -> Ranker:
    """Rank as ``/api/rag/context`` does: a ``RetrievalProfile`` (its defaults otherwise: min
    relevance 0.05 with its fallback, 8·k candidates) over the one collection, then rerank."""
    from rag_plugin.profiles import RetrievalProfile
    from rag_plugin.retrieval import CollectionRef, MultiCollectionRetriever

    retriever = MultiCollectionRetriever(CollectionSearcher(corpus.store, corpus.embedder))
    refs = [CollectionRef(corpus.collection)]

    def rank(query_id: str, k: int) -> list[str]:
        profile = RetrievalProfile(retrieval_k=k, strategy=strategy, rerank=rerank)
        chunks = retriever.retrieve(corpus.data.queries[query_id], refs, profile)
        return [corpus.beir_ids[chunk.document_id] for chunk in chunks]

    return rank


def stock_rankers(corpus: Corpus) -> dict[str, Ranking]:
    """Stock LlamaIndex over the same chunks and vectors: BM25Retriever and RRF hybrid."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    from rag_plugin.llama_index.embedding import RagEmbedding

    chunker = TextChunker(api_chunker_config())
    nodes: list[TextNode] = []
    node_docs: dict[str, str] = {}
    for doc in corpus.data.corpus.values():
        pieces = chunker.chunk(doc.ingest_text(with_title=corpus.with_title))
        vectors = corpus.embedder.embed([piece.content for piece in pieces])  # cache hits
        for piece, vector in zip(pieces, vectors, strict=True):
            node_id = f"{doc.id}#{piece.index}"
            node_docs[node_id] = doc.id
            nodes.append(TextNode(id_=node_id, text=piece.content, embedding=vector))
    index = VectorStoreIndex(nodes, embed_model=RagEmbedding(corpus.embedder))
    retrievers: dict[int, tuple[Any, Any]] = {}
    for k in (NDCG_K, RECALL_K):
        bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=k)
        fused = QueryFusionRetriever(
            [index.as_retriever(similarity_top_k=k), bm25],
            mode=FUSION_MODES.RECIPROCAL_RANK,  # "reciprocal_rerank"
            num_queries=1,
            similarity_top_k=k,
            use_async=False,
            llm=MockLLM(),
        )
        retrievers[k] = (bm25, fused)

    def ranker(which: int) -> Ranker:
        def rank(query_id: str, k: int) -> list[str]:
            found = retrievers[k][which].retrieve(corpus.data.queries[query_id])
            return [node_docs[hit.node.node_id] for hit in found]

        return rank

    return {
        "llamaindex bm25": Ranking(ranker(0), prefix=True),
        "llamaindex hybrid": Ranking(ranker(1), prefix=False),
    }


def score(corpus: Corpus, ranking: Ranking, queries: Sequence[str]) -> dict[str, float]:
    """nDCG@10, recall@100 and MRR@10 of ``ranking`` over ``queries``; documents by best chunk.

    nDCG@10 and MRR@10 come from a search for the top 10 chunks (what a user asking for 10
    results gets), recall@100 from a search for the top 100; a single leg answers both with one
    search, as its top 10 is the start of its top 100.
    """
    deep = {q: ranking.rank(q, RECALL_K) for q in queries}
    top = {q: deep[q][:NDCG_K] if ranking.prefix else ranking.rank(q, NDCG_K) for q in queries}
    qrels = {q: corpus.data.qrels[q] for q in queries}
    documents = {q: best_chunk_documents(chunks) for q, chunks in top.items()}
    shallow = evaluate(documents, qrels, ndcg_k=NDCG_K, recall_k=RECALL_K, mrr_k=MRR_K)
    documents = {q: best_chunk_documents(chunks) for q, chunks in deep.items()}
    recall = evaluate(documents, qrels, ndcg_k=NDCG_K, recall_k=RECALL_K, mrr_k=MRR_K)
    return {
        f"ndcg@{NDCG_K}": shallow[f"ndcg@{NDCG_K}"],
        f"recall@{RECALL_K}": recall[f"recall@{RECALL_K}"],
        f"mrr@{MRR_K}": shallow[f"mrr@{MRR_K}"],
    }


def run_rows(
    corpus: Corpus, rankings: dict[str, Ranking], queries: Sequence[str]
) -> list[dict[str, Any]]:
    """Score each ranking; a row holds its name, metrics and mean milliseconds per search."""
    rows = []
    for name, ranking in rankings.items():
        started = time.perf_counter()
        metrics = score(corpus, ranking, queries)
        searches = len(queries) * (1 if ranking.prefix else 2)
        per_search = (time.perf_counter() - started) / searches
        rows.append({"name": name, **metrics, "ms_per_query": per_search * 1000})
    return rows


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    """The rows as a Markdown table."""
    print(f"| run | nDCG@{NDCG_K} | recall@{RECALL_K} | MRR@{MRR_K} | ms/query |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['name']} | {row[f'ndcg@{NDCG_K}']:.4f} | {row[f'recall@{RECALL_K}']:.4f}"
            f" | {row[f'mrr@{MRR_K}']:.4f} | {row['ms_per_query']:.1f} |"
        )


def parse_weights(text: str) -> HybridWeights:
    """``"0.6,0.3,0.1"`` → HybridWeights(semantic, bm25, fuzzy)."""
    semantic, bm25, fuzzy = (float(part) for part in text.split(","))
    return HybridWeights(semantic, bm25, fuzzy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a BEIR folder")
    parser.add_argument("--split", default="test")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--store", choices=("memory", "qdrant", "postgres"), default="memory")
    parser.add_argument(
        "--analyzer", default=None, help="seed, english, ...; default: the collection default"
    )
    parser.add_argument("--no-title", action="store_true", help="ingest the text without title")
    parser.add_argument("--weights", type=parse_weights, default=None, help="hybrid s,b,f")
    parser.add_argument("--rrf-k", type=float, default=None)
    parser.add_argument("--no-stock", action="store_true", help="skip the LlamaIndex rows")
    parser.add_argument(
        "--profiles",
        default=",".join(PROFILE_ROWS),
        help="retrieval-profile rows as strategy:rerank ('' for none)",
    )
    parser.add_argument("--max-queries", type=int, default=None, help="the first N queries")
    parser.add_argument("--cache", type=Path, default=CACHE_PATH)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    data = load_beir(args.data, args.split)
    embedder = make_embedder(args.cache)
    store = open_store(args.store)
    corpus = ingest_corpus(
        store,
        embedder,
        data,
        analyzer=args.analyzer,
        with_title=not args.no_title,
        progress=not args.json,
    )
    embedded_at_ingest = embedder.stats.texts_embedded
    rankings = {
        strategy: Ranking(
            product_ranker(corpus, strategy, weights=args.weights, rrf_k=args.rrf_k),
            prefix=strategy != "hybrid",
        )
        for strategy in args.strategies.split(",")
    }
    for row in filter(None, args.profiles.split(",")):
        strategy, rerank = row.split(":")
        rankings[f"profile {strategy}, rerank {rerank}"] = Ranking(
            profile_ranker(corpus, strategy, rerank), prefix=False
        )
    if not args.no_stock:
        rankings.update(stock_rankers(corpus))
    queries = list(data.queries)[: args.max_queries]
    rows = run_rows(corpus, rankings, queries)
    report = {
        "data": data.name,
        "split": args.split,
        "store": args.store,
        "analyzer": corpus.collection.analyzer,
        "title": corpus.with_title,
        "documents": len(data.corpus),
        "chunks": corpus.collection.chunk_count,
        "queries": len(queries),
        "ingest_seconds": round(corpus.ingest_seconds, 1),
        "texts_embedded_at_ingest": embedded_at_ingest,
        "rows": rows,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{data.name} ({args.split}): {report['documents']} documents, {report['chunks']}"
        f" chunks, {report['queries']} queries; store {args.store}, analyzer"
        f" {report['analyzer']}, title {'prepended' if corpus.with_title else 'left out'};"
        f" ingest {report['ingest_seconds']} s, {embedded_at_ingest} texts embedded"
    )
    print_table(rows)


if __name__ == "__main__":
    main()
