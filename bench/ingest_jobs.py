"""Ingestion jobs end to end against the bare model, and the latency of submitting one.

Not a test: ``bench/ingest.py --jobs`` runs it, on a scratch database of its own and the
portal under gunicorn as :func:`bench.ingest.served` makes them. In one run:

- **Jobs.** The first N SciFact documents are submitted with ``"async": true`` (one
  ``POST /api/rag/ingest`` each, or ``--batch`` per ``POST /api/rag/ingest/batch``), to be
  run by one worker process (``manage.py rag_worker`` through ``portal.launch.worker``), then
  by two. The jobs of one owner's collection share a queue lock and run one after another, so
  the requests alternate between alice and bob of tenant acme (each their own collection of
  one name): two workers can then run two jobs side by side. Both measurements split the
  documents so; only the number of workers differs. Each has a fresh collection and an
  emptied embedding cache (``acme.rag_embedding_cache``: keyed by model and text hash, it
  would otherwise serve the vectors of the measurement before). Its workers are started
  (each runs its model at its largest input shape before registering, as deployed) and
  registered, and each runs a tiny job through the queue before the clock starts (after the
  first measurement its document is unchanged: it embeds nothing); the clock runs from the
  first submit to the last job's ``finished_at``. With two workers each has one embedding
  thread per two cores (``RAG_EMBEDDING_THREADS``, the README's production layout). The first
  measurement (one worker) is the tenant's first sight of the documents' words, which its
  store writes index for the fuzzy leg once per schema: it is reported on its own line, and
  the others, with the words known, are the job path's steady state. The jobs' ends are
  polled in the tenant's job table (an index probe every 0.5 s: polling the API took CPU
  from the worker measured), then read through the API once.
- **Bare model.** ``TextEmbedding.embed`` of the same loaded ONNX model, warmed as a worker
  warms its own (:func:`bench.ingest.warm_bare_model`), in this process and
  with no worker running, embeds each job's distinct chunks in the calls the worker's embedder
  makes (``length_batches`` of ``CPU_BATCH_SIZE``): before the first measurement, between
  measurements and after the last, so each is bracketed by two model passes whose mean is its
  baseline, and load drift hits both sides. Overhead = (jobs − model) / model.
- **Inside the jobs.** The workers log the model's own time in each job (``model_ms`` of
  ``rag.ingest_batch``): "beyond" = (Σ job spans − Σ their model time) / Σ model time, the
  job path's cost with no second process's model in it (the bare passes spread ~10 %).
- **Submit latency.** With no worker running, ``POST /api/rag/ingest`` with ``"async": true``
  of documents of 1 KB, 100 KB and 1 MB (SciFact text), the sizes taken in turn, timed by the
  client with the body encoded beforehand. Those jobs stay queued and go with the database.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.ingest import (
    HOST,
    PASSWORD,
    SOURCE,
    bare_model_seconds,
    model_batches,
    requests,
    served,
    warm_bare_model,
)
from bench.ingest_jobs_report import NEW_WORDS, REPORT_ROWS, quantiles, summary
from portal import launch
from portal.embedded_db import PROJECT_ROOT
from rag_plugin.chunking import TextChunker

USERS = ("alice", "bob")
"""Who submits the jobs, request by request in turn: two owners, two queue locks."""
ADMIN = "admin"
POLL_S = 0.5
SIZES = {"1 KB": 1024, "100 KB": 100 * 1024, "1 MB": 1024 * 1024}
LOGS = PROJECT_ROOT / ".bench-cache"


def run(
    documents: list[dict[str, str]],
    chunker: TextChunker,
    *,
    batch: int,
    rounds: int,
    submits: int,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Measure the bare model and the jobs with 1 and 2 workers, ``rounds`` times, then the
    submit latency; return the report."""
    calls = model_batches(documents, chunker, batch)
    warm_bare_model()
    with (
        launch.scratch_database("bench_ingest_jobs") as url,
        served(url) as (port, env),
        ExitStack() as stack,
    ):
        clients = {
            user: stack.enter_context(
                launch.client(port, HOST, launch.login(port, HOST, user, PASSWORD), timeout=300)
            )
            for user in (*USERS, ADMIN)
        }
        model = [model_pass(calls)]
        # The first measurement is the tenant's first sight of the documents' words: its
        # store writes also index them for the fuzzy leg (``rag_near_keys``, once per schema),
        # which the later ones, with the words known, do not. It is reported on its own.
        passes: dict[int | str, list[dict[str, float]]] = {NEW_WORDS: [], 1: [], 2: []}
        for number in range(rounds):
            for workers in (1, 2):
                collection = f"jobs_r{number}_w{workers}"
                launch.set_source(url, "acme", collection, True)
                measured = jobs_pass(
                    url,
                    worker_env(env, workers),
                    clients,
                    collection,
                    requests(documents, batch),
                    workers=workers,
                    concurrency=concurrency,
                )
                model.append(model_pass(calls))
                key = NEW_WORDS if number == 0 and workers == 1 else workers
                passes[key].append({**measured, "model_s": (model[-2] + model[-1]) / 2})
        latency = submit_latency(clients["alice"], documents, submits)
    chunks = {int(p["chunks"]) for runs in passes.values() for p in runs}
    if len(chunks) != 1:
        raise RuntimeError(f"The measurements created different numbers of chunks: {chunks}.")
    (chunk_count,) = chunks
    model_s = statistics.mean(model)
    return {
        "documents": len(documents),
        "documents_per_job": batch or 1,
        "jobs": len(calls),
        "chunks": chunk_count,
        "distinct_texts_embedded": sum(len(b) for call in calls for b in call),
        "rounds": rounds,
        "worker_concurrency": concurrency,
        "bare_model": {
            "s": round(model_s, 2),
            "chunks_per_s": round(chunk_count / model_s, 1),
            "passes_s": [round(m, 2) for m in model],
        },
        "embedding_threads_per_worker": {
            str(workers): worker_env({}, workers).get("RAG_EMBEDDING_THREADS", "0")
            for workers in (1, 2)
        },
        **{REPORT_ROWS[key][0]: summary(runs, chunk_count) for key, runs in passes.items() if runs},
        "submit_latency_ms": latency,
    }


def worker_env(env: Mapping[str, str], workers: int) -> dict[str, str]:
    """The workers' environment: with several on this machine, each gets cores ÷ workers
    embedding threads, as the README's production layout says (``RAG_EMBEDDING_THREADS``;
    each would take every core otherwise), unless the caller's environment sets it."""
    threads = os.environ.get("RAG_EMBEDDING_THREADS")
    if threads is None and workers > 1:
        threads = str(max(1, (os.cpu_count() or 1) // workers))
    return {**env, **({"RAG_EMBEDDING_THREADS": threads} if threads is not None else {})}


def model_pass(calls: list[list[list[str]]]) -> float:
    """Seconds the bare model takes for every job's calls."""
    return sum(bare_model_seconds(job) for job in calls)


def jobs_pass(
    url: str,
    env: Mapping[str, str],
    clients: Mapping[str, httpx.Client],
    collection: str,
    requests_: list[list[dict[str, str]]],
    *,
    workers: int,
    concurrency: int = 1,
) -> dict[str, float]:
    """Submit ``requests_`` as jobs into ``collection`` (alice and bob in turn) with
    ``workers`` workers running; the seconds from the first submit to the last job's end."""
    logs = [LOGS / f"ingest-jobs-worker-{n}.log" for n in range(workers)]
    offsets = [path.stat().st_size if path.exists() else 0 for path in logs]
    with ExitStack() as stack:
        first_id = _worker_ids(url)
        processes = [
            stack.enter_context(launch.worker(env, path, concurrency=concurrency)) for path in logs
        ]
        wait_registered(url, first_id, processes)
        warm = [
            submit(clients[USERS[n]], SOURCE, [{"content": "warm up " * 10, "source": f"warm{n}"}])
            for n in range(workers)
        ]
        wait_ended(url, clients[ADMIN], SOURCE, warm)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("TRUNCATE acme.rag_embedding_cache")
        started = time.time()
        ids = [
            submit(clients[USERS[n % len(USERS)]], collection, request)
            for n, request in enumerate(requests_)
        ]
        submitted = time.time() - started
        jobs = wait_ended(url, clients[ADMIN], collection, ids)
    failed = [job for job in jobs if job["state"] != "succeeded"]
    if failed:
        raise RuntimeError(f"{len(failed)} jobs did not succeed, e.g. {failed[0]}")
    results = [result for job in jobs for result in job["results"]]
    if any(result["unchanged"] for result in results):
        raise RuntimeError(f"Documents of the fresh collection {collection} came back unchanged.")
    starts = [_at(job["started_at"]) for job in jobs]
    ends = [_at(job["finished_at"]) for job in jobs]
    return {
        "s": max(ends) - started,
        "submit_s": submitted,
        "first_start_s": min(starts) - started,
        "in_jobs_s": sum(end - start for start, end in zip(starts, ends, strict=True)),
        "model_in_jobs_s": model_in_jobs(
            dict(zip(logs, offsets, strict=True)), collection, len(ids)
        ),
        "chunks": sum(result["chunks_created"] for result in results),
    }


def model_in_jobs(logs: Mapping[Path, int], collection: str, jobs: int) -> float:
    """Seconds the workers' model took in the ``jobs`` of ``collection``: the ``model_ms`` of
    their ``rag.ingest_batch`` log lines, written in ``logs`` after the offsets given, which
    the process that ran the model timed."""
    lines = []
    for path, offset in logs.items():
        with open(path, "rb") as log:
            log.seek(offset)
            found = [json.loads(line) for line in log if b'"rag.ingest_batch"' in line]
        lines += [line for line in found if line["collection"] == collection]
    if len(lines) != jobs:
        raise RuntimeError(f"{len(lines)} ingest log lines, not {jobs}; see {LOGS}")
    return sum(float(line["model_ms"]) for line in lines) / 1000


def _worker_ids(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT coalesce(max(id), 0) FROM procrastinate_workers").fetchone()
    return int(row[0]) if row else 0


def wait_registered(url: str, after_id: int, processes: Sequence[Any]) -> None:
    """Wait until every worker process has loaded the model and registered with the queue."""
    deadline = time.monotonic() + 180
    while True:
        if any(process.poll() is not None for process in processes):
            raise RuntimeError(f"A worker exited; see {LOGS}/ingest-jobs-worker-*.log")
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM procrastinate_workers WHERE id > %s", (after_id,)
            ).fetchone()
        if row and row[0] >= len(processes):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"The workers did not register in 180 s; see {LOGS}")
        time.sleep(0.2)


def submit(client: httpx.Client, collection: str, request: list[dict[str, str]]) -> str:
    """Submit one job of ``request``'s documents; its id."""
    if len(request) == 1:
        body: dict[str, Any] = {"collection": collection, "async": True, **request[0]}
        response = client.post("/api/rag/ingest", json=body)
    else:
        body = {"collection": collection, "async": True, "documents": request}
        response = client.post("/api/rag/ingest/batch", json=body)
    if response.status_code != 202:
        raise RuntimeError(f"submit failed: {response.status_code} {response.text}")
    return str(response.json()["job_id"])


def wait_ended(
    url: str, admin: httpx.Client, collection: str, ids: list[str]
) -> list[dict[str, Any]]:
    """Wait until the jobs ``ids`` have all ended (asking the tenant's job table, which costs
    the worker nothing measurable); return them as the API lists them."""
    deadline = time.monotonic() + 900
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM acme.tenants_ingestjob"
                " WHERE id = ANY(%s::uuid[]) AND finished_at IS NULL",
                (ids,),
            ).fetchone()
            if row is not None and row[0] == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"The jobs of {collection} did not end in 900 s; see {LOGS}")
            time.sleep(POLL_S)
    response = admin.get("/api/rag/jobs", params={"collection": collection, "limit": 1000})
    response.raise_for_status()
    wanted = set(ids)
    jobs = [job for job in response.json()["jobs"] if job["id"] in wanted]
    if len(jobs) != len(wanted):
        raise RuntimeError(f"The job list of {collection} lacks {len(wanted) - len(jobs)} jobs.")
    return jobs


def _at(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def submit_latency(
    client: httpx.Client, documents: list[dict[str, str]], count: int
) -> dict[str, dict[str, float]]:
    """ms per ``"async": true`` submit of ``count`` documents of each size, sizes in turn."""
    text = "\n\n".join(document["content"] for document in documents)
    bodies = {}
    for label, size in SIZES.items():
        encoded = (text * (size // len(text) + 1)).encode("utf-8")[:size]
        bodies[label] = encoded.decode("utf-8", errors="ignore")
    times: dict[str, list[float]] = {label: [] for label in SIZES}
    for number in range(count):
        for label, content in bodies.items():
            body = json.dumps(
                {
                    "collection": SOURCE,
                    "async": True,
                    "source": f"latency-{label}-{number}",
                    "content": content,
                }
            ).encode("utf-8")
            started = time.perf_counter()
            response = client.post(
                "/api/rag/ingest", content=body, headers={"Content-Type": "application/json"}
            )
            times[label].append(1000 * (time.perf_counter() - started))
            if response.status_code != 202:
                raise RuntimeError(f"submit failed: {response.status_code} {response.text}")
    return {label: {"n": len(samples), **quantiles(samples)} for label, samples in times.items()}
