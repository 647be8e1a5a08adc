"""API keys (SPEC O8) on the live server: scoped to named collections, read or read_write,
expiring, revocable, bound to their tenant, stored hashed, and never able to make keys."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import psycopg

from tests.conftest import PortalServer

ACME = "acme.localhost"
GLOBEX = "globex.localhost"


def make_key(api: httpx.Client, *collections: str, access: str = "read", **extra: Any) -> Any:
    response = api.post(
        "/api/auth/keys",
        json={
            "label": "pipeline",
            "collections": [{"name": name} for name in collections],
            "access": access,
            **extra,
        },
    )
    assert response.status_code == 201, response.text
    return response.json()


def ingest(api: httpx.Client, collection: str, text: str) -> httpx.Response:
    return api.post(
        "/api/rag/ingest", json={"collection": collection, "content": text, "source": "k.md"}
    )


def test_a_read_key_reads_only_its_collections_and_writes_nothing(
    portal_server: PortalServer,
) -> None:
    mine, other = portal_server.new_source(), portal_server.new_source()
    with portal_server.api(ACME, "alice") as alice:
        assert ingest(alice, mine, "Keys open the granary door. " * 5).status_code == 200
        hidden = ingest(alice, other, "The other granary stays closed. " * 5).json()
        made = make_key(alice, mine)
    assert made["key"].startswith(f"rk_{made['prefix']}_")
    assert (made["user"], made["access"]) == ("alice", "read")
    assert made["collections"] == [{"name": mine, "shared": False}]

    with portal_server.client(ACME, made["key"]) as key:
        found = key.post("/api/rag/search", json={"collection": mine, "query": "granary door"})
        assert found.status_code == 200, found.text
        assert found.json()["results"]
        assert [c["name"] for c in key.get("/api/rag/collections").json()] == [mine]
        outside = key.post("/api/rag/search", json={"collection": other, "query": "granary"})
        assert outside.status_code == 403
        assert outside.json()["code"] == "FORBIDDEN"
        assert f"does not reach the collection '{other}'" in outside.json()["error"]
        # A document outside the key's collections is not found, as another user's is.
        assert key.get(f"/api/rag/documents/{hidden['document_id']}").status_code == 404
        context = key.post(
            "/api/rag/context", json={"collections": [{"name": other}], "query": "granary"}
        )
        assert context.status_code == 403
        written = ingest(key, mine, "A read key writes nothing. " * 5)
        assert written.status_code == 403
        assert "may only read" in written.json()["error"]
        deleted = key.delete(f"/api/rag/documents/{hidden['document_id']}")
        assert deleted.status_code in (403, 404)
        # Keys do not manage keys.
        assert key.get("/api/auth/keys").json() == {"keys": []}
        again = key.post("/api/auth/keys", json={"label": "x", "collections": [{"name": mine}]})
        assert again.status_code == 403


def test_a_read_write_key_writes_its_collection_as_its_user_and_sees_only_its_jobs(
    portal_server: PortalServer,
) -> None:
    mine, other = portal_server.new_source(), portal_server.new_source()
    with portal_server.api(ACME, "alice") as alice:
        other_job = alice.post(
            "/api/rag/ingest",
            json={"collection": other, "content": "queued elsewhere " * 5, "async": True},
        )
        assert other_job.status_code == 202
        made = make_key(alice, mine, access="read_write")
    with portal_server.client(ACME, made["key"]) as key:
        written = ingest(key, mine, "Written with a key. " * 5)
        assert written.status_code == 200, written.text
        assert ingest(key, other, "Not here. " * 5).status_code == 403
        queued = key.post(
            "/api/rag/ingest",
            json={"collection": mine, "content": "in the background " * 5, "async": True},
        )
        assert queued.status_code == 202
        jobs = {job["id"] for job in key.get("/api/rag/jobs").json()["jobs"]}
        assert queued.json()["job_id"] in jobs
        assert other_job.json()["job_id"] not in jobs
        assert key.get(f"/api/rag/jobs/{other_job.json()['job_id']}").status_code == 404
    with psycopg.connect(portal_server.database_url) as conn:
        actor = conn.execute(
            "SELECT actor_name FROM acme.tenants_auditevent WHERE request_id = %s",
            (written.headers["X-Request-ID"],),
        ).fetchone()
    assert actor == ("alice",)


def test_a_key_is_stored_hashed_bound_to_its_tenant_and_ends_when_revoked_or_expired(
    portal_server: PortalServer,
) -> None:
    mine = portal_server.new_source()
    with portal_server.api(ACME, "alice") as alice:
        revoked = make_key(alice, mine)
        expired = make_key(alice, mine)
        kept = make_key(alice, mine)
        assert alice.delete(f"/api/auth/keys/{revoked['id']}").json()["revoked_at"]
        listed = alice.get("/api/auth/keys").json()["keys"]
    assert {key["id"] for key in listed} >= {revoked["id"], expired["id"], kept["id"]}
    assert all("key" not in key for key in listed)
    with psycopg.connect(portal_server.database_url) as conn:
        stored = conn.execute(
            "SELECT secret_hash FROM acme.tenants_apikey WHERE id = %s", (kept["id"],)
        ).fetchone()
        conn.execute(
            "UPDATE acme.tenants_apikey SET expires_at = now() - interval '1 second' WHERE id = %s",
            (expired["id"],),
        )
    assert stored == (hashlib.sha256(kept["key"].encode()).hexdigest(),)

    for secret in (revoked["key"], expired["key"]):
        with portal_server.client(ACME, secret) as key:
            response = key.get("/api/rag/collections")
        assert response.status_code == 401
        assert response.json()["code"] == "AUTHENTICATION_FAILED"
    with portal_server.client(GLOBEX, kept["key"]) as key:
        assert key.get("/api/rag/collections").status_code == 401
    with portal_server.client(ACME, kept["key"]) as key:
        assert key.get("/api/rag/collections").status_code == 200
    with psycopg.connect(portal_server.database_url) as conn:
        used = conn.execute(
            "SELECT last_used_at IS NOT NULL FROM acme.tenants_apikey WHERE id = %s",
            (kept["id"],),
        ).fetchone()
    assert used == (True,)


def test_who_may_make_and_revoke_which_keys(portal_server: PortalServer) -> None:
    mine = portal_server.new_source()
    with portal_server.api(ACME, "alice") as alice:
        alices = make_key(alice, mine)
    with portal_server.api(ACME, "bob") as bob:
        assert bob.delete(f"/api/auth/keys/{alices['id']}").status_code == 404
        for_alice = bob.post(
            "/api/auth/keys",
            json={"label": "x", "collections": [{"name": mine}], "user": "alice"},
        )
        assert for_alice.status_code == 403
        shared_write = bob.post(
            "/api/auth/keys",
            json={
                "label": "x",
                "collections": [{"name": mine, "shared": True}],
                "access": "read_write",
            },
        )
        assert shared_write.status_code == 403
        assert "shared collection" in shared_write.json()["error"]
    with portal_server.api(ACME, "admin") as admin:
        made = make_key(admin, mine, user="alice")
        assert made["user"] == "alice"
        assert admin.delete(f"/api/auth/keys/{alices['id']}").status_code == 200


def test_bad_key_requests_are_refused_and_write_nothing(
    portal_server: PortalServer, snapshot: Any
) -> None:
    mine = portal_server.new_source()
    before = snapshot()
    with portal_server.api(ACME, "alice") as alice:
        cases = {
            "not allowlisted": {"collections": [{"name": "nowhere_allowed"}]},
            "no collections": {"collections": []},
            "too long": {"collections": [{"name": mine}], "expires_in_days": 366},
            "bad access": {"collections": [{"name": mine}], "access": "admin"},
            "bad name": {"collections": [{"name": "../etc"}]},
        }
        answers = {
            case: alice.post("/api/auth/keys", json={"label": "x", **body})
            for case, body in cases.items()
        }
    assert answers["not allowlisted"].status_code == 403
    assert "nowhere_allowed" in answers["not allowlisted"].json()["error"]
    assert answers["too long"].status_code == 400
    assert "365" in answers["too long"].json()["error"]
    for case in ("no collections", "bad access", "bad name"):
        assert answers[case].status_code == 400, (case, answers[case].text)
    assert snapshot() == before
