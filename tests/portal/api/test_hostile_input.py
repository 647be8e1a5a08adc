"""Hostile requests against the live server: each gets a 4xx JSON error, the database is
unchanged, and nothing server-side leaks (SPEC A5; the cases of the hardening issue)."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable

import httpx
import pytest

from tests.conftest import PortalServer

ACME = "acme.localhost"
GOOD_TEXT = "A perfectly reasonable document about search engines and ranking. " * 3
JSON = {"Content-Type": "application/json"}

# (method, path, raw body, expected status, words the error must contain)
BODY_CASES: list[tuple[str, str, bytes, int, str]] = [
    ("POST", "/api/auth/login", b"[" * 100_000, 400, "nested more than 32 levels"),
    (
        "POST",
        "/api/rag/search",
        b'{"collection": "docs", "query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        400,
        "nested more than 32 levels",
    ),
    ("POST", "/api/rag/search", b'{"a":' * 10_000 + b"1" + b"}" * 10_000, 400, "nested"),
    (
        "POST",
        "/api/rag/search",
        b'{"collection": "docs", "query": "q", "threshold": 1' + b"0" * 400 + b"}",
        400,
        "threshold",
    ),
    (
        "POST",
        "/api/rag/search",
        b'{"collection": "docs", "query": "q", "threshold": 1e999}',
        400,
        "too large for a float",
    ),
    (
        "POST",
        "/api/rag/search",
        b'{"collection": "docs", "query": "q", "limit": 1, "limit": 1000}',
        400,
        'the key "limit" appears twice',
    ),
    (
        "POST",
        "/api/rag/ingest",
        b'{"collection": "docs", "content": "a\\u0000b ' + GOOD_TEXT.encode() + b'"}',
        400,
        "content: text must not contain a NUL character",
    ),
    (
        "POST",
        "/api/rag/ingest",
        b'{"collection": "docs", "content": "x", "tags": '
        + json.dumps(["t"] * 100_000).encode()
        + b"}",
        400,
        "tags",
    ),
    ("POST", "/api/rag/search", b'{"collection": "caf\xe9"}', 400, "not valid UTF-8"),
    (
        "POST",
        "/api/rag/search",
        json.dumps({"collection": "docs", "query": "word " * 129}).encode(),
        400,
        "129 words; the limit is 128 (RAG_MAX_QUERY_WORDS)",
    ),
    (
        "POST",
        "/api/rag/search",
        json.dumps({"collection": "docs", "query": ".".join(["ab"] * 200)}).encode(),
        400,
        "200 words; the limit is 128 (RAG_MAX_QUERY_WORDS)",  # one word, 200 terms
    ),
    (
        "POST",
        "/api/rag/context",
        json.dumps({"collections": [{"name": f"c{i}"} for i in range(21)], "query": "q"}).encode(),
        400,
        "21 collections; the limit is 20 per request (RAG_MAX_CONTEXT_COLLECTIONS)",
    ),
    (
        "POST",
        "/api/rag/context",
        json.dumps(
            {"collections": [{"name": "a"}, {"name": "b"}, {"name": "a"}], "query": "q"}
        ).encode(),
        400,
        "collections[2] repeats collections[0]",
    ),
    (
        "POST",
        "/api/rag/ingest/batch",
        json.dumps({"collection": "docs", "documents": [{"content": GOOD_TEXT}] * 101}).encode(),
        400,
        "101 documents; the limit is 100 per batch (RAG_MAX_BATCH_DOCUMENTS)",
    ),
    (
        "POST",
        "/api/rag/ingest",
        json.dumps({"collection": "docs", "content": GOOD_TEXT, "source": "𝔵" * 600}).encode(),
        400,
        "source: The source is 2400 bytes in UTF-8; the limit is 2000",
    ),
]


def assert_json_error(response: httpx.Response, status: int, words: str) -> None:
    assert response.status_code == status, response.text[:300]
    body = response.json()
    assert set(body) >= {"error", "code"}
    assert words in body["error"]
    assert "Traceback" not in response.text
    assert "acme" not in body["error"]  # no schema name


@pytest.mark.parametrize(("method", "path", "body", "status", "words"), BODY_CASES)
def test_a_hostile_body_is_a_4xx_naming_the_problem(
    portal_server: PortalServer,
    snapshot: Callable[[], dict[str, int]],
    method: str,
    path: str,
    body: bytes,
    status: int,
    words: str,
) -> None:
    before = snapshot()
    with portal_server.api(ACME, "alice") as api:
        response = api.request(method, path, content=body, headers=JSON)
    assert_json_error(response, status, words)
    assert snapshot() == before


@pytest.mark.parametrize(
    ("content_type", "status", "words"),
    [
        ("application/json; charset=latin-1", 415, "must be UTF-8"),
        ("application/json; charset=utf-16", 415, "must be UTF-8"),
        ("text/plain", 415, "Unsupported media type"),
        ("application/x-www-form-urlencoded", 415, "Unsupported media type"),
    ],
)
def test_an_odd_content_type_or_charset_is_a_415(
    portal_server: PortalServer,
    snapshot: Callable[[], dict[str, int]],
    content_type: str,
    status: int,
    words: str,
) -> None:
    before = snapshot()
    body = json.dumps({"collection": "docs", "content": GOOD_TEXT}).encode()
    with portal_server.api(ACME, "alice") as api:
        response = api.post("/api/rag/ingest", content=body, headers={"Content-Type": content_type})
    assert_json_error(response, status, words)
    assert snapshot() == before


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/api/rag/collections/docs/documents?offset=100000000000000000000", "offset"),
        ("/api/rag/collections/docs/documents?limit=100000000000000000000", "limit"),
        ("/api/rag/documents/abc%00def", "NUL"),
        ("/api/rag/collections/docs/documents?shared=%00", "NUL"),
        ("/api/rag/collections/do%00cs/documents", "NUL"),
    ],
)
def test_a_hostile_url_is_a_400(
    portal_server: PortalServer, snapshot: Callable[[], dict[str, int]], path: str, words: str
) -> None:
    before = snapshot()
    with portal_server.api(ACME, "alice") as api:
        response = api.get(path)
    assert_json_error(response, 400, words)
    assert snapshot() == before


def test_four_byte_and_right_to_left_text_is_stored_exactly(
    portal_server: PortalServer, source: str
) -> None:
    text = "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀 עברית וערבית مرحبا بالعالم " * 8
    with portal_server.api(ACME, "alice") as api:
        created = api.post("/api/rag/ingest", json={"collection": source, "content": text})
        assert created.status_code == 200, created.text
        document = api.get(f"/api/rag/documents/{created.json()['document_id']}").json()
    chunks = document["chunks"]
    assert [text[c["start_offset"] : c["end_offset"]] for c in chunks] == [
        c["content"] for c in chunks
    ]


def raw_request(portal_server: PortalServer, request: bytes) -> bytes:
    """Send bytes as they are and read the answer until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", portal_server.port), timeout=30) as conn:
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def test_a_content_length_that_lies_short_is_not_a_5xx(
    portal_server: PortalServer, snapshot: Callable[[], dict[str, int]]
) -> None:
    before = snapshot()
    body = b'{"username": "alice", "password": "wrong"}'
    head = (
        f"POST /api/auth/login HTTP/1.1\r\nHost: {ACME}:{portal_server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: 10\r\nConnection: close\r\n\r\n"
    ).encode()
    answer = raw_request(portal_server, head + body)
    status = int(answer.split(b" ", 2)[1])
    assert 400 <= status < 500, answer[:300]
    assert snapshot() == before


def test_a_content_length_that_lies_long_is_not_a_5xx(
    portal_server: PortalServer, snapshot: Callable[[], dict[str, int]]
) -> None:
    before = snapshot()
    head = (
        f"POST /api/auth/login HTTP/1.1\r\nHost: {ACME}:{portal_server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n"
    ).encode()
    answer = raw_request(portal_server, head + b'{"username": "al')
    status = int(answer.split(b" ", 2)[1])
    assert 400 <= status < 500, answer[:300]
    assert snapshot() == before


def test_an_8_kb_header_is_a_4xx(portal_server: PortalServer) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = api.get("/api/rag/collections", headers={"X-Padding": "p" * 8192})
    assert 400 <= response.status_code < 500


def test_every_response_carries_its_own_request_id(
    portal_server: PortalServer,
) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = api.get("/api/rag/documents/abc%00def")
        fine = api.get("/api/rag/collections")
    assert len(response.headers["X-Request-ID"]) == 32
    assert fine.headers["X-Request-ID"] != response.headers["X-Request-ID"]


@pytest.mark.django_db
def test_a_batch_over_the_content_limit_is_a_413_naming_it(settings: object) -> None:
    from portal.api.errors import PayloadTooLarge
    from portal.api.ingest import IngestBatchView

    settings.RAG_API = {**settings.RAG_API, "MAX_BATCH_CONTENT_BYTES": 1000}  # type: ignore[attr-defined]
    body = IngestBatchView.Input(
        data={"collection": "docs", "documents": [{"content": "é" * 300}, {"content": "x" * 401}]}
    )
    with pytest.raises(PayloadTooLarge, match="1001 bytes of content; the limit is 1000"):
        body.is_valid(raise_exception=True)
