"""Ingestion jobs over HTTP (SPEC J1-J3): submit, follow, cancel, retry, isolation, bad input.

The portal is the session's live gunicorn server; the worker is a real ``manage.py rag_worker``
process on the same database, started and stopped by the tests (so a job can be left queued).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import httpx
import pytest

from portal import launch
from rag_plugin.chunking import TextChunker, api_chunker_config
from tests.conftest import LOGS, PortalServer

ACME = "acme.localhost"
GLOBEX = "globex.localhost"
TEXT = (
    "Durable ingestion runs in the background. A worker takes each job from the queue in "
    "PostgreSQL, embeds its chunks and writes the document in one transaction. "
)

Worker = Callable[[], AbstractContextManager[Any]]


@pytest.fixture(scope="module")
def worker(portal_server: PortalServer) -> Worker:
    """Start a worker for the portal's database for the length of a ``with`` block."""

    def start() -> AbstractContextManager[Any]:
        return launch.worker(portal_server.env, LOGS / "worker-test-jobs.log")

    return start


@pytest.fixture
def running_worker(worker: Worker) -> Iterator[None]:
    with worker():
        yield


def wait_for(api: httpx.Client, job_id: str, timeout: float = 60) -> dict[str, Any]:
    """Poll the job until it has ended; return it."""
    deadline = time.monotonic() + timeout
    while True:
        job = api.get(f"/api/rag/jobs/{job_id}").json()
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        assert time.monotonic() < deadline, f"job still {job['state']}: {job}"
        time.sleep(0.1)


def submit(api: httpx.Client, source: str, **extra: Any) -> dict[str, Any]:
    response = api.post(
        "/api/rag/ingest",
        json={"collection": source, "content": TEXT * 3, "source": "a.md", "async": True, **extra},
    )
    assert response.status_code == 202, response.text
    return response.json()


def test_an_async_ingest_is_a_job_that_succeeds_and_is_searchable(
    portal_server: PortalServer, source: str, running_worker: None
) -> None:
    with portal_server.api(ACME, "alice") as api:
        accepted = submit(api, source, title="Durable", metadata={"team": "search"})
        assert accepted["state"] == "queued"
        assert accepted["reason"] == "requested"
        assert accepted["status_url"] == f"/api/rag/jobs/{accepted['job_id']}"
        job = wait_for(api, accepted["job_id"])
        assert job["state"] == "succeeded", job
        assert job["error"] is None
        assert job["attempts"] == 1
        assert job["kind"] == "document"
        assert job["user"] == "alice"
        assert job["documents"] == 1
        assert job["input_bytes"] == len((TEXT * 3).encode())
        [result] = job["results"]
        assert result["source"] == "a.md"
        assert result["unchanged"] is False
        assert job["document_ids"] == [result["document_id"]]

        document = api.get(f"/api/rag/documents/{result['document_id']}").json()
        assert document["title"] == "Durable"
        assert len(document["chunks"]) == result["chunks_created"]
        hits = api.post(
            "/api/rag/search",
            json={"collection": source, "query": "durable ingestion worker", "strategy": "bm25"},
        ).json()["results"]
        assert hits[0]["metadata"]["document_id"] == result["document_id"]

        # The same source and text again: the job succeeds and redoes nothing.
        again = wait_for(
            api, submit(api, source, title="Durable", metadata={"team": "search"})["job_id"]
        )
        assert again["state"] == "succeeded"
        assert again["results"] == [{**result, "unchanged": True}]


def test_a_batch_job_reports_each_document_and_the_list_filters(
    portal_server: PortalServer, source: str, running_worker: None
) -> None:
    documents = [{"content": TEXT * 2, "source": f"doc{i}.md"} for i in range(3)]
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/ingest/batch",
            json={"collection": source, "documents": documents, "async": True},
        )
        assert response.status_code == 202, response.text
        job = wait_for(api, response.json()["job_id"])
        assert job["state"] == "succeeded", job
        assert job["kind"] == "batch"
        assert [r["source"] for r in job["results"]] == ["doc0.md", "doc1.md", "doc2.md"]
        assert job["progress"]["done"] == job["progress"]["total"]

        listed = api.get("/api/rag/jobs", params={"collection": source}).json()
        assert listed["total"] == 1
        assert [j["id"] for j in listed["jobs"]] == [job["id"]]
        assert api.get(
            "/api/rag/jobs", params={"collection": source, "state": "failed"}
        ).json() == {"jobs": [], "total": 0, "limit": 50, "offset": 0}


def test_content_over_the_threshold_is_a_job_without_asking(
    portal_server: PortalServer, source: str, running_worker: None
) -> None:
    text = TEXT * 1800  # ≈ 340 KB > 256 KiB (RAG_JOB_SYNC_MAX_BYTES)
    with portal_server.api(ACME, "alice") as api:
        response = api.post("/api/rag/ingest", json={"collection": source, "content": text})
        assert response.status_code == 202, response.text
        assert response.json()["reason"] == "size"
        job = wait_for(api, response.json()["job_id"])
        assert job["state"] == "succeeded", job
        chunks = TextChunker(api_chunker_config(None)).chunk(text)
        assert job["results"][0]["chunks_created"] == len(chunks) > 300


def next_event(lines: Iterator[str]) -> tuple[str, dict[str, Any]]:
    name = ""
    for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            return name, json.loads(line.removeprefix("data: "))
    raise AssertionError("the stream ended without another event")


def test_the_events_stream_follows_a_job_to_its_end(
    portal_server: PortalServer, source: str, worker: Worker
) -> None:
    with portal_server.api(ACME, "alice") as api:
        job_id = submit(api, source)["job_id"]
        events: list[tuple[str, dict[str, Any]]] = []
        with api.stream("GET", f"/api/rag/jobs/{job_id}/events") as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.iter_lines()
            events.append(next_event(lines))  # before any worker runs: queued
            with worker():
                while events[-1][0] != "done":
                    events.append(next_event(lines))
    assert events[0][0] == "progress"
    assert events[0][1]["state"] == "queued"
    assert events[-1][0] == "done"
    assert events[-1][1]["state"] == "succeeded"
    assert [name for name, _ in events[:-1]] == ["progress"] * (len(events) - 1)


def test_a_queued_job_cancelled_never_runs_and_can_be_retried(
    portal_server: PortalServer, source: str, worker: Worker
) -> None:
    with portal_server.api(ACME, "alice") as api:
        job_id = submit(api, source)["job_id"]
        cancelled = api.post(f"/api/rag/jobs/{job_id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["state"] == "cancelled"
        again = api.post(f"/api/rag/jobs/{job_id}/cancel")
        assert again.status_code == 409
        assert again.json()["code"] == "CONFLICT"
        assert "already ended (cancelled)" in again.json()["error"]
        with worker():
            time.sleep(3)  # a worker had every chance to take it
            assert api.get(f"/api/rag/jobs/{job_id}").json()["state"] == "cancelled"
            assert api.get(f"/api/rag/collections/{source}/documents").status_code == 404

            retried = api.post(f"/api/rag/jobs/{job_id}/retry")
            assert retried.status_code == 202, retried.text
            assert retried.json()["state"] == "queued"
            assert retried.json()["cancel_requested"] is False
            job = wait_for(api, job_id)
        assert job["state"] == "succeeded", job
        assert api.post(f"/api/rag/jobs/{job_id}/retry").status_code == 409


def test_a_source_disabled_while_queued_fails_forbidden_and_writes_nothing(
    portal_server: PortalServer, source: str, worker: Worker
) -> None:
    with portal_server.api(ACME, "alice") as api:
        job_id = submit(api, source)["job_id"]
        portal_server.set_source("acme", source, False)
        with worker():
            job = wait_for(api, job_id)
            assert job["state"] == "failed"
            assert job["error"]["code"] == "FORBIDDEN"
            assert source in job["error"]["message"]
            assert job["attempts"] == 1  # refused for good, not retried
            portal_server.set_source("acme", source, True)
            assert api.get(f"/api/rag/collections/{source}/documents").status_code == 404
            # Allowed again: a retry runs it.
            assert api.post(f"/api/rag/jobs/{job_id}/retry").status_code == 202
            assert wait_for(api, job_id)["state"] == "succeeded"


def test_a_disabled_source_is_refused_at_submit(portal_server: PortalServer, source: str) -> None:
    portal_server.set_source("acme", source, False)
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/ingest", json={"collection": source, "content": TEXT, "async": True}
        )
        assert response.status_code == 403
        assert response.json()["code"] == "FORBIDDEN"
        assert api.get("/api/rag/jobs", params={"collection": source}).json()["total"] == 0


def test_another_users_job_is_not_found_and_an_admin_sees_the_tenants(
    portal_server: PortalServer, source: str
) -> None:
    with portal_server.api(ACME, "alice") as alice:
        job_id = submit(alice, source)["job_id"]
    for host, user in ((ACME, "bob"), (GLOBEX, "carol")):
        with portal_server.api(host, user) as other:
            for method, path in (
                ("GET", f"/api/rag/jobs/{job_id}"),
                ("POST", f"/api/rag/jobs/{job_id}/cancel"),
                ("POST", f"/api/rag/jobs/{job_id}/retry"),
                ("GET", f"/api/rag/jobs/{job_id}/events"),
            ):
                response = other.request(method, path)
                assert response.status_code == 404, (user, path, response.text)
                assert response.json()["code"] == "NOT_FOUND"
            listed = other.get("/api/rag/jobs", params={"collection": source}).json()
            assert listed["total"] == 0
    with portal_server.api(ACME, "admin") as admin:
        seen = admin.get(f"/api/rag/jobs/{job_id}")
        assert seen.status_code == 200
        assert seen.json()["user"] == "alice"
        assert admin.post(f"/api/rag/jobs/{job_id}/cancel").json()["state"] == "cancelled"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"async": "yes"}, "async: Must be true or false."),
        ({"content": "   "}, "Content too small to chunk"),
        ({"content": "tiny"}, "Content too small to chunk"),
        ({"chunking_strategy": "pages"}, "chunking_strategy: Unknown chunking strategy: pages"),
    ],
)
def test_bad_input_to_an_async_ingest_is_400_naming_the_field(
    portal_server: PortalServer, source: str, body: dict[str, Any], message: str
) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": TEXT, "async": True, **body},
        )
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "INVALID_INPUT"
        assert message in response.json()["error"]
        assert api.get("/api/rag/jobs", params={"collection": source}).json()["total"] == 0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"state": "done"}, "state:"),
        ({"limit": "0"}, "limit:"),
        ({"collection": "no way"}, "collection:"),
        ({"stat": "failed"}, "stat: Unknown query parameter"),
    ],
)
def test_bad_job_list_parameters_are_400(
    portal_server: PortalServer, params: dict[str, str], message: str
) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = api.get("/api/rag/jobs", params=params)
    assert response.status_code == 400, response.text
    assert response.json()["error"].startswith(message)


@pytest.mark.parametrize("job_id", ["not-a-uuid", "2f1d4c9e-8b7a-4e3f-9c1d-0a5b6e7f8d90"])
def test_an_unknown_job_id_is_404(portal_server: PortalServer, job_id: str) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = api.get(f"/api/rag/jobs/{job_id}")
    assert response.status_code == 404
    assert "GET /api/rag/jobs lists" in response.json()["error"]


def test_a_job_that_keeps_failing_stays_failed_with_its_last_error_after_its_attempts(
    portal_server: PortalServer, source: str
) -> None:
    # A worker whose embedding service refuses every connection: a failure that may pass, so
    # the job runs again, RAG_JOB_MAX_ATTEMPTS (3) times in all.
    env = {
        **portal_server.env,
        "RAG_EMBEDDER": "http",
        "RAG_EMBEDDING_URL": f"http://127.0.0.1:{launch.free_port()}",
        "RAG_EMBEDDING_MODEL": "nobody-serves-this",
        "RAG_JOB_RETRY_DELAY_S": "0",
    }
    with portal_server.api(ACME, "alice") as api:
        job_id = submit(api, source)["job_id"]
        with launch.worker(env, LOGS / "worker-test-jobs-failing.log"):
            job = wait_for(api, job_id)
        assert job["state"] == "failed", job
        assert job["attempts"] == job["max_attempts"] == 3
        assert job["error"]["code"] == "EXTERNAL_SERVICE_ERROR"
        assert job_id in job["error"]["message"]  # where the worker's log has the cause
        listed = api.get("/api/rag/jobs", params={"state": "failed", "collection": source})
        assert [j["id"] for j in listed.json()["jobs"]] == [job_id]
        assert api.get(f"/api/rag/collections/{source}/documents").status_code == 404
