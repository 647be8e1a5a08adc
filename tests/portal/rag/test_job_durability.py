"""Ingestion jobs survive their workers being SIGKILLed mid-job (SPEC J2).

Real processes on the embedded PostgreSQL: a gunicorn portal takes 20 jobs (two users, so two
collections and two queue locks), then over five rounds (``RAG_DURABILITY_ROUNDS`` sets more)
two ``manage.py rag_worker`` processes with the real embedding model start, work until a job is
mid-run, and are SIGKILLed at a random moment. Fresh workers finish the queue. Every job must
end succeeded, every document be whole and stored once, the lexical statistics match a
recount, and no job have run in two processes at once (checked from the workers' own logs).
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from portal import launch
from tests.conftest import LOGS, PortalServer
from tests.portal.rag.job_helpers import all_ended, job_events, job_rows
from tests.rag_plugin.stores.pg_helpers import statistics_mismatches

ACME = "acme.localhost"
SEED = int(os.environ.get("RAG_DURABILITY_SEED", "20261203"))
JOBS_PER_USER = 10
ROUNDS = int(os.environ.get("RAG_DURABILITY_ROUNDS", "5"))  # more for a soak run

SENTENCES = [
    "A worker takes a job from the queue and embeds its chunks before it writes them.",
    "The heartbeat of a worker tells the others that it is still alive and working.",
    "When the heartbeat stops the job goes back to the queue and another worker runs it.",
    "The document is written in one transaction, so it is either whole or absent.",
    "Retrieval mixes dense vectors with BM25 and fuzzy matching through rank fusion.",
    "Each tenant keeps its own schema, and each user keeps private collections in it.",
]


def document_text(number: int) -> str:
    """About 1,500 words (≈ 10 chunks), different for every document."""
    rng = random.Random(number)
    return " ".join(f"Section {number}.{i}: {rng.choice(SENTENCES)}" for i in range(110))


@pytest.fixture(scope="module")
def durable_env(portal_server: PortalServer) -> dict[str, str]:
    """The session database, the real embedding model, and quick failure detection."""
    return {
        **portal_server.env,
        "RAG_EMBEDDER": "fastembed",
        "RAG_JOB_MAX_ATTEMPTS": "10",
        "RAG_JOB_HEARTBEAT_S": "0.5",
        "RAG_JOB_STALLED_AFTER_S": "2",
        "RAG_JOB_RETRY_DELAY_S": "0",
    }


@pytest.fixture(scope="module")
def durable_server(
    portal_server: PortalServer, durable_env: dict[str, str]
) -> Iterator[PortalServer]:
    with launch.gunicorn(durable_env, LOGS / "portal-server-durability-test.log") as port:
        yield PortalServer(
            port, portal_server.password, portal_server.database_url, {}, durable_env
        )


def wait_until_mid_job(dsn: str, ids: list[str], timeout: float = 60) -> None:
    """Until some job is embedding or writing (a worker is in the middle of it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = job_rows(dsn, ids).values()
        if any(r["state"] == "running" and r["stage"] in ("embedding", "writing") for r in rows):
            return
        if all(r["state"] == "succeeded" for r in rows):
            return
        time.sleep(0.05)
    raise AssertionError("no job reached the middle of a run in time")


def test_workers_killed_mid_job_leave_every_job_succeeded_once_and_every_document_whole(
    durable_server: PortalServer, durable_env: dict[str, str], tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    source = durable_server.new_source()
    dsn = durable_server.database_url
    job_ids: list[str] = []
    for user in ("alice", "bob"):
        with durable_server.api(ACME, user) as api:
            for i in range(JOBS_PER_USER):
                response = api.post(
                    "/api/rag/ingest",
                    json={
                        "collection": source,
                        "content": document_text(len(job_ids)),
                        "source": f"{user}/doc{i}.md",
                        "async": True,
                    },
                )
                assert response.status_code == 202, response.text
                job_ids.append(response.json()["job_id"])

    logs: list[Path] = []
    kills: dict[int, float] = {}  # pid → when it was killed
    for round_number in range(ROUNDS):
        with ExitStack() as stack:
            workers = []
            for n in range(2):
                log = tmp_path / f"worker-{round_number}-{n}.log"
                logs.append(log)
                workers.append(stack.enter_context(launch.worker(durable_env, log)))
            wait_until_mid_job(dsn, job_ids)
            time.sleep(rng.uniform(0.0, 1.5))
            for process in workers:
                kills[process.pid] = time.time()
                process.send_signal(signal.SIGKILL)
                process.wait()

    final = tmp_path / "worker-final.log"
    logs.append(final)
    with launch.worker(durable_env, final):
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            rows = job_rows(dsn, job_ids)
            if all_ended(rows):
                break
            time.sleep(0.2)

    rows = job_rows(dsn, job_ids)
    context = f"seed {SEED}; logs in {tmp_path}"
    assert {r["state"] for r in rows.values()} == {"succeeded"}, (context, rows)
    attempts = sum(r["attempts"] for r in rows.values())
    assert attempts > len(job_ids), f"no run was interrupted ({context})"

    # No job ran in two processes at once: a run ends when it succeeds, gives the job back, or
    # its process is killed; the next run of that job starts after that.
    events = job_events(logs)
    by_job: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_job.setdefault(event["job"], []).append(event)
    for job_id in job_ids:
        starts = sorted(
            (e for e in by_job[job_id] if e["event"] == "rag.job_started"), key=lambda e: e["at"]
        )
        assert len(starts) == rows[job_id]["attempts"], (job_id, context)
        for earlier, later in itertools.pairwise(starts):
            ended = [
                e["at"]
                for e in by_job[job_id]
                if e["pid"] == earlier["pid"] and e["at"] >= earlier["at"] and e is not earlier
            ]
            end = min(ended) if ended else kills.get(earlier["pid"])
            assert end is not None, (job_id, earlier, context)
            assert end <= later["at"], (job_id, earlier, later, context)
        succeeded = [e for e in by_job[job_id] if e["event"] == "rag.job_succeeded"]
        assert len(succeeded) == 1, (job_id, succeeded, context)

    # Every document whole and stored once; the lexical statistics as a recount makes them.
    with psycopg.connect(dsn) as conn:
        for user in ("alice", "bob"):
            (pk,) = conn.execute(
                "SELECT id FROM acme.auth_user WHERE username = %s", (user,)
            ).fetchone()
            owner = f"user:{pk}"
            documents = conn.execute(
                sql.SQL(
                    "SELECT d.source, d.chunk_count, "
                    "(SELECT count(*) FROM {chunks} c WHERE c.document_id = d.id), "
                    "(SELECT count(DISTINCT c.idx) FROM {chunks} c "
                    " WHERE c.document_id = d.id) "
                    "FROM {documents} d JOIN {collections} k ON k.id = d.collection_id "
                    "WHERE k.name = %s AND k.owner = %s ORDER BY d.source"
                ).format(
                    chunks=sql.Identifier("acme", "rag_chunks"),
                    documents=sql.Identifier("acme", "rag_documents"),
                    collections=sql.Identifier("acme", "rag_collections"),
                ),
                (source, owner),
            ).fetchall()
            assert [d[0] for d in documents] == sorted(
                f"{user}/doc{i}.md" for i in range(JOBS_PER_USER)
            )
            for name, stored_count, rows_count, distinct in documents:
                assert stored_count == rows_count == distinct > 5, (name, context)
            assert statistics_mismatches(dsn, "acme", source, owner=owner) == []

    with durable_server.api(ACME, "alice") as api:
        hits = api.post(
            "/api/rag/search",
            json={"collection": source, "query": "heartbeat of a worker", "strategy": "hybrid"},
        )
        assert hits.status_code == 200, hits.text
        assert hits.json()["results"]


def test_a_running_job_cancelled_stops_before_it_writes(
    durable_server: PortalServer, durable_env: dict[str, str], tmp_path: Path
) -> None:
    source = durable_server.new_source()
    dsn = durable_server.database_url
    text = " ".join(document_text(n) for n in range(100, 108))  # ≈ 80 chunks, seconds to embed
    with durable_server.api(ACME, "alice") as api:
        job_id = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": text, "source": "big.md", "async": True},
        ).json()["job_id"]
        with launch.worker(durable_env, tmp_path / "worker.log"):
            wait_until_mid_job(dsn, [job_id])
            cancelled = api.post(f"/api/rag/jobs/{job_id}/cancel")
            assert cancelled.status_code == 200, cancelled.text
            assert cancelled.json()["cancel_requested"] is True
            deadline = time.monotonic() + 60
            while (job := api.get(f"/api/rag/jobs/{job_id}").json())["state"] == "running":
                assert time.monotonic() < deadline, job
                time.sleep(0.1)
        assert job["state"] == "cancelled", job
        assert job["results"] == []
        assert job["progress"]["done"] < job["progress"]["total"]  # stopped while embedding
        # Nothing was written: no document, not even the collection its first write makes.
        assert api.get(f"/api/rag/collections/{source}/documents").status_code == 404
        assert api.post(f"/api/rag/jobs/{job_id}/cancel").status_code == 409
