"""The worker process keeps itself registered: a worker whose heartbeat row disappeared
(pruned by another worker that took it for dead) stops and starts again instead of running
jobs that the others would run a second time. A job waiting behind its collection's lock
starts as soon as the lock frees, not at the next poll."""

from __future__ import annotations

import time
from datetime import datetime

import psycopg

from portal import launch
from tests.conftest import LOGS, PortalServer

ACME = "acme.localhost"


def registered(dsn: str) -> set[int]:
    with psycopg.connect(dsn) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM public.procrastinate_workers")}


def wait_for(predicate, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_a_worker_whose_registration_is_pruned_starts_again_and_runs_jobs(
    portal_server: PortalServer,
) -> None:
    dsn = portal_server.database_url
    env = {**portal_server.env, "RAG_JOB_HEARTBEAT_S": "0.5", "RAG_JOB_STALLED_AFTER_S": "3"}
    log = LOGS / "worker-test-guard.log"
    log.write_text("")
    before = registered(dsn)
    with launch.worker(env, log) as process:
        wait_for(lambda: registered(dsn) - before)
        (first,) = registered(dsn) - before
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DELETE FROM public.procrastinate_workers WHERE id = %s", (first,))
        wait_for(lambda: bool(registered(dsn) - before - {first}))
        assert process.poll() is None
        assert f"worker {first}: heartbeat pruned; stopping to start again" in log.read_text()

        source = portal_server.new_source()
        with portal_server.api(ACME, "alice") as api:
            job_id = api.post(
                "/api/rag/ingest",
                json={
                    "collection": source,
                    "content": "The restarted worker runs this job. " * 5,
                    "async": True,
                },
            ).json()["job_id"]
            wait_for(lambda: api.get(f"/api/rag/jobs/{job_id}").json()["state"] == "succeeded")


def test_a_job_waiting_behind_its_collections_lock_starts_when_the_lock_frees(
    portal_server: PortalServer,
) -> None:
    """Two jobs of one collection share a queue lock. A worker with two slots takes the first
    and finds the second locked, then sleeps until a job is submitted or its poll (30 s
    here): the trigger of tenants migration 0014 wakes it when the first job ends."""
    source = portal_server.new_source()
    env = {**portal_server.env, "RAG_JOB_POLL_S": "30"}
    with portal_server.api(ACME, "alice") as api:
        ids = [
            api.post(
                "/api/rag/ingest",
                json={
                    "collection": source,
                    "content": f"Job {n} of a collection's two queued jobs. " * 5,
                    "source": f"job-{n}.md",
                    "async": True,
                },
            ).json()["job_id"]
            for n in (1, 2)
        ]
        with launch.worker(env, LOGS / "worker-test-lock.log", concurrency=2):
            jobs = {}
            for job_id in ids:
                wait_for(
                    lambda job_id=job_id: (
                        api.get(f"/api/rag/jobs/{job_id}").json()["state"] == "succeeded"
                    ),
                    timeout=25,  # under the poll: only the wake-up can end the second in time
                )
                jobs[job_id] = api.get(f"/api/rag/jobs/{job_id}").json()
    first, second = (jobs[job_id] for job_id in ids)
    waited = datetime.fromisoformat(second["started_at"]) - datetime.fromisoformat(
        first["finished_at"]
    )
    assert waited.total_seconds() < 5
