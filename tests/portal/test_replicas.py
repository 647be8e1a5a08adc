"""The portal on a primary and two streaming standbys (``DATABASE_REPLICA_URLS``; issue 35).

Real servers from the embedded PostgreSQL's binaries: the second standby applies WAL two
seconds late (``recovery_min_apply_delay``), so a read there that did not wait for the user's
write would miss it. A user who ingests and then searches finds the document every time,
through the API and through a worker's job; a standby killed under load fails no request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest

from portal import launch
from tests.conftest import DEMO_PASSWORD, LOGS
from tests.portal.private_postgres import Portal, Standby, replicated_portal

SOURCE = "docs"  # allowlisted in acme by bootstrap_demo
DELAY_S = 2.0
CONTENT = "Notes on {}: the portal reads on its standbys and still finds what a user wrote."

Replicated = tuple[Portal, list[Standby]]


@pytest.fixture(scope="module")
def replicated() -> Iterator[Replicated]:
    with replicated_portal(DEMO_PASSWORD, LOGS / "portal-replicas-test.log", [0, DELAY_S]) as up:
        yield up


def _letters(number: int) -> str:
    """``number`` spelled in letters, so a marker stays one word for every analyzer."""
    return str(number).translate(str.maketrans("0123456789", "abcdefghij"))


def _found(http: httpx.Client, marker: str) -> set[str]:
    response = http.post(
        "/api/rag/search", json={"collection": SOURCE, "query": marker, "strategy": "bm25"}
    )
    assert response.status_code == 200, response.text
    return {hit["metadata"]["document_id"] for hit in response.json()["results"]}


def _ingest(http: httpx.Client, source: str, marker: str, **extra: Any) -> httpx.Response:
    return http.post(
        "/api/rag/ingest",
        json={"collection": SOURCE, "content": CONTENT.format(marker), "source": source, **extra},
    )


def _reads(standby: Standby) -> int:
    with psycopg.connect(standby.url("portal"), autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'portal'"
        ).fetchone()
    assert row is not None
    return int(row[0])


def _wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _states(portal: Portal) -> list[str]:
    with portal.api() as http:
        return [replica["state"] for replica in http.get("/health").json()["replicas"]]


def test_health_shows_each_standby(replicated: Replicated) -> None:
    portal, standbys = replicated
    with portal.api() as http:
        replicas = http.get("/health").json()["replicas"]
    assert [r["name"].split("/")[-2] for r in replicas] == [
        s.socket_dir.name + ":5432" for s in standbys
    ]
    assert [r["state"] for r in replicas] == ["up", "up"]
    # Seconds behind the primary: the delayed one is up to its delay behind after writes
    # (the logins of the fixture's users), within the bound that keeps it in rotation.
    assert all(r["lag_s"] is not None and r["lag_s"] < DELAY_S + 2 for r in replicas), replicas


def test_a_user_who_ingests_then_searches_finds_the_document_every_time(
    replicated: Replicated,
) -> None:
    portal, standbys = replicated
    before = [_reads(s) for s in standbys]
    with portal.api() as http:
        for n in range(100):
            marker = f"rounds{_letters(n)}"
            ingested = _ingest(http, f"round-{n}.md", marker)
            assert ingested.status_code == 200, ingested.text
            assert ingested.json()["document_id"] in _found(http, marker), n
    # The standbys served reads (each counts its transactions): the searches did not all go
    # to the primary.
    assert sum(_reads(s) for s in standbys) - sum(before) >= 100


def test_with_only_the_delayed_standby_every_read_still_sees_the_write(
    replicated: Replicated,
) -> None:
    portal, standbys = replicated
    standbys[0].kill()  # alice's reads now go to the delayed standby, or to the primary
    _wait_for(lambda: _states(portal)[0] == "down", 10, "the standby to leave the rotation")
    with portal.api() as http:
        for n in range(100):
            marker = f"delayed{_letters(n)}"
            ingested = _ingest(http, f"delayed-{n}.md", marker)
            assert ingested.status_code == 200, ingested.text
            assert ingested.json()["document_id"] in _found(http, marker), n
    standbys[0].start()
    _wait_for(lambda: _states(portal) == ["up", "up"], 20, "the standby to come back")


def test_a_job_that_succeeded_is_found_by_the_next_search(replicated: Replicated) -> None:
    portal, _ = replicated
    with launch.worker(portal.env, LOGS / "portal-replicas-worker.log"), portal.api() as http:
        for n in range(5):
            marker = f"jobround{_letters(n)}"
            accepted = _ingest(http, f"job-{n}.md", marker, **{"async": True})
            assert accepted.status_code == 202, accepted.text
            status_url = accepted.json()["status_url"]
            deadline = time.monotonic() + 60
            while (job := http.get(status_url).json())["state"] not in ("succeeded", "failed"):
                assert time.monotonic() < deadline, job
                time.sleep(0.05)
            assert job["state"] == "succeeded", job
            assert job["results"][0]["document_id"] in _found(http, marker), n


def _job_scans(standby: Standby) -> int:
    """Reads of acme's job table on ``standby`` (its own statistics)."""
    with psycopg.connect(standby.url("portal"), autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables"
            " WHERE schemaname = 'acme' AND relname = 'tenants_ingestjob'"
        ).fetchone()
    return int(row[0]) if row else 0


def test_job_listings_read_on_a_standby_in_the_tenants_schema(replicated: Replicated) -> None:
    portal, standbys = replicated
    with portal.api() as http:
        accepted = _ingest(http, "listed.md", "listedjob", **{"async": True})
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        # At once, with only the delayed standby besides the primary: the user's own write
        # is seen (the mark sends the read to the primary until a standby has it).
        standbys[0].kill()
        _wait_for(lambda: _states(portal)[0] == "down", 10, "the standby to leave the rotation")
        for _ in range(20):
            listed = http.get("/api/rag/jobs").json()["jobs"]
            assert job_id in {job["id"] for job in listed}
            assert http.get(f"/api/rag/jobs/{job_id}").status_code == 200
        standbys[0].start()
        _wait_for(lambda: _states(portal) == ["up", "up"], 20, "the standby to come back")
        time.sleep(DELAY_S + 1)  # both standbys have the job now
        scans = [_job_scans(s) for s in standbys]
        for _ in range(10):
            listed = http.get("/api/rag/jobs").json()["jobs"]
            # Read on a standby, in acme's schema (public has an empty job table of its own).
            assert job_id in {job["id"] for job in listed}
        # A backend sends its table statistics at most once a second (later if busy).
        _wait_for(
            lambda: sum(_job_scans(s) for s in standbys) > sum(scans),
            15,
            "the job listings to be read on a standby",
        )


def test_a_standby_killed_under_load_fails_no_request(replicated: Replicated) -> None:
    portal, standbys = replicated
    failures: list[str] = []
    done = [0]
    stop = threading.Event()

    def load(token: str) -> None:
        with portal.api(token) as http:
            while not stop.is_set():
                try:
                    if done[0] % 3 == 2:
                        response = http.get("/api/rag/jobs")
                    else:
                        response = http.post(
                            "/api/rag/search",
                            json={"collection": SOURCE, "query": "notes", "strategy": "hybrid"},
                        )
                    if response.status_code != 200:
                        failures.append(f"{response.status_code} {response.text[:200]}")
                except httpx.HTTPError as exc:
                    failures.append(repr(exc))
                done[0] += 1

    threads = [threading.Thread(target=load, args=(portal.tokens[0],)) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        served = _reads(standbys[0])
        _wait_for(lambda: _reads(standbys[0]) > served + 20, 20, "reads on the standby")
        standbys[0].kill()
        _wait_for(lambda: _states(portal)[0] == "down", 10, "the standby to leave the rotation")
        during = done[0]
        _wait_for(lambda: done[0] > during + 20, 20, "searches without the standby")
        standbys[0].start()
        _wait_for(lambda: _states(portal)[0] == "up", 20, "the standby to come back")
        served = _reads(standbys[0])
        _wait_for(lambda: _reads(standbys[0]) > served + 20, 20, "reads on it again")
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert failures == []
    assert done[0] > 60
