"""Quotas (SPEC O7) on the live server: a user's and the tenant's limits on documents, chunks,
text, uploaded files and queued jobs, each refused with QUOTA_EXCEEDED naming the limit and
the usage, nothing written, and racing clients unable to pass a limit together."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest

from tests.conftest import PortalServer

ACME = "acme.localhost"


class Limits:
    """Sets limits in the live database for one test and removes them after it."""

    def __init__(self, server: PortalServer) -> None:
        self.url = server.database_url

    def run(self, statement: str, *args: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            cursor = conn.execute(statement, args)
            return cursor.fetchall() if cursor.description else []

    def user_id(self, username: str) -> int:
        ((user_id,),) = self.run("SELECT id FROM acme.auth_user WHERE username = %s", username)
        return int(user_id)

    def for_user(self, username: str, **limits: int) -> None:
        columns = ", ".join(f"max_{name}" for name in limits)
        values = ", ".join(["%s"] * len(limits))
        self.run(
            f"INSERT INTO acme.tenants_userquota (user_id, updated_at, {columns})"  # noqa: S608
            f" VALUES (%s, now(), {values})",
            self.user_id(username),
            *limits.values(),
        )

    def for_tenant(self, **limits: int) -> None:
        for name, value in limits.items():
            self.run(
                f"UPDATE public.tenants_tenant SET max_{name} = %s"  # noqa: S608
                " WHERE schema_name = 'acme'",
                value,
            )

    def clear(self) -> None:
        self.run("DELETE FROM acme.tenants_userquota")
        self.run(
            "UPDATE public.tenants_tenant SET max_documents = NULL, max_chunks = NULL,"
            " max_text_bytes = NULL, max_file_bytes = NULL, max_queued_jobs = NULL"
        )

    def documents_of(self, username: str) -> int:
        ((count,),) = self.run(
            "SELECT coalesce(sum(document_count), 0) FROM acme.rag_collections WHERE owner = %s",
            f"user:{self.user_id(username)}",
        )
        return int(count)

    def tenant_chunks(self) -> int:
        ((count,),) = self.run("SELECT coalesce(sum(chunk_count), 0) FROM acme.rag_collections")
        return int(count)

    def active_jobs_of(self, username: str) -> int:
        ((count,),) = self.run(
            "SELECT count(*) FROM acme.tenants_ingestjob"
            " WHERE user_id = %s AND state IN ('queued', 'running')",
            self.user_id(username),
        )
        return int(count)

    def file_bytes_of(self, username: str) -> int:
        ((total,),) = self.run(
            "SELECT coalesce(sum(size), 0) FROM acme.tenants_storedfile"
            " WHERE user_id = %s AND NOT shared",
            self.user_id(username),
        )
        return int(total)


def stored(snapshot: Callable[[], dict[str, int]]) -> dict[str, int]:
    """Row counts of the tenants' tables but the embedding cache, which a refused write may
    have filled: the model ran before the store refused, and the vectors stay reusable."""
    return {k: v for k, v in snapshot().items() if not k.endswith(".rag_embedding_cache")}


@pytest.fixture
def limits(portal_server: PortalServer) -> Iterator[Limits]:
    quota = Limits(portal_server)
    quota.clear()
    yield quota
    quota.clear()


def ingest(api: httpx.Client, collection: str, source: str, **extra: Any) -> httpx.Response:
    text = f"Quota test document {source} about limits and usage. " * 8
    return api.post(
        "/api/rag/ingest",
        json={"collection": collection, "content": text, "source": source, **extra},
    )


def test_a_user_past_the_document_limit_gets_413_naming_it_and_nothing_is_written(
    portal_server: PortalServer,
    limits: Limits,
    snapshot: Callable[[], dict[str, int]],
) -> None:
    source = portal_server.new_source()
    limits.for_user("alice", documents=limits.documents_of("alice") + 1)
    with portal_server.api(ACME, "alice") as alice:
        assert ingest(alice, source, "first.md").status_code == 200
        # Replacing a document adds none: still allowed at the limit.
        assert ingest(alice, source, "first.md", title="again").status_code == 200
        before = stored(snapshot)
        refused = ingest(alice, source, "second.md")
        batch = alice.post(
            "/api/rag/ingest/batch",
            json={
                "collection": source,
                "documents": [{"content": "Batch text about quotas. " * 8, "source": "b.md"}],
            },
        )
    assert refused.status_code == 413, refused.text
    body = refused.json()
    assert body["code"] == "QUOTA_EXCEEDED"
    assert "user 'alice' may store at most" in body["error"]
    assert "documents" in body["error"]
    assert batch.status_code == 413
    assert stored(snapshot) == before
    with portal_server.api(ACME, "bob") as bob:  # bob has no limit of his own
        assert ingest(bob, source, "bobs.md").status_code == 200


def test_two_clients_racing_past_a_limit_land_at_most_the_limit(
    portal_server: PortalServer, limits: Limits
) -> None:
    sources = [portal_server.new_source() for _ in range(4)]
    limits.for_user("alice", documents=limits.documents_of("alice") + 2)
    token = portal_server.token(ACME, "alice")
    statuses: list[int] = []
    start = threading.Barrier(len(sources))

    def write(collection: str) -> None:
        with portal_server.client(ACME, token) as client:
            start.wait()
            statuses.append(ingest(client, collection, "race.md").status_code)

    threads = [threading.Thread(target=write, args=(s,)) for s in sources]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(statuses) == [200, 200, 413, 413]
    landed = limits.run("SELECT count(*) FROM acme.rag_collections WHERE name = ANY(%s)", sources)
    assert landed == [(2,)]


def test_the_tenant_limit_holds_for_every_user(portal_server: PortalServer, limits: Limits) -> None:
    source = portal_server.new_source()
    limits.for_tenant(chunks=limits.tenant_chunks())
    with portal_server.api(ACME, "bob") as bob:
        refused = ingest(bob, source, "over.md")
    assert refused.status_code == 413
    assert "the tenant may store at most" in refused.json()["error"]
    with portal_server.api(ACME, "admin") as admin:
        shared = ingest(admin, source, "shared.md", shared=True)
    assert shared.status_code == 413  # shared collections are the tenant's too


def test_a_full_queue_gets_429_and_an_upload_past_the_file_limit_413(
    portal_server: PortalServer,
    limits: Limits,
    snapshot: Callable[[], dict[str, int]],
) -> None:
    source = portal_server.new_source()
    limits.for_user(
        "alice",
        queued_jobs=limits.active_jobs_of("alice") + 1,
        file_bytes=limits.file_bytes_of("alice") + 100,
    )
    with portal_server.api(ACME, "alice") as alice:
        queued = ingest(alice, source, "job1.md", **{"async": True})
        assert queued.status_code == 202, queued.text
        before = stored(snapshot)
        full = ingest(alice, source, "job2.md", **{"async": True})
        too_big = alice.post(
            "/api/rag/files",
            data={"collection": source},
            files=[("file", ("notes.txt", b"Plain text notes about quotas. " * 10))],
        )
    assert full.status_code == 429, full.text
    assert full.json()["code"] == "QUOTA_EXCEEDED"
    assert "at most" in full.json()["error"]
    assert "queued or running" in full.json()["error"]
    assert too_big.status_code == 413, too_big.text
    assert "bytes of uploaded files" in too_big.json()["error"]
    assert stored(snapshot) == before
