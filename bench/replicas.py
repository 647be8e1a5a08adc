"""Search throughput on 0, 1 and 2 streaming standbys, database CPU per query, and lag.

Not a test. Run from the repository root:
``PYTHONPATH=. .venv/bin/python bench/replicas.py [--chunks 100000] [--clients 8]``
``[--seconds 20] [--rounds 2]``.

A primary of its own (the embedded PostgreSQL's binaries, as the replica tests start one) is
loaded with bench/real_query.py's corpus (SciFact + Vaswani windows, ``FakeEmbedder(384)``
vectors, HNSW built after the load); then two standbys are made from it with
``pg_basebackup -R`` and followed until they have replayed it all. ``--clients`` processes
(each its own store and pool, as gunicorn workers would be) run hybrid searches
(``top_k=10``) over the 902 real queries for ``--seconds``, reading on 0 (the primary), 1 or
2 standbys; the three set-ups alternate for ``--rounds`` rounds, so the machine's drift hits
them alike. Reported per set-up: searches/s, p50/p95 ms, and the CPU seconds each server's
processes spent per search (from /proc, sampled while the clients' connections are open),
with the clients' own CPU per search.

On this machine the standbys share the two cores with the primary and the clients, so their
throughput cannot add up; the CPU per search says what standbys on machines of their own
would give (printed as a prediction). Last, the replication lag under a steady ingest
(documents of 16 chunks, one transaction each, for ``--seconds``), as the portal's
``ReplicaSet`` measures it and as ``pg_stat_replication.replay_lag`` reports it.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import resource
import statistics
import threading
import time
from contextlib import closing
from typing import Any

import psutil
import psycopg
from psycopg import sql

from bench.measure import quantiles
from bench.real_corpus import collection_name, load, queries
from bench.store_schema import DIMENSIONS
from rag_plugin.engine import CollectionSearcher
from rag_plugin.stores.base import ChunkInput, DocumentInput
from rag_plugin.stores.postgres import PostgresStore, ReplicaSet
from rag_plugin.stores.postgres.replicas import parse_lsn
from rag_plugin.testing import FakeEmbedder, fake_vector
from tests.portal.private_postgres import PrivatePostgres, Standby, private_postgres

SCHEMA = "bench_replicas"


def server_cpu_s(server: PrivatePostgres) -> float:
    """CPU seconds (user + system) of a server's postmaster and every process under it."""
    postmaster = psutil.Process(int((server.data_dir / "postmaster.pid").read_text().split()[0]))
    total = 0.0
    for process in [postmaster, *postmaster.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def client(
    dsn: str, replicas: list[str], name: str, seconds: float, offset: int, gates: Any, out: Any
) -> None:
    """One client process: warm up, wait for the start, search for ``seconds``, report."""
    replica_set = ReplicaSet(dsn, replicas) if replicas else None
    store = PostgresStore(dsn, schema=SCHEMA, create_schema=False, replicas=replica_set)
    collection = store.get_collection(name)
    searcher = CollectionSearcher(store, FakeEmbedder(DIMENSIONS))
    typed = queries()
    picks = itertools.cycle(range(offset, offset + len(typed)))
    for _ in range(10):
        searcher.search(collection, typed[next(picks) % len(typed)], strategy="hybrid", top_k=10)
    gates.wait()  # everyone warm: the parent samples the servers' CPU, then all start
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    times = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        searcher.search(collection, typed[next(picks) % len(typed)], strategy="hybrid", top_k=10)
        times.append((time.perf_counter() - started) * 1000)
    used = resource.getrusage(resource.RUSAGE_SELF)
    out.put({"times": times, "cpu_s": used.ru_utime - cpu.ru_utime + used.ru_stime - cpu.ru_stime})
    gates.wait()  # the parent samples the CPU again while our connections are still open
    gates.wait()
    store.close()
    if replica_set is not None:
        replica_set.close()


def phase(
    primary: PrivatePostgres,
    standbys: list[Standby],
    replicas: int,
    name: str,
    clients: int,
    seconds: float,
) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    gates = context.Barrier(clients + 1)
    out = context.Queue()
    urls = [s.url() for s in standbys[:replicas]]
    processes = [
        context.Process(
            target=client, args=(primary.url(), urls, name, seconds, 97 * c, gates, out)
        )
        for c in range(clients)
    ]
    for process in processes:
        process.start()
    servers = [primary, *standbys]
    before = [server_cpu_s(s) for s in servers]
    gates.wait()
    started = time.perf_counter()
    results = [out.get() for _ in processes]
    gates.wait()
    wall = time.perf_counter() - started
    after = [server_cpu_s(s) for s in servers]
    gates.wait()
    for process in processes:
        process.join()
    times = [t for r in results for t in r["times"]]
    count = len(times)
    return {
        "replicas": replicas,
        "searches": count,
        "per_s": count / seconds,
        "wall_s": wall,
        "quantiles": quantiles(times),
        "server_cpu_ms": [(a - b) * 1000 / count for a, b in zip(after, before, strict=True)],
        "client_cpu_ms": sum(r["cpu_s"] for r in results) * 1000 / count,
    }


def replayed(primary: PrivatePostgres, standbys: list[Standby]) -> None:
    with psycopg.connect(primary.url(), autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    assert row is not None
    target = parse_lsn(row[0])
    for standby in standbys:
        while True:
            with psycopg.connect(standby.url(), autocommit=True) as conn:
                got = conn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()
            if got is not None and parse_lsn(got[0]) >= target:
                break
            time.sleep(0.2)


def lag_under_ingest(
    primary: PrivatePostgres, standbys: list[Standby], seconds: float
) -> dict[str, Any]:
    replica_set = ReplicaSet(primary.url(), [s.url() for s in standbys], check_every_s=0.25)
    store = PostgresStore(primary.url(), schema=SCHEMA, create_schema=False)
    collection = store.create_collection(
        "lag_probe", dimensions=DIMENSIONS, embedding_model=FakeEmbedder(DIMENSIONS).model_name
    )
    stop = threading.Event()
    written = [0]

    def ingest() -> None:
        for number in itertools.count():
            if stop.is_set():
                return
            texts = [
                f"steady ingest document {number} part {j} of the lag probe" for j in range(16)
            ]
            chunks = [
                ChunkInput(j, t, 0, len(t), fake_vector(t, DIMENSIONS), {})
                for j, t in enumerate(texts)
            ]
            store.upsert_document(collection, DocumentInput(source=f"lag/{number}"), chunks)
            written[0] += 1

    writer = threading.Thread(target=ingest)
    writer.start()
    lags: list[list[float]] = [[] for _ in standbys]
    replay: list[float] = []
    deadline = time.monotonic() + seconds
    with psycopg.connect(primary.url(), autocommit=True) as conn:
        while time.monotonic() < deadline:
            time.sleep(0.25)
            for position, status in enumerate(replica_set.status()):
                if status.lag_s is not None:
                    lags[position].append(status.lag_s)
            for (value,) in conn.execute(
                "SELECT EXTRACT(EPOCH FROM replay_lag) FROM pg_stat_replication"
                " WHERE replay_lag IS NOT NULL"
            ).fetchall():
                replay.append(float(value))
    stop.set()
    writer.join()
    replica_set.close()
    store.delete_collection("lag_probe")
    store.close()

    def summary(values: list[float]) -> str:
        if not values:
            return "no samples"
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        return (
            f"p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
            f"max {ordered[-1] * 1000:.0f} ms ({len(ordered)} samples)"
        )

    return {
        "documents_per_s": written[0] / seconds,
        "replica_set": [summary(values) for values in lags],
        "replay_lag": summary(replay),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with private_postgres() as primary:
        dsn = primary.url()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        with closing(PostgresStore(dsn, schema=SCHEMA)) as store:
            collection, load_s, build_s = load(store, dsn, args.chunks)
        print(
            f"loaded {collection.chunk_count:,} chunks ({collection_name(args.chunks)}) in "
            f"{load_s:.0f} s, HNSW {build_s:.0f} s"
        )
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("VACUUM ANALYZE"))
        started = time.perf_counter()
        standbys = [Standby(primary, f"standby{n}", 0) for n in range(2)]
        replayed(primary, standbys)
        print(f"two standbys by pg_basebackup, caught up in {time.perf_counter() - started:.0f} s")
        print(
            f"load average {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d %H:%M')}; "
            f"{args.clients} clients, {args.seconds:g} s per set-up, {args.rounds} rounds"
        )
        runs: dict[int, list[dict[str, Any]]] = {0: [], 1: [], 2: []}
        for _ in range(args.rounds):
            for replicas in (0, 1, 2):
                result = phase(
                    primary, standbys, replicas, collection.name, args.clients, args.seconds
                )
                runs[replicas].append(result)
                cpu = ", ".join(f"{c:.2f}" for c in result["server_cpu_ms"])
                print(
                    f"  {replicas} standbys: {result['per_s']:.1f} searches/s, "
                    f"p50 {result['quantiles']['p50']:.1f} p95 {result['quantiles']['p95']:.1f}"
                    f" ms; server CPU ms/search (primary, standby0, standby1) {cpu}; "
                    f"clients {result['client_cpu_ms']:.2f}",
                    flush=True,
                )
        base = statistics.mean(r["per_s"] for r in runs[0])
        print("\nsummary (mean of rounds; ratio against 0 standbys in this run)")
        for replicas, results in runs.items():
            per_s = statistics.mean(r["per_s"] for r in results)
            cpu = [statistics.mean(r["server_cpu_ms"][i] for r in results) for i in range(3)]
            client_cpu = statistics.mean(r["client_cpu_ms"] for r in results)
            print(
                f"  {replicas} standbys: {per_s:.1f} searches/s ({per_s / base:.2f}x); "
                f"database CPU ms/search: primary {cpu[0]:.2f}, standbys "
                f"{cpu[1] + cpu[2]:.2f}; clients {client_cpu:.2f}"
            )
        on_primary = statistics.mean(r["server_cpu_ms"][0] for r in runs[0])
        on_standby = statistics.mean(r["server_cpu_ms"][1] + r["server_cpu_ms"][2] for r in runs[2])
        cores = 2
        print(
            f"\nprediction: a search costs {on_primary:.2f} ms of database CPU on the primary "
            f"alone and {on_standby:.2f} ms on a standby; a {cores}-core database machine "
            f"serves at most {cores * 1000 / on_primary:.0f} searches/s, so each standby on "
            f"a machine of its own adds about {cores * 1000 / on_standby:.0f} searches/s "
            "(the app processes on machines of their own)"
        )
        lag = lag_under_ingest(primary, standbys, args.seconds)
        print(
            f"\nlag under a steady ingest ({lag['documents_per_s']:.1f} documents/s of 16 chunks):"
        )
        for number, text in enumerate(lag["replica_set"]):
            print(f"  standby{number} as ReplicaSet measures it: {text}")
        print(f"  pg_stat_replication.replay_lag (both): {lag['replay_lag']}")
        for standby in standbys:
            standby.pg_ctl("-w", "-m", "fast", "stop")


if __name__ == "__main__":
    main()
