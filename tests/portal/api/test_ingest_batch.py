"""POST /api/rag/ingest/batch: several documents in one request and one write, over HTTP."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import LOGS, PortalServer

ACME = "acme.localhost"
TEXTS = [
    "Vector databases store embeddings for semantic search over large collections. " * 3,
    "BM25 ranks documents by term frequency and inverse document frequency. " * 3,
    "Fuzzy matching tolerates misspelled words in a search query typed in a hurry. " * 3,
]
GOOD = {"content": TEXTS[0]}


def test_a_batch_is_ingested_in_order_and_an_unchanged_one_redoes_nothing(
    portal_server: PortalServer, source: str
) -> None:
    documents = [
        {"content": TEXTS[0], "title": "Vectors", "source": "vectors.md", "tags": ["a"]},
        {"content": TEXTS[1], "source": "bm25.md"},
        {"content": TEXTS[2]},
    ]
    with portal_server.api(ACME, "alice") as api:
        first = api.post(
            "/api/rag/ingest/batch", json={"collection": source, "documents": documents}
        )
        assert first.status_code == 200, first.text
        body = first.json()
        assert body["collection"] == source
        entries = body["documents"]
        assert [e["source"] for e in entries] == ["vectors.md", "bm25.md", ""]
        assert [e["unchanged"] for e in entries] == [False, False, False]
        assert body["chunks_created"] == sum(e["chunks_created"] for e in entries) >= 3
        for entry in entries:
            assert entry["document_ids"][0] == f"{entry['document_id']}_0"
            assert len(entry["document_ids"]) == entry["chunks_created"]

        search = api.post(
            "/api/rag/search",
            json={"collection": source, "query": "inverse document frequency", "strategy": "bm25"},
        ).json()
        assert search["results"][0]["metadata"]["document_id"] == entries[1]["document_id"]

        # The same sources again, one of them changed: only that one is redone.
        documents[1] = {
            "content": TEXTS[1] + " Now with a new closing sentence.",
            "source": "bm25.md",
        }
        again = api.post(
            "/api/rag/ingest/batch",
            json={"collection": source, "documents": documents[:2]},
        ).json()
        assert [e["unchanged"] for e in again["documents"]] == [True, False]
        assert [e["document_id"] for e in again["documents"]] == [
            e["document_id"] for e in entries[:2]
        ]
        assert again["documents"][0]["document_ids"] == entries[0]["document_ids"]

        listed = {c["name"]: c for c in api.get("/api/rag/collections").json()}
        assert listed[source]["document_count"] == 3


BATCH_CASES: list[tuple[Any, str]] = [
    (None, "documents"),
    ([], "documents"),
    ("text", "documents"),
    ([GOOD, {"content": 5}], "documents[1].content"),
    ([GOOD, "text"], "documents[1]: Each document must be a JSON object."),
    ([GOOD, {"content": TEXTS[1], "extra": 1}], "documents[1].extra"),
    ([GOOD, {"content": TEXTS[1], "tags": [1]}], "documents[1].tags"),
    ([GOOD, {"content": "tiny"}], "documents[1]: Content too small to chunk"),
    (
        [{**GOOD, "source": "a.md"}, {"content": TEXTS[1], "source": "a.md"}],
        "documents 0 and 1 have the same source 'a.md'",
    ),
    ([GOOD] * 101, "documents"),
]


@pytest.mark.parametrize(("documents", "named"), BATCH_CASES)
def test_a_bad_batch_is_a_400_naming_the_document_and_writes_nothing(
    portal_server: PortalServer,
    snapshot: Callable[[], dict[str, int]],
    documents: Any,
    named: str,
) -> None:
    body = {"collection": "docs", "documents": documents}
    before = snapshot()
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/ingest/batch",
            content=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )

    assert response.status_code == 400, response.text
    assert response.json()["code"] == "INVALID_INPUT"
    assert named in response.json()["error"]
    assert snapshot() == before


def test_a_bad_document_for_a_new_collection_creates_no_collection(
    portal_server: PortalServer, snapshot: Callable[[], dict[str, int]], source: str
) -> None:
    before = snapshot()
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/ingest/batch",
            json={"collection": source, "documents": [GOOD, {"content": "   "}]},
        )
        listed = [c["name"] for c in api.get("/api/rag/collections").json()]

    assert (response.status_code, response.json()["error"]) == (
        400,
        "documents[1]: Content too small to chunk",
    )
    assert source not in listed
    assert snapshot() == before


def test_a_batch_needs_the_source_on_the_allowlist(
    portal_server: PortalServer, set_source: Callable[[str, str, bool], None], source: str
) -> None:
    set_source("acme", source, False)
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/ingest/batch", json={"collection": source, "documents": [GOOD]}
        )
    assert response.status_code == 403, response.text


def test_a_batch_writes_one_structured_log_line(portal_server: PortalServer, source: str) -> None:
    documents = [{"content": TEXTS[0], "source": "a.md"}, {"content": TEXTS[1]}]
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/ingest/batch", json={"collection": source, "documents": documents}
        )
    assert response.status_code == 200, response.text

    # The server's log reaches its file a moment after the response.
    deadline = time.monotonic() + 10
    while True:
        lines = (LOGS / "portal-server-test.log").read_text().splitlines()
        events = [json.loads(line) for line in lines if '"rag.ingest_batch"' in line]
        found = [e for e in events if e["collection"] == source]
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    (event,) = found
    assert (event["tenant"], event["user"], event["shared"]) == ("acme", "alice", False)
    assert (event["documents"], event["unchanged"]) == (2, 0)
    assert event["chunks"] == response.json()["chunks_created"]
    # Every chunk is distinct: embedded now or found in the tenant's cache (earlier tests).
    assert event["embedded_texts"] + event["cache_hits"] == event["chunks"]
    assert event["duration_ms"] > 0
    # The model's share of it (the fake embedder's is all but nothing, never more).
    assert 0 <= event["model_ms"] <= event["duration_ms"]
