"""Writes through the API land in the tenant's audit log (SPEC O6) with the actor, the
request's id (the one the response's ``X-Request-ID`` names) and the client's address."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from portal import launch
from tests.conftest import LOGS, PortalServer
from tests.portal.api.test_jobs import wait_for

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


# Routes that change nothing: a login, and the reads that POST their query.
READS = {
    ("post", "/api/auth/login"),
    ("post", "/api/rag/search"),
    ("post", "/api/rag/context"),
    ("post", "/api/rag/answer"),
    ("post", "/api/rag/chat"),
}


@pytest.fixture(scope="module")
def worker(portal_server: PortalServer) -> Iterator[None]:
    with launch.worker(portal_server.env, LOGS / "worker-test-audit.log"):
        yield


def test_every_write_route_of_the_api_records_an_event(
    portal_server: PortalServer, worker: None
) -> None:
    """Every POST and DELETE of the OpenAPI schema but the reads above is performed once here
    and must leave at least one event under its request id: a new write route fails this
    test until it is audited (and listed here)."""
    with portal_server.client(ACME) as client:
        paths = client.get("/api/schema", headers={"Accept": "application/json"}).json()["paths"]
    writes = {
        (method, path)
        for path, operations in paths.items()
        for method in operations
        if method in ("post", "delete", "put", "patch")
    } - READS

    source = portal_server.new_source()
    document = {"collection": source, "content": "Audited words about audits. " * 10}
    done: dict[tuple[str, str], httpx.Response] = {}
    with portal_server.api(ACME, "alice") as alice:

        def call(method: str, template: str, path: str, **kwargs: Any) -> httpx.Response:
            response = alice.request(method.upper(), path, **kwargs)
            assert response.status_code < 300, (template, response.text)
            done[(method, template)] = response
            return response

        ingested = call("post", "/api/rag/ingest", "/api/rag/ingest", json=document)
        call(
            "post",
            "/api/rag/ingest/batch",
            "/api/rag/ingest/batch",
            json={
                "collection": source,
                "documents": [{"content": document["content"], "source": "b.md"}],
            },
        )
        upload = call(
            "post",
            "/api/rag/files",
            "/api/rag/files",
            data={"collection": source},
            files=[("file", ("notes.txt", b"Uploaded notes about the audit log. " * 20))],
        )
        job = wait_for(alice, upload.json()["jobs"][0]["job_id"], timeout=120)
        assert job["state"] == "succeeded", job
        file_document = job["results"][0]["document_id"]
        call(
            "post",
            "/api/rag/documents/{document_id}/reindex",
            f"/api/rag/documents/{file_document}/reindex",
        )
        queued = alice.post("/api/rag/ingest", json={**document, "source": "c.md", "async": True})
        job_id = queued.json()["job_id"]
        call("post", "/api/rag/jobs/{job_id}/cancel", f"/api/rag/jobs/{job_id}/cancel")
        call("post", "/api/rag/jobs/{job_id}/retry", f"/api/rag/jobs/{job_id}/retry")
        key = call(
            "post",
            "/api/auth/keys",
            "/api/auth/keys",
            json={"label": "audit", "collections": [{"name": source}]},
        )
        call("delete", "/api/auth/keys/{key_id}", f"/api/auth/keys/{key.json()['id']}")
        call(
            "delete",
            "/api/rag/documents/{document_id}",
            f"/api/rag/documents/{ingested.json()['document_id']}",
        )
        call(
            "delete",
            "/api/rag/collection",
            "/api/rag/collection",
            content=json.dumps({"collection": source}),
            headers={"Content-Type": "application/json"},
        )

    assert set(done) == writes, f"write routes not exercised here: {writes - set(done)}"
    silent = [
        route
        for route, response in done.items()
        if not events_of(portal_server, response.headers["X-Request-ID"])
    ]
    assert silent == []


def test_every_tenant_admin_page_that_writes_records_its_changes() -> None:
    """Each model page of the tenant admin either records its changes (AuditedAdmin), writes
    only through services that record them, or cannot write at all."""
    from django.contrib import admin

    from tenants.admin_audit import AuditedAdmin
    from tenants.admin_jobs import IngestJobAdmin
    from tenants.admin_keys import ApiKeyAdmin

    through_services = (IngestJobAdmin, ApiKeyAdmin)  # their actions call audited services
    unaudited = []
    for model, model_admin in admin.site._registry.items():
        if isinstance(model_admin, (AuditedAdmin, *through_services)):
            continue
        writes = [
            getattr(model_admin, f"has_{what}_permission")(_superuser_request())
            for what in ("add", "change", "delete")
        ]
        if any(writes):
            unaudited.append(model._meta.label)
    assert unaudited == []


def _superuser_request() -> Any:
    from django.contrib.auth.models import User
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = User(username="root", is_active=True, is_staff=True, is_superuser=True)
    return request
