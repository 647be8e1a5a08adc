"""ragctl's HTTP client: URL joining, host checks, login, ingest, batch and job routes."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from rag_plugin.cli.client import (
    ApiError,
    IngestResult,
    RagClient,
    api_url,
    encoded_size,
    normalize_host,
)
from rag_plugin.cli.discovery import Document
from rag_plugin.cli.job import Submitted
from rag_plugin.exceptions import InvalidInputError
from tests.rag_plugin.cli.fake_jobs import job_id
from tests.rag_plugin.cli.fake_portal import PASSWORD, FakePortal


@pytest.mark.parametrize(
    ("host", "path", "url"),
    [
        ("http://h:3000", "/api/rag/ingest", "http://h:3000/api/rag/ingest"),
        ("http://h:3000/", "/api/rag/ingest", "http://h:3000/api/rag/ingest"),
        ("http://h:3000///", "api/rag/ingest", "http://h:3000/api/rag/ingest"),
        ("https://h/prefix/", "/api/auth/login", "https://h/prefix/api/auth/login"),
    ],
)
def test_api_url_joins_with_one_slash(host: str, path: str, url: str) -> None:
    assert api_url(host, path) == url


@pytest.mark.parametrize(
    ("given", "normalized"),
    [
        ("http://localhost:8000/", "http://localhost:8000"),
        ("  https://rag.example.com//  ", "https://rag.example.com"),
        ("http://acme.localhost:8000", "http://acme.localhost:8000"),
    ],
)
def test_normalize_host_trims_slashes(given: str, normalized: str) -> None:
    assert normalize_host(given) == normalized


@pytest.mark.parametrize(
    "bad", ["localhost:8000", "ftp://example.com", "http://", "", "http://[::"]
)
def test_normalize_host_rejects_non_http_urls(bad: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        normalize_host(bad)

    assert str(caught.value) == (
        f"--host must be an http:// or https:// URL such as http://localhost:8000, got {bad!r}"
    )


def test_login_with_an_email_address_sends_the_email_field(fake_portal: FakePortal) -> None:
    with RagClient(fake_portal.url()) as client:
        assert client.login("bob@acme.test", PASSWORD) == "bob"

    assert fake_portal.requests[0].body == {"email": "bob@acme.test", "password": PASSWORD}


def answering(status: int, body: object, seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json=body)

    return httpx.MockTransport(handler)


BATCH_DOCUMENTS = [
    Document(Path("/d/a.md"), "a.md", "A", "Alpha text.\n", 12),
    Document(Path("/d/b.md"), "b.md", "B", "Béta text.\n", 12),
]


def batch_entry(document_id: str, chunks: int) -> dict[str, object]:
    return {
        "document_id": document_id,
        "source": "x",
        "chunks_created": chunks,
        "document_ids": [],
        "unchanged": False,
    }


@pytest.mark.parametrize("strategy", [None, "semantic"])
def test_ingest_batch_sends_every_document_and_returns_results_in_order(
    strategy: str | None,
) -> None:
    seen: list[httpx.Request] = []
    entries = [batch_entry("d7", 3), batch_entry("d8", 2)]
    body = {"collection": "c", "chunks_created": 5, "documents": entries}
    client = RagClient("http://acme.localhost:8000", transport=answering(200, body, seen))

    with client:
        results = client.ingest_batch(
            collection="c", documents=BATCH_DOCUMENTS, tags=["t"], chunking_strategy=strategy
        )

    assert results == [IngestResult(3, "d7"), IngestResult(2, "d8")]
    (request,) = seen
    assert (request.method, str(request.url)) == (
        "POST",
        "http://127.0.0.1:8000/api/rag/ingest/batch",
    )
    sent = json.loads(request.read())
    assert sent == {
        "collection": "c",
        "documents": [
            {"content": "Alpha text.\n", "title": "A", "source": "a.md", "tags": ["t"]},
            {"content": "Béta text.\n", "title": "B", "source": "b.md", "tags": ["t"]},
        ],
        **({"chunking_strategy": strategy} if strategy else {}),
    }
    # What the planner measures is what goes on the wire: UTF-8, not \u escapes.
    assert len(request.content) == encoded_size(sent)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "batch ingest response has no list of 2 documents: []"),
        ({"documents": None}, "batch ingest response has no list of 2 documents: "
         "{'documents': None}"),
        ({"documents": [batch_entry("d1", 1)]}, "batch ingest response has no list of 2 "
         "documents: {'documents': [{'document_id': 'd1', 'source': 'x', 'chunks_created': 1, "
         "'document_ids': [], 'unchanged': False}]}"),
        ({"documents": [batch_entry("d1", 1), batch_entry("d2", True)]}, "batch ingest response "
         "documents[1] has no integer chunks_created and string document_id: {'document_id': "
         "'d2', 'source': 'x', 'chunks_created': True, 'document_ids': [], 'unchanged': False}"),
        ({"documents": [batch_entry("d1", 1), {"chunks_created": 1}]}, "batch ingest response "
         "documents[1] has no integer chunks_created and string document_id: "
         "{'chunks_created': 1}"),
        ({"documents": [{"document_id": "d1", "chunks_created": "1"}, batch_entry("d2", 1)]},
         "batch ingest response documents[0] has no integer chunks_created and string "
         "document_id: {'document_id': 'd1', 'chunks_created': '1'}"),
        ({"documents": ["d1", "d2"]}, "batch ingest response documents[0] has no integer "
         "chunks_created and string document_id: 'd1'"),
    ],
)  # fmt: skip
def test_ingest_batch_rejects_a_response_without_one_result_per_document(
    body: object, message: str
) -> None:
    seen: list[httpx.Request] = []
    client = RagClient("http://h", transport=answering(200, body, seen))

    with client, pytest.raises(ApiError) as caught:
        client.ingest_batch(
            collection="c", documents=BATCH_DOCUMENTS, tags=[], chunking_strategy=None
        )

    assert (caught.value.status, str(caught.value)) == (None, message)


def test_ingest_batch_error_status_carries_the_named_document() -> None:
    error = {"error": "documents[1]: Content too small to chunk", "code": "INVALID_INPUT"}
    client = RagClient("http://h", transport=answering(400, error, []))

    with client, pytest.raises(ApiError) as caught:
        client.ingest_batch(
            collection="c", documents=BATCH_DOCUMENTS, tags=[], chunking_strategy=None
        )

    assert (caught.value.status, caught.value.code, str(caught.value)) == (
        400,
        "INVALID_INPUT",
        "HTTP 400: documents[1]: Content too small to chunk",
    )


@pytest.mark.parametrize(
    ("job", "content", "reason"),
    # Over the portal's size threshold, an ingest is a job even when not asked to be one.
    [(True, "Short.", "requested"), (False, "x" * 300_000, "size")],
)
def test_ingest_answered_202_is_the_job_submitted(
    fake_portal: FakePortal, job: bool, content: str, reason: str
) -> None:
    with RagClient(fake_portal.url()) as client:
        client.use_token("alice")
        submitted = client.ingest(
            collection="c", content=content, title="T", source="s.md", tags=[],
            chunking_strategy=None, job=job,
        )  # fmt: skip

    assert submitted == Submitted(job_id(1), "queued", reason)
    assert ("async" in fake_portal.requests[0].body) is job
    assert fake_portal.documents == {}


def test_ingest_batch_as_a_job_sends_async_and_returns_the_job(fake_portal: FakePortal) -> None:
    with RagClient(fake_portal.url()) as client:
        client.use_token("alice")
        submitted = client.ingest_batch(
            collection="c", documents=BATCH_DOCUMENTS, tags=[], chunking_strategy=None, job=True
        )

    assert submitted == Submitted(job_id(1), "queued", "requested")
    assert fake_portal.requests[0].body["async"] is True
    assert fake_portal.queue.jobs[0].kind == "batch"


def test_job_routes_read_the_jobs_the_server_reports(fake_portal: FakePortal) -> None:
    with RagClient(fake_portal.url()) as client:
        client.use_token("alice")
        client.ingest(
            collection="c", content="Short.", title="T", source="s.md", tags=[],
            chunking_strategy=None, job=True,
        )  # fmt: skip
        states = [client.job(job_id(1)).state for _ in range(4)]
        page = client.jobs(state="succeeded", collection="c", shared=False, limit=10)
        with pytest.raises(ApiError) as caught:
            client.cancel_job(job_id(1))

    assert states == ["running", "running", "running", "succeeded"]
    assert [job.id for job in page.jobs] == [job_id(1)]
    assert page.total == 1
    assert fake_portal.requests[-2].query == {
        "state": "succeeded",
        "collection": "c",
        "shared": "false",
        "limit": "10",
    }
    assert (caught.value.status, caught.value.code) == (409, "CONFLICT")
