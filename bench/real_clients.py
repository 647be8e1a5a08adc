"""The app processes of bench/real_query.py that run its searches and time them.

:func:`one_client` runs every strategy one query at a time in a fresh process (its RSS is the
app's); :func:`concurrent` runs hybrid from several processes at once, each its own store and
connection pool, as gunicorn workers would be.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from typing import Any

from bench.measure import quantiles, rss_mib
from bench.real_corpus import queries, with_typos
from bench.store_schema import DIMENSIONS
from rag_plugin.engine import CollectionSearcher
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.testing import FakeEmbedder


def searches(
    searcher: CollectionSearcher, collection: CollectionInfo, typed: list[str], typos: list[str]
) -> dict[str, Callable[[int], object]]:
    def run(strategy: str, texts: list[str], correct: bool) -> Callable[[int], object]:
        return lambda i: searcher.search(
            collection, texts[i], strategy=strategy, top_k=10, correct_typos=correct
        )

    return {
        "semantic": run("semantic", typed, False),
        "bm25": run("bm25", typed, False),
        "fuzzy": run("fuzzy", typed, False),
        "hybrid": run("hybrid", typed, False),
        "hybrid+typos": run("hybrid", typos, True),
        "hybrid+filter": lambda i: searcher.search(
            collection, typed[i], strategy="hybrid", top_k=10, filters={"shard": 3}
        ),
        # The former default depth of each hybrid leg (2 · top_k), as a baseline in the run.
        "hybrid@20": lambda i: searcher.search(
            collection, typed[i], strategy="hybrid", top_k=10, candidates=20
        ),
    }


def one_client(
    dsn: str, schema: str, name: str, picks: list[int], strategies: tuple[str, ...], out: Any
) -> None:
    """Run in a fresh process: every strategy, one query at a time (times in ms per query)."""
    before = rss_mib()
    store = PostgresStore(dsn, schema=schema, create_schema=False)
    collection = store.get_collection(name)
    typed = queries()
    typos = with_typos(typed)
    run = searches(CollectionSearcher(store, FakeEmbedder(DIMENSIONS)), collection, typed, typos)
    for strategy in strategies:  # warm-up: connections, plans, caches
        for i in picks[:20]:
            run[strategy](i)
    times: dict[str, list[float]] = {s: [] for s in strategies}
    # Strategies interleaved per query, so machine drift hits them alike.
    for i in picks:
        for strategy in strategies:
            started = time.perf_counter()
            run[strategy](i)
            times[strategy].append((time.perf_counter() - started) * 1000)
    out.put({"times": times, "rss_start": before, "rss_end": rss_mib()})
    store.close()


def loaded_client(dsn: str, schema: str, name: str, picks: list[int], start: Any, out: Any) -> None:
    """Run in a fresh process: hybrid over ``picks`` once every client is ready."""
    store = PostgresStore(dsn, schema=schema, create_schema=False)
    collection = store.get_collection(name)
    typed = queries()
    searcher = CollectionSearcher(store, FakeEmbedder(DIMENSIONS))
    for i in picks[:10]:
        searcher.search(collection, typed[i], strategy="hybrid", top_k=10)
    start.wait()
    times = []
    for i in picks:
        started = time.perf_counter()
        searcher.search(collection, typed[i], strategy="hybrid", top_k=10)
        times.append((time.perf_counter() - started) * 1000)
    out.put(times)
    store.close()


def concurrent(dsn: str, schema: str, name: str, picks: list[int], clients: int) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(clients)
    out = context.Queue()
    shards = [picks[c::clients] for c in range(clients)]
    processes = [
        context.Process(target=loaded_client, args=(dsn, schema, name, shard, start, out))
        for shard in shards
    ]
    started = time.perf_counter()
    for process in processes:
        process.start()
    times = [t for _ in processes for t in out.get()]
    for process in processes:
        process.join()
    wall = time.perf_counter() - started
    return {"quantiles": quantiles(times), "count": len(times), "wall_s": wall}
