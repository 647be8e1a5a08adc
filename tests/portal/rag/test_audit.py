"""Writes through the API land in the tenant's audit log (SPEC O6) with the actor, the
request's id (the one the response's ``X-Request-ID`` names) and the client's address."""

from __future__ import annotations

from typing import Any

import psycopg

from tests.conftest import PortalServer

ACME = "acme.localhost"


def events_of(server: PortalServer, request_id: str) -> list[dict[str, Any]]:
    with psycopg.connect(server.database_url) as conn:
        cursor = conn.execute(
            "SELECT actor_name, action, object_type, object_id, before, after, host(address)"
            " FROM acme.tenants_auditevent WHERE request_id = %s ORDER BY id",
            (request_id,),
        )
        names = [column.name for column in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_an_ingest_a_job_and_a_delete_are_recorded_with_who_and_where(
    portal_server: PortalServer,
) -> None:
    source = portal_server.new_source()
    document = {"collection": source, "content": "Audited text. " * 20, "source": "a.md"}
    with portal_server.api(ACME, "alice") as api:
        ingested = api.post("/api/rag/ingest", json=document)
        again = api.post("/api/rag/ingest", json=document)  # unchanged: no write, no event
        queued = api.post("/api/rag/ingest", json={**document, "source": "b.md", "async": True})
        document_id = ingested.json()["document_id"]
        deleted = api.delete(f"/api/rag/documents/{document_id}")

    (ingest,) = events_of(portal_server, ingested.headers["X-Request-ID"])
    assert ingest == {
        "actor_name": "alice",
        "action": "document.ingest",
        "object_type": "document",
        "object_id": document_id,
        "before": None,
        "after": {
            "collection": source,
            "shared": False,
            "source": "a.md",
            "title": "",
            "chunks": ingested.json()["chunks_created"],
        },
        "host": "127.0.0.1",
    }
    assert events_of(portal_server, again.headers["X-Request-ID"]) == []
    (submit,) = events_of(portal_server, queued.headers["X-Request-ID"])
    assert (submit["action"], submit["object_id"]) == ("job.submit", queued.json()["job_id"])
    assert submit["after"]["kind"] == "document"
    (delete,) = events_of(portal_server, deleted.headers["X-Request-ID"])
    assert (delete["action"], delete["before"]["source"]) == ("document.delete", "a.md")
