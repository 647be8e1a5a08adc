"""End-to-end ingest through the REST API with the real model vs the bare model, and re-ingest.

Not a test. Run from the repository root:
``PYTHONPATH=. .venv/bin/python bench/ingest.py [--documents 40]``.

It makes a database of its own on the embedded PostgreSQL (``migrate_schemas`` +
``bootstrap_demo``, as the test suite's portal fixture does), serves the portal under gunicorn
(one worker, ``RAG_EMBEDDER=fastembed``: the bundled offline model and the tenant's PostgreSQL
embedding cache) and, as alice of tenant acme, ``POST /api/rag/ingest``s the first N SciFact
documents (title + text) one request each. In the same run the bare model —
``TextEmbedding.embed`` of the same loaded ONNX model — embeds exactly the chunks the API
made, in the calls the server's embedder makes, right next to each request (alternately
before and after it, so load drift on a shared machine hits both sides alike). Then the same
documents are ingested again: unchanged sources, which the API recognises and does not redo.

Reports: first ingest seconds, model seconds, overhead = (API − model) / model, re-ingest
seconds and first / re-ingest.

``--batch N`` sends the documents N per request to ``POST /api/rag/ingest/batch`` instead
(one embed call and one store write per request); the bare model then embeds each request's
distinct chunks in the batches the server's embedder makes of them (``length_batches`` of the
model's ``CPU_BATCH_SIZE``: similar lengths together).

``--jobs`` measures ingestion jobs instead: submitted with ``"async": true`` and run by one
worker, then by two, against the bare model, and the latency of a submit of 1 KB, 100 KB and
1 MB (see :mod:`bench.ingest_jobs`; ``--rounds``, ``--submits``).

``--store-only`` measures instead the largest non-model cost alone, in seconds and without
the model: ``PostgresStore.upsert_document`` of the same documents' chunks (fake 384-d
vectors) on one autocommitting pooled connection, as the portal lends it, in ms/document
and round trips/document (counted in a libpq trace: each turn from sending to receiving).
With ``--batch N`` each write is ``upsert_documents`` of N documents, as a job of N writes
them, and a third pass writes them into a second collection: words the schema knows but the
collection does not, the job bench's steady state (ms and round trips per write).
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from psycopg_pool import ConnectionPool

from bench.beir import load_beir
from portal import launch
from portal.embedded_db import PROJECT_ROOT, ensure_extensions
from rag_plugin.chunking import TextChunker, api_chunker_config
from rag_plugin.embedding import BUNDLED_MODEL
from rag_plugin.embedding.base import length_batches
from rag_plugin.embedding.dedup import normalize_for_dedup
from rag_plugin.embedding.fastembed_backend import CPU_BATCH_SIZE, FastEmbedEmbedder, load_model
from rag_plugin.stores.base import ChunkInput, DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.testing import FakeEmbedder

HOST = "acme.localhost"
PASSWORD = "bench-pass-2026"  # noqa: S105 - a throwaway database's demo users
SOURCE = "bench"


@contextmanager
def served(url: str) -> Iterator[tuple[int, dict[str, str]]]:
    """The portal under gunicorn on ``url`` with the real model: its port and environment."""
    # bootstrap_demo's demo documents only need the fake embedder; the server is real.
    env = launch.portal_env(url, RAG_EMBEDDER="fake", RAG_LOGIN_RATE="1000/minute")
    launch.prepare(env, PASSWORD)
    launch.set_source(url, "acme", SOURCE, True)
    env["RAG_EMBEDDER"] = "fastembed"
    log_path = PROJECT_ROOT / ".bench-cache" / "ingest-portal.log"
    with launch.gunicorn(env, log_path, workers=1, threads=2) as port:
        yield port, env


@contextmanager
def portal(url: str) -> Iterator[httpx.Client]:
    """The portal under gunicorn on ``url`` with the real model; a logged-in client for alice."""
    with served(url) as (port, _):
        token = launch.login(port, HOST, "alice", PASSWORD)
        with launch.client(port, HOST, token, timeout=300) as client:
            yield client


def ingest_all(
    client: httpx.Client,
    documents: list[dict[str, str]],
    batch: int,
    model_calls: list[list[list[str]]] | None = None,
) -> tuple[float, float, int]:
    """POST every document, one request each or ``batch`` per request; return the seconds
    the requests took, the seconds the bare model took and the chunks created.

    With ``model_calls`` (the model's calls per request, from :func:`model_batches`), the bare
    model embeds each request's chunks right next to that request, before it on even requests
    and after it on odd ones, so a drift in the machine's speed hits both sides alike.
    """
    chunks = 0
    api = model = 0.0
    for number, request in enumerate(requests(documents, batch)):
        if model_calls is not None and number % 2 == 0:
            model += bare_model_seconds(model_calls[number])
        started = time.perf_counter()
        if batch:
            body: dict[str, Any] = {"collection": SOURCE, "documents": request}
            response = client.post("/api/rag/ingest/batch", json=body)
        else:
            response = client.post("/api/rag/ingest", json={"collection": SOURCE, **request[0]})
        api += time.perf_counter() - started
        if response.status_code != 200:
            raise RuntimeError(f"ingest failed: {response.status_code} {response.text}")
        chunks += int(response.json()["chunks_created"])
        if model_calls is not None and number % 2 == 1:
            model += bare_model_seconds(model_calls[number])
    return api, model, chunks


def requests(documents: list[dict[str, str]], batch: int) -> list[list[dict[str, str]]]:
    """The documents as the requests send them: one each, or ``batch`` at a time."""
    size = batch or 1
    return [documents[start : start + size] for start in range(0, len(documents), size)]


def model_batches(
    documents: list[dict[str, str]], chunker: TextChunker, batch: int
) -> list[list[list[str]]]:
    """Per request, the texts of each call the server's embedder makes to the model: the
    request's distinct chunks, in batches of similar length."""
    calls = []
    for request in requests(documents, batch):
        texts = list(
            dict.fromkeys(
                normalize_for_dedup(c.content) for d in request for c in chunker.chunk(d["content"])
            )
        )
        positions = length_batches([len(text) for text in texts], CPU_BATCH_SIZE)
        calls.append([[texts[position] for position in group] for group in positions])
    return calls


def warm_bare_model() -> None:
    """Load the bare model and run it at its largest input shape, as a worker does before its
    first job (:meth:`FastEmbedEmbedder.warm_up`; the same loaded model, not timed)."""
    FastEmbedEmbedder(BUNDLED_MODEL, fallback_model=None).warm_up()


def bare_model_seconds(batches: list[list[str]]) -> float:
    """Seconds the loaded model takes to embed ``batches`` (one call each)."""
    model = load_model(BUNDLED_MODEL).model
    started = time.perf_counter()
    for batch in batches:
        list(model.embed(batch, batch_size=max(len(batch), 1)))
    return time.perf_counter() - started


def store_write(
    documents: list[dict[str, str]], chunker: TextChunker, batch: int = 0
) -> dict[str, Any]:
    """ms and round trips of the store's writes alone: per document (``upsert_documents`` of
    one, which is what ``upsert_document`` does), or with ``batch`` per write of that many;
    new, replaced, and (with ``batch``) into a second collection."""
    embedder = FakeEmbedder(384)
    inputs = []
    for raw in documents:
        pieces = chunker.chunk(raw["content"])
        vectors = embedder.embed([piece.content for piece in pieces])
        chunks = [
            ChunkInput(p.index, p.content, p.start_offset, p.end_offset, vector)
            for p, vector in zip(pieces, vectors, strict=True)
        ]
        inputs.append((DocumentInput(source=raw["source"], title=raw["title"]), chunks))
    size = batch or 1
    writes = [inputs[start : start + size] for start in range(0, len(inputs), size)]
    unit = "write" if batch else "document"
    report: dict[str, Any] = {"documents": len(documents), "documents_per_write": size}
    with (
        launch.scratch_database("bench_store_write") as url,
        ConnectionPool(url, min_size=1, max_size=1, kwargs={"autocommit": True}) as pool,
        tempfile.TemporaryDirectory() as folder,
    ):
        ensure_extensions(url)
        store = PostgresStore(pool, schema="bench")
        docs = store.create_collection("docs", dimensions=384, embedding_model="fake-384")
        passes = [("new", docs), ("replaced", docs)]
        if batch:
            other = store.create_collection("other", dimensions=384, embedding_model="fake-384")
            passes.append(("known_words", other))
        trace = Path(folder) / "libpq.trace"
        for label, collection in passes:
            with trace.open("wb") as out:
                with pool.connection() as conn:  # the pool's only connection
                    conn.pgconn.trace(out.fileno())
                started = time.perf_counter()
                for write in writes:
                    store.upsert_documents(collection, write)
                elapsed = time.perf_counter() - started
                with pool.connection() as conn:
                    conn.pgconn.untrace()
            directions = [line.split(b"\t")[1] for line in trace.read_bytes().splitlines()]
            turns = sum(1 for turn in itertools.pairwise(directions) if turn == (b"F", b"B"))
            report[f"{label}_ms_per_{unit}"] = round(1000 * elapsed / len(writes), 1)
            report[f"{label}_round_trips_per_{unit}"] = round(turns / len(writes), 1)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(PROJECT_ROOT.parent / "shared/eval/scifact"))
    parser.add_argument("--split", default="train")
    parser.add_argument("--documents", type=int, default=40)
    parser.add_argument(
        "--batch",
        type=int,
        default=0,
        help="documents per /api/rag/ingest/batch request (0: one /api/rag/ingest each)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--store-only", action="store_true", help="time upsert_document alone (no model, no HTTP)"
    )
    parser.add_argument(
        "--jobs", action="store_true", help="ingestion jobs with 1 and 2 workers, submit latency"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="--jobs: measurements per worker count"
    )
    parser.add_argument("--submits", type=int, default=50, help="--jobs: submits per size")
    parser.add_argument(
        "--concurrency", type=int, default=1, help="--jobs: rag_worker --concurrency of each worker"
    )
    args = parser.parse_args()

    corpus = list(load_beir(args.data, args.split).corpus.values())[: args.documents]
    documents = [
        {"title": d.title, "source": d.id, "content": d.ingest_text(with_title=True)}
        for d in corpus
    ]
    chunker = TextChunker(api_chunker_config())
    if args.store_only:
        _print(store_write(documents, chunker, args.batch), as_json=args.json)
        return
    if args.jobs:
        from bench import ingest_jobs  # it imports this module
        from bench.ingest_jobs_report import table

        report = ingest_jobs.run(
            documents,
            chunker,
            batch=args.batch,
            rounds=args.rounds,
            submits=args.submits,
            concurrency=args.concurrency,
        )
        print(json.dumps(report, indent=2) if args.json else table(report))
        return
    calls = model_batches(documents, chunker, args.batch)
    warm_bare_model()
    with launch.scratch_database("bench_ingest") as url, portal(url) as client:
        # The worker loads the model on its first embedding; that is start-up, not ingest.
        client.post("/api/rag/ingest", json={"collection": SOURCE, "content": "warm up " * 10})
        first, model, chunks = ingest_all(client, documents, args.batch, calls)
        again, _, chunks_again = ingest_all(client, documents, args.batch)
    report: dict[str, Any] = {
        "documents": len(documents),
        "documents_per_request": args.batch or 1,
        "chunks": chunks,
        "first_ingest_s": round(first, 2),
        "model_s": round(model, 2),
        "overhead": round((first - model) / model, 3),
        "reingest_s": round(again, 2),
        "reingest_chunks": chunks_again,
        "first_over_reingest": round(first / again, 1),
        "reingest_ms_per_document": round(1000 * again / len(documents), 1),
    }
    _print(report, as_json=args.json)


def _print(report: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        print(f"{key:34} {value}")


if __name__ == "__main__":
    main()
