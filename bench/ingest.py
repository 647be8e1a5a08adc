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
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.beir import load_beir
from portal.embedded_db import PROJECT_ROOT, database_url
from rag_plugin.chunking import TextChunker, api_chunker_config
from rag_plugin.embedding import BUNDLED_MODEL
from rag_plugin.embedding.dedup import normalize_for_dedup
from rag_plugin.embedding.fastembed_backend import load_model

HOST = "acme.localhost"
PASSWORD = "bench-pass-2026"  # noqa: S105 - a throwaway database's demo users
SOURCE = "bench"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT_ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
    )


@contextmanager
def own_database() -> Iterator[str]:
    """A fresh database on the embedded (or configured) PostgreSQL, dropped at the end."""
    base: dict[str, Any] = dict(conninfo_to_dict(database_url()))
    name = f"bench_ingest_{os.getpid()}"
    admin = make_conninfo(**{**base, "dbname": "postgres"})
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(drop)
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(**{**base, "dbname": name})
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(drop)


@contextmanager
def portal(url: str) -> Iterator[httpx.Client]:
    """The portal under gunicorn on ``url`` with the real model; a logged-in client for alice."""
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "RAG_EMBEDDER": "fake",  # bootstrap_demo's demo documents only; the server is real
        "RAG_LOGIN_RATE": "1000/minute",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": f"bench-{uuid.uuid4().hex}",
        "DJANGO_ALLOWED_HOSTS": "localhost,.localhost,127.0.0.1",
    }
    manage(env, "migrate_schemas", "--verbosity", "0")
    manage(env, "createcachetable")
    manage(env, "bootstrap_demo", "--password", PASSWORD)
    allow = sql.SQL(
        "INSERT INTO {}.tenants_ragsource "
        "(name, enabled, note, created_at, created_by, updated_at, updated_by) "
        "VALUES (%s, true, '', now(), 'bench', now(), 'bench') ON CONFLICT (name) DO NOTHING"
    ).format(sql.Identifier("acme"))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(allow, (SOURCE,))
    env["RAG_EMBEDDER"] = "fastembed"
    port = free_port()
    log_path = PROJECT_ROOT / ".bench-cache" / "ingest-portal.log"
    log_path.parent.mkdir(exist_ok=True)
    with open(log_path, "w") as log:
        gunicorn = [sys.executable, "-m", "gunicorn", "portal.wsgi", "--workers", "1"]
        gunicorn += ["--threads", "2", "--bind", f"127.0.0.1:{port}", "--timeout", "300"]
        server = subprocess.Popen(
            gunicorn, cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            headers = {"Host": f"{HOST}:{port}"}
            client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=300)
            deadline = time.monotonic() + 60
            while True:
                if server.poll() is not None:
                    raise RuntimeError(f"the portal exited; see {log_path}")
                try:
                    if client.get("/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the portal did not start in 60 s; see {log_path}")
                time.sleep(0.2)
            login = client.post("/api/auth/login", json={"username": "alice", "password": PASSWORD})
            login.raise_for_status()
            client.headers["Authorization"] = f"Bearer {login.json()['access_token']}"
            yield client
        finally:
            server.terminate()
            server.wait(timeout=30)


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
    with own_database() as url, portal(url) as client:
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
