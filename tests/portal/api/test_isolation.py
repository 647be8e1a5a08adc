"""Isolation on every path: users, tenants and the allowlist (SPEC T2–T4)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.conftest import PortalServer


@pytest.fixture(params=["postgres", "qdrant"])
def portal_server(request: pytest.FixtureRequest) -> PortalServer:
    """These flows against the portal with each store (``RAG_STORE``)."""
    server: PortalServer = request.getfixturevalue(f"{request.param}_portal_server")
    return server


ACME, GLOBEX = "acme.localhost", "globex.localhost"
TEXT = "Alice keeps private notes about quarterly revenue forecasts and hiring plans. " * 4
STRATEGIES = ("semantic", "bm25", "fuzzy", "hybrid")


@pytest.fixture
def alice_doc(portal_server: PortalServer, source: str) -> Iterator[str]:
    with portal_server.api(ACME, "alice") as api:
        response = api.post("/api/rag/ingest", json={"collection": source, "content": TEXT})
    assert response.status_code == 200, response.text
    return response.json()["document_id"]


def alice_still_has(portal_server: PortalServer, source: str, document_id: str) -> bool:
    with portal_server.api(ACME, "alice") as api:
        return api.get(f"/api/rag/documents/{document_id}").status_code == 200


def every_path(api: httpx.Client, source: str, document_id: str) -> dict[str, httpx.Response]:
    responses = {
        f"search:{s}": api.post(
            "/api/rag/search", json={"collection": source, "query": "revenue", "strategy": s}
        )
        for s in STRATEGIES
    }
    responses["documents"] = api.get(f"/api/rag/collections/{source}/documents")
    responses["get"] = api.get(f"/api/rag/documents/{document_id}")
    responses["delete_document"] = api.delete(f"/api/rag/documents/{document_id}")
    responses["delete_collection"] = api.request(
        "DELETE", "/api/rag/collection", json={"collection": source}
    )
    return responses


def test_bob_cannot_see_or_touch_alices_collection(
    portal_server: PortalServer, source: str, alice_doc: str
) -> None:
    with portal_server.api(ACME, "bob") as bob:
        responses = every_path(bob, source, alice_doc)
        listed = bob.get("/api/rag/collections").json()

    assert {path: r.status_code for path, r in responses.items()} == dict.fromkeys(responses, 404)
    assert source not in {c["name"] for c in listed}
    assert alice_still_has(portal_server, source, alice_doc)


def test_carols_token_is_rejected_by_acme(
    portal_server: PortalServer, source: str, alice_doc: str
) -> None:
    with portal_server.client(ACME, portal_server.token(GLOBEX, "carol")) as carol_at_acme:
        responses = every_path(carol_at_acme, source, alice_doc)
        responses["list"] = carol_at_acme.get("/api/rag/collections")

    assert {path: r.status_code for path, r in responses.items()} == dict.fromkeys(responses, 401)
    assert responses["list"].json()["code"] == "AUTHENTICATION_FAILED"
    assert alice_still_has(portal_server, source, alice_doc)


def test_alices_token_is_rejected_by_globex(portal_server: PortalServer, alice_doc: str) -> None:
    with portal_server.client(GLOBEX, portal_server.token(ACME, "alice")) as alice_at_globex:
        assert alice_at_globex.get("/api/rag/collections").status_code == 401


def test_carol_on_her_own_host_never_reaches_acme_data(
    portal_server: PortalServer, source: str, alice_doc: str
) -> None:
    with portal_server.api(GLOBEX, "carol") as carol:
        responses = every_path(carol, source, alice_doc)
        listed = carol.get("/api/rag/collections").json()

    assert {path: r.status_code for path, r in responses.items()} == dict.fromkeys(responses, 404)
    assert source not in {c["name"] for c in listed}
    assert alice_still_has(portal_server, source, alice_doc)


def test_carol_cannot_log_in_on_acme(portal_server: PortalServer) -> None:
    with portal_server.client(ACME) as client:
        response = client.post(
            "/api/auth/login", json={"username": "carol", "password": portal_server.password}
        )
    assert response.status_code == 401
    assert response.json()["code"] == "AUTHENTICATION_FAILED"


def test_disabling_a_source_mid_session_denies_at_once(
    portal_server: PortalServer,
    source: str,
    alice_doc: str,
    set_source: Callable[[str, str, bool], None],
) -> None:
    with portal_server.api(ACME, "alice") as alice:
        assert alice.post("/api/rag/search", json={"collection": source, "query": "x"}).is_success
        set_source("acme", source, False)
        denied = {
            "search": alice.post("/api/rag/search", json={"collection": source, "query": "x"}),
            "ingest": alice.post("/api/rag/ingest", json={"collection": source, "content": TEXT}),
            "documents": alice.get(f"/api/rag/collections/{source}/documents"),
            "get": alice.get(f"/api/rag/documents/{alice_doc}"),
            "delete_document": alice.delete(f"/api/rag/documents/{alice_doc}"),
            "delete_collection": alice.request(
                "DELETE", "/api/rag/collection", json={"collection": source}
            ),
        }
        listed = alice.get("/api/rag/collections").json()
        set_source("acme", source, True)
        restored = alice.post("/api/rag/search", json={"collection": source, "query": "x"})

    assert {k: r.status_code for k, r in denied.items()} == dict.fromkeys(denied, 403)
    assert denied["search"].json() == {
        "error": f"RAG source '{source}' is not allowed for this tenant; a tenant admin "
        "enables it in the RAG source allowlist.",
        "code": "FORBIDDEN",
    }
    assert source not in {c["name"] for c in listed}
    assert restored.status_code == 200
    assert alice_still_has(portal_server, source, alice_doc)


def test_a_source_without_an_allowlist_entry_is_denied(portal_server: PortalServer) -> None:
    with portal_server.api(ACME, "alice") as alice:
        response = alice.post(
            "/api/rag/ingest", json={"collection": "never_allowed", "content": TEXT}
        )
    assert response.status_code == 403
    assert "never_allowed" in response.json()["error"]


def test_shared_collections_are_written_by_admins_and_read_by_users(
    portal_server: PortalServer, source: str
) -> None:
    body = {"collection": source, "content": TEXT, "shared": True}
    with portal_server.api(ACME, "alice") as alice:
        assert alice.post("/api/rag/ingest", json=body).status_code == 403
    with portal_server.api(ACME, "admin") as admin:
        assert admin.post("/api/rag/ingest", json=body).status_code == 200
    with portal_server.api(ACME, "bob") as bob:
        shared = bob.post(
            "/api/rag/search",
            json={"collection": source, "query": "revenue", "strategy": "bm25", "shared": True},
        )
        own = bob.post("/api/rag/search", json={"collection": source, "query": "revenue"})
    assert shared.status_code == 200
    assert shared.json()["total"] >= 1
    assert own.status_code == 404  # bob has no private collection of that name


@pytest.mark.parametrize("header", ["Bearer", "Token abc", "Bearer not-a-token", "bearer x"])
def test_bad_authorization_headers_get_401(portal_server: PortalServer, header: str) -> None:
    with portal_server.client(ACME) as client:
        response = client.get("/api/rag/collections", headers={"Authorization": header})
    assert response.status_code == 401
    assert response.json()["code"] == "AUTHENTICATION_FAILED"


def test_no_token_gets_401_unauthorized(portal_server: PortalServer) -> None:
    with portal_server.client(ACME) as client:
        response = client.post("/api/rag/search", json={"collection": "docs", "query": "x"})
    assert response.status_code == 401
    assert response.json()["error"].startswith("Unauthorized")
