"""A writer killed with SIGKILL mid-ingest leaves each document whole or absent."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from rag_plugin.stores.postgres import PostgresStore

from .. import pg_workers
from ..pg_helpers import statistics_mismatches

CHUNKS = 40


@pytest.fixture
def store(dsn: str, pg_schema: str) -> Iterator[PostgresStore]:
    store = PostgresStore(dsn, schema=pg_schema)
    store.create_collection("shared", dimensions=pg_workers.DIMENSIONS, embedding_model="fake-8")
    yield store
    store.close()


def wait_until(condition: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the child process")
        time.sleep(0.05)


def backend_state(dsn: str, application: str) -> list[tuple[str | None, str | None]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT state, wait_event_type FROM pg_stat_activity WHERE application_name = %s",
            (application,),
        ).fetchall()


def test_killed_in_the_middle_of_a_document_leaves_nothing(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    application = f"crash-{pg_schema}"
    child_dsn = make_conninfo(dsn, application_name=application)
    context = multiprocessing.get_context("spawn")
    with psycopg.connect(dsn) as blocker:
        # Hold the vocabulary table so the child's transaction stops after it has written the
        # document row, chunks, vectors and postings, and before it can commit.
        blocker.execute(
            sql.SQL("LOCK TABLE {} IN SHARE MODE").format(
                sql.Identifier(pg_schema, "rag_vocabulary")
            )
        )
        child = context.Process(target=pg_workers.ingest, args=(child_dsn, pg_schema, 0, 1, CHUNKS))
        child.start()
        wait_until(lambda: ("active", "Lock") in backend_state(dsn, application))
        with psycopg.connect(dsn) as peek:  # the child really is mid-document
            written = peek.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                " WHERE a.application_name = %s AND l.mode = 'RowExclusiveLock'"
                " AND l.relation = %s::regclass",
                (application, f"{pg_schema}.rag_term_blocks"),
            ).fetchone()
        assert written == (1,)
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(timeout=30)
        blocker.rollback()
    assert child.exitcode == -signal.SIGKILL
    wait_until(lambda: backend_state(dsn, application) == [])
    info = store.get_collection("shared")
    assert (info.document_count, info.chunk_count) == (0, 0)
    assert store.list_documents(info) == []
    assert store.bm25(info, "alpha", 10) == []
    assert statistics_mismatches(dsn, pg_schema, "shared") == []


@pytest.mark.parametrize("delay", [0.3, 0.7, 1.3])
def test_killed_at_any_moment_every_document_is_whole(
    store: PostgresStore, dsn: str, pg_schema: str, delay: float
) -> None:
    context = multiprocessing.get_context("spawn")
    child = context.Process(target=pg_workers.ingest_forever, args=(dsn, pg_schema, CHUNKS))
    child.start()
    info = store.get_collection("shared")
    wait_until(lambda: store.get_collection("shared").document_count > 0)
    time.sleep(delay)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join(timeout=30)
    time.sleep(0.5)  # let the server notice the dead client and roll back
    info = store.get_collection("shared")
    documents = store.list_documents(info, limit=100_000)
    assert info.document_count == len(documents) > 0
    for document in documents:
        number = int(document.source.removeprefix("doc"))
        contents = [c.content for c in store.document_chunks(info, document.id)]
        assert contents == pg_workers.document_texts(0, number, CHUNKS)
        assert document.chunk_count == CHUNKS
    assert info.chunk_count == CHUNKS * len(documents)
    assert statistics_mismatches(dsn, pg_schema, "shared") == []
