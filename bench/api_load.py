"""REST API throughput and latency under 8 concurrent clients, vs the library directly.

Not a test. Run from the repository root:
``PYTHONPATH=. .venv/bin/python bench/api_load.py [--seconds 15] [--clients 8] [--workers 4]``.

The portal runs as the README documents for production: gunicorn with several worker
processes, ``DJANGO_DEBUG=false``, a database of its own (see :mod:`portal.launch`). The
embedder is the deterministic fake (vector values don't matter for timing; the real model's
cost is measured by bench/ingest.py). Alice's collection gets ``--documents`` synthetic
documents, then for each phase ``--clients`` threads each with their own HTTP connection send
requests back to back for ``--seconds``:

- search (semantic and hybrid) through ``POST /api/rag/search``;
- the same searches through the library in this process (``CollectionSearcher`` over the same
  PostgreSQL schema, same threads): the ratio API / library is the API's overhead (HTTP,
  auth, allowlist, JSON, Django);
- ingest of small new documents through ``POST /api/rag/ingest``.

With ``--metrics-off`` a second server on the same database runs with ``RAG_METRICS_ENABLED=
false`` and no ``PROMETHEUS_MULTIPROC_DIR``, and hybrid search and ingest alternate between the
two (on, off, on, off): the ratio is what metrics cost. The audit log is on in both: it
records writes (the ingest phases), never searches.
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from portal import launch
from portal.embedded_db import PROJECT_ROOT
from rag_plugin.engine import CollectionSearcher
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.testing import FakeEmbedder

HOST = "acme.localhost"
PASSWORD = "bench-pass-2026"  # noqa: S105 - a throwaway database's demo users
COLLECTION = "bench"
WORDS = [
    "vector",
    "search",
    "index",
    "query",
    "ranking",
    "fusion",
    "lexical",
    "dense",
    "sparse",
    "embedding",
    "model",
    "chunk",
    "document",
    "tenant",
    "collection",
    "allowlist",
    "latency",
    "throughput",
    "postgres",
    "schema",
    "cache",
    "token",
    "hybrid",
    "semantic",
    "fuzzy",
    "typo",
    "correction",
    "offset",
    "citation",
    "retrieval",
    "rerank",
    "profile",
    "answer",
]


@dataclass
class Phase:
    name: str
    latencies: list[float]
    errors: int
    seconds: float

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    def row(self) -> str:
        p50 = statistics.median(self.latencies) * 1000
        return (
            f"{self.name:34} {self.rps:8.1f} req/s  p50 {p50:7.1f} ms"
            f"  p95 {self.percentile(0.95):7.1f} ms  errors {self.errors}"
        )


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def run_phase(
    name: str, clients: int, seconds: float, make_worker: Callable[[int], Callable[[], bool]]
) -> Phase:
    """Run ``clients`` threads calling their worker back to back for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def loop(index: int) -> None:
        nonlocal errors
        work = make_worker(index)
        while time.monotonic() < stop:
            started = time.perf_counter()
            ok = work()
            elapsed = time.perf_counter() - started
            with lock:
                if ok:
                    latencies.append(elapsed)
                else:
                    errors += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(clients)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return Phase(name, latencies, errors, time.monotonic() - began)


def search_workers(
    port: int, token: str, queries: list[str], strategy: str
) -> Callable[[int], Callable[[], bool]]:
    """Client ``index``'s search loop body against the server on ``port``."""

    def make(index: int) -> Callable[[], bool]:
        http = launch.client(port, HOST, token)
        local = random.Random(index)

        def work() -> bool:
            body = {"collection": COLLECTION, "query": local.choice(queries), "strategy": strategy}
            return http.post("/api/rag/search", json=body).status_code == 200

        return work

    return make


def ingest_workers(port: int, token: str, seed: int) -> Callable[[int], Callable[[], bool]]:
    """Client ``index``'s loop body ingesting new 120-word documents on ``port``."""

    def make(index: int) -> Callable[[], bool]:
        http = launch.client(port, HOST, token)
        local = random.Random(seed + index)

        def work() -> bool:
            body = {"collection": COLLECTION, "content": text(local, 120)}
            return http.post("/api/rag/ingest", json=body).status_code == 200

        return work

    return make


def metrics_comparison(
    env: dict[str, str], args: argparse.Namespace, token: str, queries: list[str], on_port: int
) -> list[Phase]:
    """Hybrid search and ingest alternating between the server with metrics (``on_port``) and
    one without, twice each; prints the ratios off / on."""
    off_env = {k: v for k, v in env.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    off_env["RAG_METRICS_ENABLED"] = "false"
    log = PROJECT_ROOT / ".bench-cache" / "api-load-portal-metrics-off.log"
    phases: list[Phase] = []
    totals: dict[tuple[str, str], int] = {}
    with launch.gunicorn(off_env, log, workers=args.workers, threads=1) as off_port:
        for _ in range(2):
            for kind in ("hybrid search", "ingest"):
                for state, port in (("on", on_port), ("off", off_port)):
                    workers = (
                        search_workers(port, token, queries, "hybrid")
                        if kind == "hybrid search"
                        else ingest_workers(port, token, seed=port)
                    )
                    phase = run_phase(
                        f"metrics {state}: {kind}", args.clients, args.seconds, workers
                    )
                    phases.append(phase)
                    totals[(kind, state)] = totals.get((kind, state), 0) + len(phase.latencies)
    for kind in ("hybrid search", "ingest"):
        on, off = totals[(kind, "on")], totals[(kind, "off")]
        print(f"metrics cost on {kind}: on/off throughput {on / off:.3f} ({on} vs {off} requests)")
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--documents", type=int, default=300)
    parser.add_argument("--metrics-off", action="store_true", help="compare with metrics off")
    args = parser.parse_args()
    rng = random.Random(7)
    queries = [text(rng, 4) for _ in range(50)]

    with launch.scratch_database("bench_api") as url:
        env = launch.portal_env(url, RAG_EMBEDDER="fake", RAG_LOGIN_RATE="1000/minute")
        launch.prepare(env, PASSWORD)
        launch.set_source(url, "acme", COLLECTION, True)
        log = PROJECT_ROOT / ".bench-cache" / "api-load-portal.log"
        with launch.gunicorn(env, log, workers=args.workers, threads=1) as port:
            token = launch.login(port, HOST, "alice", PASSWORD)
            with launch.client(port, HOST, token) as api:
                for _ in range(args.documents):
                    body = {"collection": COLLECTION, "content": text(rng, 120)}
                    api.post("/api/rag/ingest", json=body).raise_for_status()

            with psycopg.connect(url) as conn:
                alice = conn.execute(
                    "SELECT id FROM acme.auth_user WHERE username = 'alice'"
                ).fetchone()
            assert alice is not None
            store = PostgresStore(url, schema="acme", pool_max_size=args.clients)
            info = store.get_collection(COLLECTION, owner=f"user:{alice[0]}")
            searcher = CollectionSearcher(store, FakeEmbedder(16))

            def library_search(strategy: str) -> Callable[[int], Callable[[], bool]]:
                def make(index: int) -> Callable[[], bool]:
                    local = random.Random(index)

                    def work() -> bool:
                        searcher.search(info, local.choice(queries), strategy=strategy)
                        return True

                    return work

                return make

            phases = []
            for strategy in ("semantic", "hybrid"):
                phases.append(
                    run_phase(
                        f"API search {strategy}",
                        args.clients,
                        args.seconds,
                        search_workers(port, token, queries, strategy),
                    )
                )
                phases.append(
                    run_phase(
                        f"library search {strategy}",
                        args.clients,
                        args.seconds,
                        library_search(strategy),
                    )
                )
            phases.append(
                run_phase(
                    "API ingest (120 words)",
                    args.clients,
                    args.seconds,
                    ingest_workers(port, token, seed=1000),
                )
            )
            store.close()
            if args.metrics_off:
                phases += metrics_comparison(env, args, token, queries, port)

    print(
        f"{args.clients} clients, gunicorn -w {args.workers}, {args.documents} documents, "
        f"{args.seconds:.0f} s per phase"
    )
    for phase in phases:
        print(phase.row())
    by_name = {phase.name: phase for phase in phases}
    for strategy in ("semantic", "hybrid"):
        served, direct = by_name[f"API search {strategy}"], by_name[f"library search {strategy}"]
        p50 = statistics.median(served.latencies) / statistics.median(direct.latencies)
        print(
            f"API overhead {strategy:8}: throughput {direct.rps / served.rps:5.2f}x lower, "
            f"p50 {p50:5.2f}x, p95 {served.percentile(0.95) / direct.percentile(0.95):5.2f}x"
        )


if __name__ == "__main__":
    main()
