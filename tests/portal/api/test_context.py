"""Context and answer endpoints over several collections or a profile (SPEC A7, R1–R5)."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from tests.conftest import LLM_REPLY, PortalServer
from tests.rag_plugin.llama_index.fake_llm_server import FakeLLMServer

ACME = "acme.localhost"
HYBRID = "Hybrid search fuses dense and lexical rankings with reciprocal rank fusion. " * 2
BM25 = "BM25 scores documents by term frequency and inverse document frequency. " * 2


def ingest(server: PortalServer, user: str, collection: str, text: str, **extra: object) -> str:
    with server.api(ACME, user) as api:
        response = api.post(
            "/api/rag/ingest", json={"collection": collection, "content": text, **extra}
        )
    assert response.status_code == 200, response.text
    return str(response.json()["document_id"])


def create_profile(server: PortalServer, name: str, collections: list[tuple[str, bool]]) -> None:
    """Store a profile as the admin form would (defaults of tenants.RetrievalProfile)."""
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        conn.execute("SET search_path TO acme, public")
        profile_id = conn.execute(
            "INSERT INTO tenants_retrievalprofile (name, description, retrieval_k, "
            "min_relevance, include_sources, strategy, rerank, reranker_model, vision, "
            "expand_query, language) VALUES (%s, '', 8, 0.05, true, 'semantic', 'lexical', "
            "'', false, false, 'english') RETURNING id",
            (name,),
        ).fetchone()[0]
        for position, (collection, shared) in enumerate(collections):
            conn.execute(
                sql.SQL(
                    "INSERT INTO tenants_profilecollection "
                    "(profile_id, collection, shared, weight, priority) "
                    "VALUES (%s, %s, %s, 1.0, %s)"
                ),
                (profile_id, collection, shared, -position),
            )


def test_context_numbers_blocks_and_sources_across_collections(
    portal_server: PortalServer,
) -> None:
    first, second = portal_server.new_source(), portal_server.new_source()
    doc_a = ingest(portal_server, "alice", first, HYBRID, title="Hybrid")
    doc_b = ingest(portal_server, "alice", second, BM25, title="BM25")
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/context",
            json={
                "query": "how are rankings fused",
                "collections": [{"name": first}, {"name": second, "weight": 0.5}],
                "k": 4,
                "min_relevance": 0.0,
            },
        )
    assert response.status_code == 200, response.text
    body = response.json()
    sources = body["sources"]
    assert [s["footnote_id"] for s in sources] == list(range(1, len(sources) + 1))
    assert {s["document_id"] for s in sources} == {doc_a, doc_b}
    blocks = body["context"].split("\n\n---\n\n")
    assert len(blocks) == len(sources)
    for number, (block, source) in enumerate(zip(blocks, sources, strict=True), start=1):
        assert block == f"[Document {number}]\n{source['excerpt']}"
        text = HYBRID if source["document_id"] == doc_a else BM25
        assert text[source["start_offset"] : source["end_offset"]] == source["excerpt"]
    relevances = [s["relevance"] for s in sources]
    assert relevances == sorted(relevances, reverse=True) or sources[0]["rerank"] is not None


def test_answer_prompts_the_llm_with_the_numbered_context_and_maps_citations(
    portal_server: PortalServer, fake_llm: FakeLLMServer
) -> None:
    collection = portal_server.new_source()
    ingest(portal_server, "alice", collection, HYBRID)
    ingest(portal_server, "alice", collection, BM25, source="bm25.md")
    before = len(fake_llm.requests)
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/answer",
            json={
                "query": "What is hybrid search?",
                "collections": [{"name": collection}],
                "min_relevance": 0.0,
            },
        )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] == LLM_REPLY
    assert body["cited"] == [1, 2]
    assert body["message"] is None
    prompt = fake_llm.prompts()[before]
    assert "What is hybrid search?" in prompt
    for source in body["sources"]:
        assert f"[Document {source['footnote_id']}]\n{source['excerpt']}" in prompt


def test_answer_without_an_llm_returns_context_and_says_so(
    portal_server_without_llm: PortalServer,
) -> None:
    server = portal_server_without_llm
    collection = server.new_source()
    ingest(server, "alice", collection, HYBRID)
    with server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/answer", json={"query": "fusion", "collections": [{"name": collection}]}
        )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] is None
    assert "No LLM is configured" in body["message"]
    assert body["sources"]
    assert body["context"].startswith("[Document 1]\n")


def test_a_profile_searches_shared_and_own_collections_and_skips_what_is_missing(
    portal_server: PortalServer,
) -> None:
    shared, own, denied = (portal_server.new_source() for _ in range(3))
    ingest(portal_server, "admin", shared, HYBRID, shared=True)
    ingest(portal_server, "alice", own, BM25)
    portal_server.set_source("acme", denied, False)
    create_profile(portal_server, f"p_{shared}", [(shared, True), (own, False), (denied, True)])

    def context(user: str) -> dict[str, object]:
        with portal_server.api(ACME, user) as api:
            response = api.post(
                "/api/rag/context",
                json={"profile": f"p_{shared}", "query": "ranking", "min_relevance": 0.0},
            )
        assert response.status_code == 200, response.text
        return dict(response.json())

    alice, bob = context("alice"), context("bob")
    assert {s["collection"] for s in alice["sources"]} == {shared, own}  # type: ignore[union-attr]
    assert {s["collection"] for s in bob["sources"]} == {shared}  # type: ignore[union-attr]
    assert bob["skipped_collections"] == [f"{own} (own)", f"{denied} (shared)"]


def test_bob_cannot_name_alices_collection(portal_server: PortalServer) -> None:
    collection = portal_server.new_source()
    ingest(portal_server, "alice", collection, HYBRID)
    with portal_server.api(ACME, "bob") as api:
        response = api.post(
            "/api/rag/context", json={"query": "x", "collections": [{"name": collection}]}
        )
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("body", "status", "named"),
    [
        ({"query": "x"}, 400, "profile"),
        ({"query": "x", "profile": "p", "collections": [{"name": "docs"}]}, 400, "profile"),
        ({"query": "x", "collections": []}, 400, "collections"),
        ({"query": "x", "collections": [{"name": "bad-name"}]}, 400, "name"),
        ({"query": "x", "collections": [{"name": "docs", "weight": -1}]}, 400, "weight"),
        ({"query": "x", "collections": [{"name": "docs"}], "rerank": "magic"}, 400, "rerank"),
        ({"query": "x", "collections": [{"name": "docs"}], "k": 0}, 400, "k"),
        ({"query": "", "collections": [{"name": "docs"}]}, 400, "query"),
        ({"query": "x", "profile": "no_such_profile"}, 404, "no_such_profile"),
        ({"query": "x", "collections": [{"name": "never_allowed"}]}, 403, "never_allowed"),
    ],
)
def test_bad_context_requests(
    portal_server: PortalServer, body: dict[str, object], status: int, named: str
) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = api.post("/api/rag/context", json=body)
    assert response.status_code == status, response.text
    assert named in response.json()["error"]


def test_search_and_context_apply_metadata_filters_before_ranking(
    portal_server: PortalServer,
) -> None:
    collection = portal_server.new_source()
    hybrid = ingest(portal_server, "alice", collection, HYBRID, title="Hybrid", tags=["fusion"])
    bm25 = ingest(portal_server, "alice", collection, BM25, title="BM25", tags=["lexical"])
    by_tag = {"key": "tags", "operator": "contains", "value": "lexical"}
    not_hybrid = {"condition": "not", "filters": [{"key": "title", "value": "Hybrid"}]}
    with portal_server.api(ACME, "alice") as api:
        for filters, expected in ((None, {hybrid}), (by_tag, {bm25}), (not_hybrid, {bm25})):
            for strategy in ("semantic", "bm25", "fuzzy", "hybrid"):
                # The query matches the Hybrid document best: a filter applied after ranking
                # with limit 1 would come back empty.
                search = api.post(
                    "/api/rag/search",
                    json={
                        "collection": collection,
                        "query": "hybrid fusion rankings documents",
                        "strategy": strategy,
                        "limit": 1,
                        "threshold": -1.0,  # the test server's vectors are fake
                        "filters": filters,
                    },
                )
                assert search.status_code == 200, search.text
                found = {r["metadata"]["document_id"] for r in search.json()["results"]}
                if filters or strategy != "semantic":
                    assert found == expected if filters else found == {hybrid}, (filters, strategy)
        context = api.post(
            "/api/rag/context",
            json={
                "query": "hybrid fusion rankings documents",
                "collections": [{"name": collection}],
                "min_relevance": 0.0,
                "filters": by_tag,
            },
        )
        bad = api.post(
            "/api/rag/context",
            json={"query": "x", "collections": [{"name": collection}], "filters": {"filters": 1}},
        )
    assert context.status_code == 200, context.text
    assert {s["document_id"] for s in context.json()["sources"]} == {bm25}
    assert bad.status_code == 400
    assert "filters" in bad.json()["error"]


def test_ingest_metadata_is_filterable_and_drives_the_vision_rule(
    portal_server: PortalServer,
) -> None:
    collection = portal_server.new_source()
    text = "Refund forms are filed within thirty days of purchase. " * 3
    page_two = ingest(
        portal_server, "alice", collection, text, source="p2", metadata={"page_number": 2}
    )
    page_five = ingest(
        portal_server,
        "alice",
        collection,
        text,
        source="p5",
        metadata={"page_number": 5, "has_image": True},
    )
    with portal_server.api(ACME, "alice") as api:
        late = api.post(
            "/api/rag/search",
            json={
                "collection": collection,
                "query": "refund forms",
                "strategy": "bm25",
                "filters": {"key": "page_number", "operator": ">=", "value": 3},
            },
        )
        context = api.post(
            "/api/rag/context",
            json={
                "query": "refund forms",
                "collections": [{"name": collection}],
                "min_relevance": 0,
            },
        )
    assert late.status_code == 200, late.text
    assert {r["metadata"]["document_id"] for r in late.json()["results"]} == {page_five}
    # No vision model: the image document's chunks never reach the context.
    sources = context.json()["sources"]
    assert {s["document_id"] for s in sources} == {page_two}
    # The page travels with the source and into the numbered block; so does the metadata.
    assert {(s["page_number"], s["page_end"], s["citation"]) for s in sources} == {
        (2, 2, "p2, p. 2")
    }
    assert sources[0]["metadata"]["page_number"] == 2
    assert context.json()["context"].startswith("[Document 1] p2, p. 2\nRefund forms")
