"""Query latency on real text and real queries: PostgresStore vs stock LlamaIndex (or, with
``--store qdrant``, the Qdrant store in local mode against PostgresStore: bench/qdrant_query.py).

Not a test. Run from the repository root (``make bench-deps`` first for the LlamaIndex rows):
``PYTHONPATH=. .venv/bin/python bench/real_query.py --chunks 100000 [--schema NAME]``
``[--queries N] [--clients 4] [--llama-queries 30] [--skip-llama] [--repeat R]``.

Corpus: the SciFact and Vaswani abstracts of ``../shared/eval`` (title + text), cut into
windows of 16 whitespace words, every window of every document (a document is one source;
SciFact's have ≈ 14 windows, Vaswani's ≈ 3), until ``--chunks`` chunks: one pass gives
≈ 99.5k windows, so 100k and 1M chunks repeat the text. Copy ``c ≥ 1`` starts its windows
``7·c mod 16`` words later (so its chunks are other cuts of the same text, not duplicates)
and carries the marker word ``copyC`` in every chunk. Vectors come from ``FakeEmbedder(384)``:
the dense leg's cost does not depend on the values.

Queries: the SciFact **train** claims and the Vaswani queries as typed (902; median 11 words
with the English analyzer's stopwords, up to 29), and for ``correct_typos`` each with one
realistic typo in its longest word of six letters or more (an adjacent swap, a dropped, doubled
or keyboard-neighbour letter, chosen by a seeded RNG).

Measured in a fresh process (its RSS is the app's), one query at a time after a warm-up of 20:
p50 / p95 / p99 / max of ``CollectionSearcher.search(top_k=10)`` for semantic, bm25, fuzzy,
hybrid, hybrid with ``correct_typos`` on the typo variants, and hybrid with a metadata filter
that keeps 10 % of the chunks (``shard == 3``); the 5 slowest queries of each
strategy with that query's time in every strategy; then hybrid from ``--clients`` processes at
once (each its own store and connection pool, as gunicorn workers would be). Stock LlamaIndex
(``VectorStoreIndex`` + ``BM25Retriever`` + ``QueryFusionRetriever``) answers the same queries
in this run when the corpus has at most 100k chunks; its dense search scans every vector in
Python, so it gets ``--llama-queries`` of them and the ratio is of the p95s.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time
import uuid
from typing import Any

import psycopg
from psycopg import sql

from bench.measure import quantiles, rss_mib
from bench.real_clients import concurrent, one_client, searches
from bench.real_corpus import (
    ANALYZER,
    LOAD_BATCH,
    SHARDS,
    collection_name,
    corpus,
    load,
    queries,
    with_typos,
)
from bench.stock_llama import query_bundle, stock_retrievers
from bench.store_schema import DIMENSIONS, drop_schema, kept_collection
from portal.embedded_db import database_url
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.testing import FakeEmbedder, fake_vector

STRATEGIES = (
    "semantic",
    "bm25",
    "fuzzy",
    "hybrid",
    "hybrid@20",
    "hybrid+typos",
    "hybrid+filter",
)


def llama_index(chunks: int, picks: list[int], typed: list[str]) -> dict[str, Any]:
    """The same corpus and queries through stock LlamaIndex retrievers, in this process."""
    stock = stock_retrievers(
        ((t, fake_vector(t, DIMENSIONS)) for _, texts in corpus(chunks) for t in texts),
        DIMENSIONS,
    )
    embedder = FakeEmbedder(DIMENSIONS)
    bundles = {i: query_bundle(typed[i], embedder.embed_query(typed[i])) for i in picks}
    result: dict[str, Any] = {"build_s": stock.build_s, "rss": rss_mib()}
    for leg, retriever in (
        ("semantic", stock.semantic),
        ("bm25", stock.bm25),
        ("hybrid", stock.hybrid),
    ):
        samples = []
        for i in picks:
            started = time.perf_counter()
            retriever.retrieve(bundles[i])
            samples.append((time.perf_counter() - started) * 1000)
        result[leg] = quantiles(samples)
    return result


def report(ours: dict[str, Any], picks: list[int], typed: list[str], typos: list[str]) -> None:
    times = ours["times"]
    strategies = tuple(times)
    print(f"\n{'strategy':<14}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}   ms, one client")
    for strategy in strategies:
        q = quantiles(times[strategy])
        print(f"{strategy:<14}" + "".join(f"{q[k]:>9.1f}" for k in ("p50", "p95", "p99", "max")))
    for strategy in strategies:
        print(f"\nslowest 5 by {strategy} (ms: " + " / ".join(strategies) + ")")
        ranked = sorted(range(len(picks)), key=lambda j: -times[strategy][j])[:5]
        for j in ranked:
            text = typos[picks[j]] if strategy == "hybrid+typos" else typed[picks[j]]
            legs = " / ".join(f"{times[s][j]:.0f}" for s in strategies)
            print(f"  {legs}  [{len(text.split())} words] {text[:110]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=0, help="0: all 902")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--llama-queries", type=int, default=30)
    parser.add_argument("--skip-llama", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="one-client passes in a row")
    parser.add_argument(
        "--no-filter",
        action="store_true",
        help="skip hybrid+filter (giving an older load its shard key rewrites every chunk row, "
        "HNSW entry included: minutes at 1M chunks)",
    )
    parser.add_argument(
        "--schema", help="load into (or reuse) this schema and keep it after the run"
    )
    parser.add_argument(
        "--store",
        choices=("postgres", "qdrant"),
        default="postgres",
        help="qdrant: the same chunks and queries through the Qdrant store in local mode, with "
        "PostgreSQL as the baseline in the same process (bench/qdrant_query.py)",
    )
    args = parser.parse_args()
    dsn = database_url()
    schema = args.schema or f"bench_{uuid.uuid4().hex[:8]}"
    store = PostgresStore(dsn, schema=schema)  # creates or migrates the tables
    typed = queries()
    typos = with_typos(typed)
    count = len(typed) if args.queries <= 0 else min(args.queries, len(typed))
    # An even spread over both sets when fewer than all are asked for.
    picks = sorted({round(j * (len(typed) - 1) / max(count - 1, 1)) for j in range(count)})
    lengths = [len(get_analyzer(ANALYZER).tokens(typed[i])) for i in picks]
    words = [len(typed[i].split()) for i in picks]
    print(
        f"schema {schema}; {len(picks)} queries: words median {statistics.median(words)}, "
        f"max {max(words)}; analyzer terms median {statistics.median(lengths)}, max {max(lengths)}"
    )
    try:
        collection = kept_collection(store, collection_name(args.chunks), args.chunks)
        if collection is None:
            collection, seconds, build = load(store, dsn, args.chunks)
            print(
                f"loaded {args.chunks:,} chunks in {seconds:.0f} s "
                f"({args.chunks / seconds:,.0f} chunks/s), HNSW build {build:.0f} s"
            )
        else:
            print(f"reusing {collection.name} ({collection.chunk_count:,} chunks)")
        strategies = tuple(s for s in STRATEGIES if not (args.no_filter and s == "hybrid+filter"))
        with psycopg.connect(dsn, autocommit=True) as conn:
            if not args.no_filter:
                # Older loads lack the shard key; an UPDATE gives it to them (postings are by id).
                conn.execute(
                    sql.SQL(
                        "UPDATE {} SET metadata = metadata || jsonb_build_object('shard',"
                        " (hashtext(chunk_key) & 2147483647) %% {})"
                        " WHERE collection_id ="
                        " (SELECT id FROM {} WHERE name = %s AND owner IS NULL)"
                        " AND NOT metadata ? 'shard'"
                    ).format(
                        sql.Identifier(schema, "rag_chunks"),
                        sql.Literal(SHARDS),
                        sql.Identifier(schema, "rag_collections"),
                    ),
                    (collection.name,),
                )
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, "rag_chunks")))
            conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> "
                    "'rag_chunks'",
                    (schema,),
                ).fetchall()
            ]
            for table in tables:
                conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, table)))
        print(f"load average {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d %H:%M')}")
        if args.store == "qdrant":
            from bench.qdrant_query import compare

            compare(
                store,
                collection,
                corpus(args.chunks),
                picks,
                lambda searcher, loaded: searches(searcher, loaded, typed, typos),
                strategies,
                quantiles,
                SHARDS,
                LOAD_BATCH,
            )
            return
        context = multiprocessing.get_context("spawn")
        for _ in range(args.repeat):
            out = context.Queue()
            child = context.Process(
                target=one_client,
                args=(dsn, schema, collection.name, picks, strategies, out),
            )
            child.start()
            ours = out.get()
            child.join()
            print(f"\napp RSS MiB: start {ours['rss_start']:.0f}, end {ours['rss_end']:.0f}")
            report(ours, picks, typed, typos)
        if args.clients > 1:
            load_run = concurrent(dsn, schema, collection.name, picks, args.clients)
            q = load_run["quantiles"]
            print(
                f"\nhybrid, {args.clients} concurrent clients ({load_run['count']} queries, "
                f"{load_run['count'] / load_run['wall_s']:.0f} queries/s): "
                + "  ".join(f"{k} {v:.1f}" for k, v in q.items())
                + " ms"
            )
        if not args.skip_llama and args.chunks <= 100_000:
            step = max(1, len(picks) // args.llama_queries)
            sample = picks[::step][: args.llama_queries]
            theirs = llama_index(args.chunks, sample, typed)
            print(
                f"\nstock LlamaIndex, {len(sample)} queries: build {theirs['build_s']:.1f} s, "
                f"RSS {theirs['rss']:.0f} MiB"
            )
            mine = {s: quantiles([ours["times"][s][picks.index(i)] for i in sample]) for s in
                    ("semantic", "bm25", "hybrid")}  # fmt: skip
            print(f"{'leg':<10}{'LI p50':>9}{'LI p95':>9}{'ours p95':>10}{'LI/ours p95':>13}")
            for leg in ("semantic", "bm25", "hybrid"):
                t, m = theirs[leg], mine[leg]
                print(
                    f"{leg:<10}{t['p50']:>9.1f}{t['p95']:>9.1f}{m['p95']:>10.1f}"
                    f"{t['p95'] / m['p95']:>12.1f}x"
                )
    finally:
        store.close()
        if not args.schema:
            drop_schema(dsn, schema)


if __name__ == "__main__":
    main()
