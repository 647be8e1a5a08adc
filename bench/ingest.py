"""End-to-end ingest through the REST API with the real model vs the bare model, and re-ingest.

Not a test. Run from the repository root:
``PYTHONPATH=. .venv/bin/python bench/ingest.py [--documents 40]``.

It makes a database of its own on the embedded PostgreSQL (``migrate_schemas`` +
``bootstrap_demo``, as the test suite's portal fixture does), serves the portal under gunicorn
(one worker, ``RAG_EMBEDDER=fastembed``: the bundled offline model and the tenant's PostgreSQL
embedding cache) and, as alice of tenant acme, ``POST /api/rag/ingest``s the first N SciFact
documents (title + text) one request each. In the same run the bare model —
``TextEmbedding.embed`` of the same loaded ONNX model — embeds exactly the chunks the API
made, one batch per document as the API does, before and after the API pass (the mean
counts, so load drift on a shared machine hits both sides alike). Then the same documents
are ingested again: unchanged text, so every chunk comes from the embedding cache.

Reports: first ingest seconds, model seconds, overhead = (API − model) / model, re-ingest
seconds and first / re-ingest.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from bench.beir import load_beir
from portal import launch
from portal.embedded_db import PROJECT_ROOT
from rag_plugin.chunking import TextChunker, api_chunker_config
from rag_plugin.embedding import BUNDLED_MODEL
from rag_plugin.embedding.dedup import normalize_for_dedup
from rag_plugin.embedding.fastembed_backend import load_model

HOST = "acme.localhost"
PASSWORD = "bench-pass-2026"  # noqa: S105 - a throwaway database's demo users
SOURCE = "bench"


@contextmanager
def portal(url: str) -> Iterator[httpx.Client]:
    """The portal under gunicorn on ``url`` with the real model; a logged-in client for alice."""
    # bootstrap_demo's demo documents only need the fake embedder; the server is real.
    env = launch.portal_env(url, RAG_EMBEDDER="fake", RAG_LOGIN_RATE="1000/minute")
    launch.prepare(env, PASSWORD)
    launch.set_source(url, "acme", SOURCE, True)
    env["RAG_EMBEDDER"] = "fastembed"
    log_path = PROJECT_ROOT / ".bench-cache" / "ingest-portal.log"
    with launch.gunicorn(env, log_path, workers=1, threads=2) as port:
        token = launch.login(port, HOST, "alice", PASSWORD)
        with launch.client(port, HOST, token, timeout=300) as client:
            yield client


def ingest_all(client: httpx.Client, documents: list[dict[str, str]]) -> tuple[float, int]:
    """POST every document, one request each; return the seconds and chunks created."""
    chunks = 0
    started = time.perf_counter()
    for document in documents:
        response = client.post("/api/rag/ingest", json={"collection": SOURCE, **document})
        if response.status_code != 200:
            raise RuntimeError(f"ingest failed: {response.status_code} {response.text}")
        chunks += int(response.json()["chunks_created"])
    return time.perf_counter() - started, chunks


def bare_model_seconds(batches: list[list[str]]) -> float:
    """Seconds the loaded model takes to embed ``batches`` (one call per document)."""
    model = load_model(BUNDLED_MODEL).model
    started = time.perf_counter()
    for batch in batches:
        list(model.embed(batch, batch_size=max(len(batch), 1)))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(PROJECT_ROOT.parent / "shared/eval/scifact"))
    parser.add_argument("--split", default="train")
    parser.add_argument("--documents", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    corpus = list(load_beir(args.data, args.split).corpus.values())[: args.documents]
    documents = [
        {"title": d.title, "source": d.id, "content": d.ingest_text(with_title=True)}
        for d in corpus
    ]
    chunker = TextChunker(api_chunker_config())
    batches = [
        list(dict.fromkeys(normalize_for_dedup(c.content) for c in chunker.chunk(d["content"])))
        for d in documents
    ]
    bare_model_seconds([["warm up the model"]])  # loads it; not timed
    model_before = bare_model_seconds(batches)
    with launch.scratch_database("bench_ingest") as url, portal(url) as client:
        # The worker loads the model on its first embedding; that is start-up, not ingest.
        client.post("/api/rag/ingest", json={"collection": SOURCE, "content": "warm up " * 10})
        first, chunks = ingest_all(client, documents)
        model_after = bare_model_seconds(batches)
        again, chunks_again = ingest_all(client, documents)
    model = (model_before + model_after) / 2
    report: dict[str, Any] = {
        "documents": len(documents),
        "chunks": chunks,
        "first_ingest_s": round(first, 2),
        "model_s": round(model, 2),
        "model_before_s": round(model_before, 2),
        "model_after_s": round(model_after, 2),
        "overhead": round((first - model) / model, 3),
        "reingest_s": round(again, 2),
        "reingest_chunks": chunks_again,
        "first_over_reingest": round(first / again, 1),
        "reingest_ms_per_document": round(1000 * again / len(documents), 1),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        print(f"{key:28} {value}")


if __name__ == "__main__":
    main()
