"""End-to-end flows over HTTP against the real portal server (SPEC A1–A4)."""

from __future__ import annotations

import pytest

from tests.conftest import PortalServer


@pytest.fixture(params=["postgres", "qdrant"])
def portal_server(request: pytest.FixtureRequest) -> PortalServer:
    """These flows against the portal with each store (``RAG_STORE``)."""
    server: PortalServer = request.getfixturevalue(f"{request.param}_portal_server")
    return server


ACME = "acme.localhost"
TEXT = (
    "Vector databases store embeddings for semantic search. "
    "BM25 ranks documents by term frequency and inverse document frequency. "
    "Fuzzy matching tolerates misspelled words in a search query. "
) * 3


def test_login_ingest_search_list_delete(portal_server: PortalServer, source: str) -> None:
    with portal_server.api(ACME, "alice") as api:
        ingest = api.post(
            "/api/rag/ingest",
            json={
                "collection": source,
                "content": TEXT,
                "title": "Search notes",
                "source": "notes.md",
                "tags": ["a", "b"],
            },
        )
        assert ingest.status_code == 200, ingest.text
        body = ingest.json()
        document_id = body["document_id"]
        assert body["collection"] == source
        assert body["chunks_created"] == len(body["document_ids"]) >= 1
        assert body["document_ids"][0] == f"{document_id}_0"

        for strategy in ("semantic", "bm25", "fuzzy", "hybrid"):
            search = api.post(
                "/api/rag/search",
                json={"collection": source, "query": "BM25 term frequency", "strategy": strategy},
            )
            assert search.status_code == 200, (strategy, search.text)
            result = search.json()
            assert result["strategy"] == strategy
            assert result["total"] == len(result["results"]) >= 1
            hit = result["results"][0]
            meta = hit["metadata"]
            assert meta["title"] == "Search notes"
            assert meta["source"] == "notes.md"
            assert meta["tags"] == ["a", "b"]
            assert meta["document_id"] == document_id
            assert TEXT[meta["start_offset"] : meta["end_offset"]] == hit["content"]
            if strategy == "hybrid":
                assert 0.0 < hit["normalized_score"] <= 1.0
            else:
                assert hit["normalized_score"] is None

        typo = api.post(
            "/api/rag/search",
            json={
                "collection": source,
                "query": "frequncy serach",
                "strategy": "bm25",
                "correct_typos": True,
            },
        ).json()
        assert typo["corrected_query"] == "frequency search"
        assert {c["original"] for c in typo["corrections"]} == {"frequncy", "serach"}

        listed = {c["name"]: c for c in api.get("/api/rag/collections").json()}
        assert listed[source]["document_count"] == 1
        assert listed[source]["chunk_count"] == body["chunks_created"]
        assert listed[source]["dimensions"] == 16

        documents = api.get(f"/api/rag/collections/{source}/documents").json()["documents"]
        assert [d["id"] for d in documents] == [document_id]
        detail = api.get(f"/api/rag/documents/{document_id}").json()
        assert [c["id"] for c in detail["chunks"]] == body["document_ids"]

        deleted = api.delete(f"/api/rag/documents/{document_id}")
        assert deleted.json() == {"success": True, "document_id": document_id, "collection": source}
        assert api.get(f"/api/rag/documents/{document_id}").status_code == 404
        after = api.post(
            "/api/rag/search", json={"collection": source, "query": "BM25", "strategy": "bm25"}
        ).json()
        assert after["results"] == []

        gone = api.request("DELETE", "/api/rag/collection", json={"collection": source})
        assert gone.json() == {"success": True, "collection": source, "documents_deleted": 0}
        assert source not in {c["name"] for c in api.get("/api/rag/collections").json()}
        missing = api.post("/api/rag/search", json={"collection": source, "query": "x"})
        assert missing.status_code == 404
        assert missing.json() == {
            "error": f"Collection '{source}' not found: ingest a document into it to create it, "
            "or list the collections to see which exist.",
            "code": "NOT_FOUND",
        }


def test_reingesting_the_same_source_replaces_the_document(
    portal_server: PortalServer, source: str
) -> None:
    with portal_server.api(ACME, "alice") as api:
        first = api.post(
            "/api/rag/ingest", json={"collection": source, "content": TEXT, "source": "same.md"}
        ).json()
        second = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": TEXT + " More.", "source": "same.md"},
        ).json()
        assert second["document_id"] == first["document_id"]
        assert (first["unchanged"], second["unchanged"]) == (False, False)
        again = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": TEXT + " More.", "source": "same.md"},
        ).json()
        assert again["unchanged"] is True
        assert again["document_ids"] == second["document_ids"]
        listed = {c["name"]: c for c in api.get("/api/rag/collections").json()}
        assert listed[source]["document_count"] == 1
        assert listed[source]["chunk_count"] == second["chunks_created"]


def test_collection_delete_reports_documents_deleted(
    portal_server: PortalServer, source: str
) -> None:
    with portal_server.api(ACME, "alice") as api:
        for name in ("one.md", "two.md"):
            api.post(
                "/api/rag/ingest", json={"collection": source, "content": TEXT, "source": name}
            )
        gone = api.request("DELETE", "/api/rag/collection", json={"collection": source})
        assert gone.json()["documents_deleted"] == 2


@pytest.mark.parametrize(("strategy", "expected"), [("word", 1), ("semantic", 2), ("character", 2)])
def test_ingest_uses_the_fixed_chunk_sizes_per_strategy(
    portal_server: PortalServer, source: str, strategy: str, expected: int
) -> None:
    # 599 characters in 101 words: one word window (200 words), two semantic chunks (at most
    # 500 characters each), two character windows (500 characters, step 400).
    text = " ".join(["word"] * 100) + " " + "x" * 99
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/ingest",
            json={"collection": source, "content": text, "chunking_strategy": strategy},
        )
    assert response.status_code == 200, response.text
    assert response.json()["chunks_created"] == expected


@pytest.mark.parametrize("rerank", ["lexical", True, "off", False])
def test_search_reranks_when_asked(
    portal_server: PortalServer, source: str, rerank: object
) -> None:
    texts = {
        "a.md": "Fuzzy matching tolerates misspelled words. " * 3,
        "b.md": "Reciprocal rank fusion merges the rankings of dense and lexical search. " * 2,
    }
    with portal_server.api(ACME, "alice") as api:
        for name, text in texts.items():
            response = api.post(
                "/api/rag/ingest", json={"collection": source, "content": text, "source": name}
            )
            assert response.status_code == 200, response.text
        search = api.post(
            "/api/rag/search",
            json={
                "collection": source,
                "query": "fusion of rankings",
                "strategy": "bm25",
                "rerank": rerank,
            },
        )
    assert search.status_code == 200, search.text
    body = search.json()
    on = rerank in ("lexical", True)
    assert body["reranked"] is on
    assert body["rerank"] == ("lexical" if on else "off")
    results = body["results"]
    assert results
    if on:
        infos = [r["rerank"] for r in results]
        assert all(info["mode"] == "lexical" for info in infos)
        scores = [info["score"] for info in infos]
        assert scores == sorted(scores, reverse=True)
    else:
        assert all(r["rerank"] is None for r in results)
