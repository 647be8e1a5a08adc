"""ragctl's HTTP client (URL joining, host checks, ingest, upload and job routes) and its
transport (*.localhost routing to loopback)."""

from __future__ import annotations

import json
import ssl
import subprocess
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
from rag_plugin.cli.transport import LoopbackTransport, is_localhost_subdomain
from rag_plugin.exceptions import InvalidInputError
from tests.rag_plugin.cli.fake_files import parse_form
from tests.rag_plugin.cli.fake_jobs import job_id
from tests.rag_plugin.cli.fake_portal import PASSWORD, FakePortal, running_fake_portal


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


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("acme.localhost", True),
        ("a.b.localhost", True),
        ("ACME.LOCALHOST", True),
        ("acme.localhost.", True),
        ("localhost", False),
        ("notlocalhost", False),
        ("acme.localhost.example.com", False),
        ("example.com", False),
    ],
)
def test_localhost_subdomain_detection(name: str, expected: bool) -> None:
    assert is_localhost_subdomain(name) is expected


def capture(seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=[])

    return httpx.MockTransport(handler)


@pytest.mark.parametrize(
    ("url", "sent_url", "host_header", "sni"),
    [
        (
            "http://acme.localhost:8000/api/x",
            "http://127.0.0.1:8000/api/x",
            "acme.localhost:8000",
            None,
        ),
        (
            "https://acme.localhost/api/x",
            "https://127.0.0.1/api/x",
            "acme.localhost",
            "acme.localhost",
        ),
        ("https://rag.example.com/api/x", "https://rag.example.com/api/x", "rag.example.com", None),
        ("http://localhost:8000/api/x", "http://localhost:8000/api/x", "localhost:8000", None),
    ],
)
def test_loopback_transport_reroutes_only_localhost_subdomains(
    url: str, sent_url: str, host_header: str, sni: str | None
) -> None:
    seen: list[httpx.Request] = []
    with httpx.Client(transport=LoopbackTransport(capture(seen))) as client:
        client.post(url, json={"k": "v"})

    (sent,) = seen
    assert str(sent.url) == sent_url
    assert sent.headers["Host"] == host_header
    assert sent.extensions.get("sni_hostname") == sni
    assert json.loads(sent.read()) == {"k": "v"}


def test_real_request_to_localhost_subdomain_reaches_loopback_with_tenant_host(
    fake_portal: FakePortal,
) -> None:
    host = fake_portal.url("acme.localhost")

    with RagClient(host) as client:
        token = client.login("alice", PASSWORD)
        client.use_token(token)
        listed = client.collections()

    assert listed == []
    assert [(r.method, r.path, r.host) for r in fake_portal.requests] == [
        ("POST", "/api/auth/login", f"acme.localhost:{fake_portal.port}"),
        ("GET", "/api/rag/collections", f"acme.localhost:{fake_portal.port}"),
    ]
    assert fake_portal.requests[0].body == {"username": "alice", "password": PASSWORD}
    assert fake_portal.requests[1].authorization == "Bearer alice"


def test_login_with_an_email_address_sends_the_email_field(fake_portal: FakePortal) -> None:
    with RagClient(fake_portal.url()) as client:
        assert client.login("bob@acme.test", PASSWORD) == "bob"

    assert fake_portal.requests[0].body == {"email": "bob@acme.test", "password": PASSWORD}


def test_error_status_becomes_api_error_with_server_message(fake_portal: FakePortal) -> None:
    with RagClient(fake_portal.url()) as client, pytest.raises(ApiError) as caught:
        client.login("alice", "wrong")

    assert (caught.value.status, caught.value.code, str(caught.value)) == (
        401,
        "AUTHENTICATION_FAILED",
        "HTTP 401: Invalid credentials",
    )


def test_a_server_error_names_the_request_id_the_server_logged_it_under() -> None:
    body = {"error": "Internal error", "code": "DATABASE_ERROR", "request_id": "ab" * 16}
    transport = httpx.MockTransport(lambda request: httpx.Response(500, json=body))
    with RagClient("http://rag.example", transport=transport) as client:
        client.use_token("t")
        with pytest.raises(ApiError) as caught:
            client.collections()

    assert (caught.value.status, caught.value.code, str(caught.value)) == (
        500,
        "DATABASE_ERROR",
        f"HTTP 500: Internal error (request id {'ab' * 16})",
    )


def test_unreachable_server_is_an_api_error_naming_the_url() -> None:
    with running_fake_portal() as portal:
        url = portal.url("acme.localhost")
    # The server is shut down now: nothing listens on that port any more.
    with RagClient(url) as client, pytest.raises(ApiError) as caught:
        client.collections()

    assert caught.value.status is None
    assert str(caught.value).startswith(f"could not reach {url}/api/rag/collections: ")


@pytest.fixture
def acme_certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for acme.localhost, made with the openssl command."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=acme.localhost",
            "-addext", "subjectAltName=DNS:acme.localhost",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


def test_https_localhost_subdomain_offers_and_verifies_the_real_name(
    acme_certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = acme_certificate
    offered: list[str | None] = []
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    server_tls.sni_callback = lambda _socket, name, _context: offered.append(name)
    # httpx reads SSL_CERT_FILE when it builds its TLS context: trust only this certificate.
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))

    with (
        running_fake_portal(tls=server_tls) as portal,
        RagClient(portal.url("acme.localhost")) as client,
    ):
        token = client.login("alice", PASSWORD)

    assert token == "alice"
    assert offered == ["acme.localhost"]
    assert portal.requests[0].host == f"acme.localhost:{portal.port}"


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


def test_a_file_is_uploaded_as_multipart_with_a_length_its_source_and_options() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        accepted = {"filename": "r.pdf", "media_type": "application/pdf", "job_id": "j1",
                    "status_url": "/api/rag/jobs/j1", "state": "queued"}  # fmt: skip
        return httpx.Response(202, json={"jobs": [accepted]})

    data = b"%PDF-1.7\n\x00\xff binary \r\n--not a boundary\r\n"
    with RagClient("http://portal.test", transport=httpx.MockTransport(answer)) as client:
        submitted = client.upload_file(
            collection="docs",
            filename="r.pdf",
            data=data,
            source="reports/r.pdf",
            tags=["q1", "finance"],
            chunking_strategy="semantic",
            metadata={"team": "search", "year": 2024, "name": "Zoë"},
        )

    assert submitted == Submitted("j1", "queued", None, "application/pdf")
    (request,) = seen
    assert (request.method, request.url.path) == ("POST", "/api/rag/files")
    assert request.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    assert int(request.headers["Content-Length"]) == len(request.content)
    form = parse_form(request.headers["Content-Type"], request.content, len(request.content))
    assert form.fields == {
        "collection": ["docs"],
        "source": ["reports/r.pdf"],
        "tags": ["q1", "finance"],
        "chunking_strategy": ["semantic"],
        "metadata": ['{"team": "search", "year": 2024, "name": "Zoë"}'],
    }
    assert form.files == [("r.pdf", data)]


def test_without_options_only_the_collection_source_and_file_are_sent() -> None:
    forms = []

    def answer(request: httpx.Request) -> httpx.Response:
        forms.append(parse_form(request.headers["Content-Type"], request.content, None))
        accepted = {"job_id": "j1", "state": "queued", "media_type": "text/html"}
        return httpx.Response(202, json={"jobs": [accepted]})

    with RagClient("http://portal.test", transport=httpx.MockTransport(answer)) as client:
        client.upload_file(
            collection="docs",
            filename="a.html",
            data=b"<p>A</p>",
            source="a.html",
            tags=[],
            chunking_strategy=None,
        )

    assert forms[0].fields == {"collection": ["docs"], "source": ["a.html"]}
    assert forms[0].files == [("a.html", b"<p>A</p>")]
