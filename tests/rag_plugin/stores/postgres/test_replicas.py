"""PostgresStore on real streaming standbys: reads on replicas, read-your-writes, faults.

One primary and two standbys from the embedded PostgreSQL's own binaries (``pg_basebackup
-R``), the second applying WAL two seconds late (``recovery_min_apply_delay``). The tests
run in order on the module's cluster; the last ones kill and promote a standby.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import closing

import psycopg
import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.stores.base import CollectionInfo, DocumentInput
from rag_plugin.stores.consistency import read_after, read_context, reads_after, reads_on_primary
from rag_plugin.stores.postgres import PostgresStore, ReplicaSet
from rag_plugin.stores.postgres.replicas import format_lsn, parse_lsn
from rag_plugin.testing import FakeEmbedder
from tests.portal.private_postgres import PrivatePostgres, Standby, streaming_cluster

from ..store_contract import chunk_inputs

DELAY_S = 2.0
EMBEDDER = FakeEmbedder(dimensions=8)

Cluster = tuple[PrivatePostgres, list[Standby]]


@pytest.fixture(autouse=True)
def _fresh_read_position() -> Iterator[None]:
    """Each test starts with no write to wait for (the tests share one thread's context)."""
    with read_context():
        yield


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with streaming_cluster([0, DELAY_S]) as servers:
        yield servers


@pytest.fixture(scope="module")
def collection(cluster: Cluster) -> CollectionInfo:
    primary, _ = cluster
    with closing(PostgresStore(primary.url(), schema="rag")) as store:
        return store.create_collection("docs", dimensions=8, embedding_model="fake-8")


def write(store: PostgresStore, collection: CollectionInfo, source: str, text: str) -> None:
    _, chunks = chunk_inputs([text], EMBEDDER.embed([text]))
    store.upsert_document(collection, DocumentInput(source=source), chunks)


def found(store: PostgresStore, collection: CollectionInfo, word: str) -> bool:
    return bool(store.bm25(collection, word, 5))


def read_transactions(standby: Standby) -> int:
    """Transactions the standby has run for its clients (its own statistics)."""
    with psycopg.connect(standby.url(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def replayed_everything(primary: PrivatePostgres, standby: Standby) -> None:
    """Wait until ``standby`` has replayed all the primary has written so far."""
    with psycopg.connect(primary.url(), autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    assert row is not None
    target = parse_lsn(row[0])

    def replayed() -> bool:
        with psycopg.connect(standby.url(), autocommit=True) as conn:
            row = conn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()
        return row is not None and parse_lsn(row[0]) >= target

    wait_for(replayed)


def wait_for(condition: object, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_lsn_text_round_trips_and_bad_text_is_refused() -> None:
    assert parse_lsn("16/B374D848") == (0x16 << 32) | 0xB374D848
    assert format_lsn(parse_lsn("16/B374D848")) == "16/B374D848"
    with pytest.raises(InvalidInputError, match="not a WAL position"):
        parse_lsn("16-B374")


def test_replica_set_refuses_bad_settings(cluster: Cluster) -> None:
    primary, _ = cluster
    with pytest.raises(InvalidInputError, match="non-empty list"):
        ReplicaSet(primary.url(), [])
    with pytest.raises(InvalidInputError, match="max_lag_s"):
        ReplicaSet(primary.url(), ["dbname=x"], max_lag_s=0)


def test_reads_go_to_the_standbys_and_see_the_contexts_own_writes(
    cluster: Cluster, collection: CollectionInfo
) -> None:
    primary, standbys = cluster
    before = [read_transactions(s) for s in standbys]
    with closing(
        PostgresStore(primary.url(), schema="rag", replicas=[s.url("postgres") for s in standbys])
    ) as store:
        for round_ in range(20):
            write(store, collection, f"own/{round_}", f"alpha ownword{round_} beta")
            assert found(store, collection, f"ownword{round_}"), round_
        assert read_after() > 0  # the store's writes raised the position of their context
    # Without waiting for the position no read would have found its word on the delayed
    # standby; the undelayed one served them (each read counted there), so reads used it.
    after = [read_transactions(s) for s in standbys]
    assert after[0] - before[0] >= 20


def test_a_write_is_invisible_on_the_delayed_standby_to_a_context_without_its_position(
    cluster: Cluster, collection: CollectionInfo
) -> None:
    primary, standbys = cluster
    replayed_everything(primary, standbys[1])  # the collection is there
    # Only the delayed standby: what makes a read see the write is the position it carries.
    replicas = ReplicaSet(primary.url(), [standbys[1].url()], wait_s=0.1)
    with closing(PostgresStore(primary.url(), schema="rag", replicas=replicas)) as store:
        seen: list[bool] = []
        write(store, collection, "late/1", "gamma lateword delta")
        position = read_after()
        assert position > 0
        other = threading.Thread(target=lambda: seen.append(found(store, collection, "lateword")))
        other.start()
        other.join()
        assert seen == [False]  # a fresh context (another thread) reads the stale standby
        assert found(store, collection, "lateword")  # this context falls back to the primary
        # Once the standby has applied the write (DELAY_S later), any context reads it there.
        wait_for(lambda: found_in_new_context(store, collection, "lateword"), timeout=10)
        with reads_on_primary():
            assert found(store, collection, "lateword")
    replicas.close()


def found_in_new_context(store: PostgresStore, collection: CollectionInfo, word: str) -> bool:
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(found(store, collection, word)))
    thread.start()
    thread.join()
    return result == [True]


def test_a_position_carried_into_another_context_makes_its_reads_wait(
    cluster: Cluster, collection: CollectionInfo
) -> None:
    primary, standbys = cluster
    replayed_everything(primary, standbys[1])
    replicas = ReplicaSet(primary.url(), [standbys[1].url()], wait_s=DELAY_S * 3)
    with closing(PostgresStore(primary.url(), schema="rag", replicas=replicas)) as store:
        write(store, collection, "carried/1", "epsilon carriedword")
        position = read_after()
        result: list[tuple[bool, float]] = []

        def read() -> None:
            with reads_after(position):
                started = time.monotonic()
                hit = found(store, collection, "carriedword")
                result.append((hit, time.monotonic() - started))

        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
        ((hit, waited),) = result
        assert hit
        # It waited for the standby to apply the write (it did not read the primary at once).
        assert waited > DELAY_S / 2
    replicas.close()


def test_lag_is_measured_and_a_standby_past_the_bound_leaves_the_rotation(
    cluster: Cluster, collection: CollectionInfo
) -> None:
    primary, standbys = cluster
    replicas = ReplicaSet(
        primary.url(), [s.url() for s in standbys], max_lag_s=1.0, check_every_s=0.25
    )
    with closing(PostgresStore(primary.url(), schema="rag", replicas=replicas)) as store:
        deadline = time.monotonic() + DELAY_S * 2
        number = 0
        while time.monotonic() < deadline:  # a steady ingest
            write(store, collection, f"steady/{number}", f"steady word{number}")
            number += 1
            time.sleep(0.05)
        prompt, delayed = replicas.status()
        assert prompt.state == "up"
        assert prompt.lag_s is not None
        assert prompt.lag_s < 1.0
        assert delayed.state == "lagging", delayed
        assert delayed.lag_s is not None
        assert 1.0 < delayed.lag_s < DELAY_S * 2
        assert [r.name for r in replicas.candidates()] == [prompt.name]
        # Idle again: the delayed standby catches up and comes back.
        wait_for(lambda: replicas.status()[1].state == "up", timeout=DELAY_S * 4)
    replicas.close()


def test_a_killed_standby_fails_no_read_and_returns_when_restarted(
    cluster: Cluster, collection: CollectionInfo
) -> None:
    primary, standbys = cluster
    replicas = ReplicaSet(primary.url(), [standbys[0].url()], check_every_s=0.25)
    errors: list[BaseException] = []
    reads = [0]
    stop = threading.Event()
    with closing(
        PostgresStore(primary.url(), schema="rag", replicas=replicas, pool_max_size=8)
    ) as store:
        write(store, collection, "kill/1", "zeta killword")
        written = read_after()

        def load() -> None:
            # Each reader carries the write's position: a standby restarted after SIGKILL
            # serves reads from its last restart point, possibly before the write, until it
            # has replayed it again; it must not be trusted with the position it had before.
            with reads_after(written):
                while not stop.is_set():
                    try:
                        assert found(store, collection, "killword")
                        reads[0] += 1
                    except BaseException as exc:  # every failure counts
                        errors.append(exc)

        # The standby has the write: the readers' reads go there, none waits.
        threads = [threading.Thread(target=load) for _ in range(4)]
        for thread in threads:
            thread.start()
        wait_for(lambda: read_transactions(standbys[0]) > 20)
        standbys[0].kill()
        wait_for(lambda: replicas.status()[0].state == "down", timeout=5)
        during = reads[0]
        wait_for(lambda: reads[0] > during + 10)  # the primary serves meanwhile
        standbys[0].start()
        wait_for(lambda: replicas.status()[0].state == "up", timeout=15)
        served = read_transactions(standbys[0])
        wait_for(lambda: read_transactions(standbys[0]) > served + 10)  # back in rotation
        stop.set()
        for thread in threads:
            thread.join()
    replicas.close()
    assert errors == []


def test_a_promoted_standby_leaves_the_rotation(cluster: Cluster) -> None:
    primary, standbys = cluster
    replicas = ReplicaSet(primary.url(), [s.url() for s in standbys], check_every_s=0.25)
    standbys[0].pg_ctl("-w", "promote")
    wait_for(lambda: replicas.status()[0].state == "promoted")
    assert [r.name for r in replicas.candidates()] == [replicas.status()[1].name]
    replicas.close()
