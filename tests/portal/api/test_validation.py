"""Every bad field gets a 4xx naming it, and the database is unchanged (SPEC A5)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import PortalServer

ACME = "acme.localhost"
GOOD_TEXT = "A perfectly reasonable document about search engines and ranking. " * 3
HUGE = "x" * 20_000

INGEST_CASES: list[tuple[str, Any, str]] = [
    ("collection", None, "collection"),
    ("collection", 17, "collection"),
    ("collection", "", "collection"),
    ("collection", "x; DROP TABLE rag_chunks", "collection"),
    ("collection", "quo'te", "collection"),
    ("collection", "a" * 64, "collection"),
    ("collection", "héllo", "collection"),
    ("collection", ["docs"], "collection"),
    ("content", None, "content"),
    ("content", 42, "content"),
    ("content", "", "content"),
    ("content", "   ", "Content too small to chunk"),
    ("content", "tiny", "Content too small to chunk"),
    ("content", "nul\x00byte " * 10, "content"),
    ("content", "lone \ud800 surrogate " * 5, "content"),
    ("title", 5, "title"),
    ("title", HUGE, "title"),
    ("source", {"a": 1}, "source"),
    ("source", HUGE, "source"),
    ("tags", "not-a-list", "tags"),
    ("tags", [1, 2], "tags"),
    ("tags", ["t"] * 51, "tags"),
    ("tags", [HUGE], "tags"),
    (
        "chunking_strategy",
        "token-based",
        "Unknown chunking strategy: token-based. Use: word, semantic, character",
    ),
    ("chunking_strategy", 3, "chunking_strategy"),
    ("shared", "yes", "shared"),
    ("metadata", "page=3", "metadata"),
    ("metadata", [1], "metadata"),
    ("metadata", {"title": "x"}, "'title' is set by the server"),
    ("metadata", {"chunking": "x"}, "'chunking' is set by the server"),
    ("metadata", {"a": "x" * 20_000}, "the limit is 16384"),
    ("metadata", {"a": [[[[[[[[[1]]]]]]]]]}, "deeper than 8"),
    ("metadata", {"a": "nul\x00"}, "NUL"),
    ("metadata", {"": 1}, "keys must have 1 to 256"),
    ("unexpected", 1, "unexpected"),
]

SEARCH_CASES: list[tuple[str, Any, str]] = [
    ("collection", None, "collection"),
    ("collection", "../etc", "collection"),
    ("query", None, "query"),
    ("query", "", "query"),
    ("query", 7, "query"),
    ("query", "q" * 10_001, "query"),
    ("limit", "10", "limit"),
    ("limit", 0, "limit"),
    ("limit", -1, "limit"),
    ("limit", 10**9, "limit"),
    ("limit", 2.5, "limit"),
    ("limit", True, "limit"),
    ("strategy", "magic", "Unknown search strategy: magic. Use: semantic, bm25, fuzzy, hybrid"),
    ("strategy", 1, "strategy"),
    ("threshold", "high", "threshold"),
    ("threshold", None, "threshold"),
    ("correct_typos", "true", "correct_typos"),
    ("rerank", 1, "rerank"),
    ("rerank", "magic", "magic"),
    ("filters", [1], "filters"),
    ("filters", {"key": "year", "operator": "~", "value": 1}, "unknown operator '~'"),
    ("filters", {"key": "year", "operator": ">", "value": True}, "not a boolean"),
    ("filters", {"condition": "xor", "filters": []}, "condition"),
    ("filters", {"key": "year", "value": {"a": 1}}, "use a string, integer"),
    ("extra", "x", "extra"),
]


def post_json(api: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
    # json.dumps escapes lone surrogates ("\\ud800") where httpx's encoder would refuse them.
    return api.post(
        path, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )


@pytest.mark.parametrize(("field", "value", "named"), INGEST_CASES)
def test_bad_ingest_field_is_a_400_naming_it_and_writes_nothing(
    portal_server: PortalServer,
    snapshot: Callable[[], dict[str, int]],
    field: str,
    value: Any,
    named: str,
) -> None:
    body = {"collection": "docs", "content": GOOD_TEXT, field: value}
    before = snapshot()
    with portal_server.api(ACME, "alice") as api:
        response = post_json(api, "/api/rag/ingest", body)

    assert response.status_code == 400, response.text
    assert response.json()["code"] == "INVALID_INPUT"
    assert named in response.json()["error"]
    assert snapshot() == before


@pytest.mark.parametrize("content", ["   ", "tiny"])
def test_content_too_small_for_a_new_collection_creates_no_collection(
    portal_server: PortalServer,
    snapshot: Callable[[], dict[str, int]],
    source: str,
    content: str,
) -> None:
    before = snapshot()
    with portal_server.api(ACME, "alice") as api:
        response = post_json(api, "/api/rag/ingest", {"collection": source, "content": content})
        listed = [c["name"] for c in api.get("/api/rag/collections").json()]

    assert (response.status_code, response.json()["error"]) == (400, "Content too small to chunk")
    assert source not in listed
    assert snapshot() == before


@pytest.mark.parametrize(("field", "value", "named"), SEARCH_CASES)
def test_bad_search_field_is_a_400_naming_it(
    portal_server: PortalServer,
    snapshot: Callable[[], dict[str, int]],
    field: str,
    value: Any,
    named: str,
) -> None:
    body = {"collection": "docs", "query": "search", field: value}
    before = snapshot()
    with portal_server.api(ACME, "alice") as api:
        response = post_json(api, "/api/rag/search", body)

    assert response.status_code == 400, response.text
    assert response.json()["code"] == "INVALID_INPUT"
    assert named in response.json()["error"]
    assert snapshot() == before


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'"text"', b"{", b"null"])
def test_a_body_that_is_not_a_json_object_is_a_400(
    portal_server: PortalServer, snapshot: Callable[[], dict[str, int]], body: bytes
) -> None:
    before = snapshot()
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/ingest", content=body, headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "INVALID_INPUT"
    assert snapshot() == before


def test_a_body_over_the_limit_is_a_413_before_any_work(
    portal_server: PortalServer, snapshot: Callable[[], dict[str, int]]
) -> None:
    before = snapshot()
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/ingest", json={"collection": "docs", "content": "x " * (1024 * 1024 + 1)}
        )
    assert response.status_code == 413
    assert response.json()["code"] == "PAYLOAD_TOO_LARGE"
    assert snapshot() == before


def test_a_non_json_content_type_is_a_415(portal_server: PortalServer) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/search",
            content=b"collection=docs",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
    assert response.status_code == 415
    assert response.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"


@pytest.mark.parametrize(
    "path",
    [
        "/api/rag/collections/bad-name/documents",
        "/api/rag/collections/docs/documents?limit=0",
        "/api/rag/collections/docs/documents?offset=-1",
        "/api/rag/collections?shared=maybe",
        "/api/rag/collections?shared=1",  # the schema's boolean is true or false
        "/api/rag/collections?sahred=true",  # a misspelt parameter is refused, not ignored
        "/api/rag/documents/some-id?shared=false&limit=5",
    ],
)
def test_bad_query_parameters_are_400(portal_server: PortalServer, path: str) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = api.get(path)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "INVALID_INPUT"
