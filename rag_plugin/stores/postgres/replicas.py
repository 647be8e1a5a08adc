"""Reads on streaming standbys, with read-your-writes.

A :class:`ReplicaSet` keeps a connection pool per standby of one primary and a thread that
checks them every ``check_every_s``: a standby that is down, promoted (no longer replaying the
primary's WAL) or lagging more than ``max_lag_s`` behind leaves the rotation, and comes back
once a check finds it healthy. A :class:`~rag_plugin.stores.postgres.store.PostgresStore`
given one reads (searches, listings, document reads) on a standby and writes on the primary.

Read-your-writes: each context carries a *read-after* position in the primary's WAL
(:mod:`rag_plugin.stores.consistency`). A store's write raises it to the primary's WAL
position once the write has committed; a read goes to a standby only once that standby has
replayed up to it (``pg_last_wal_replay_lsn()``), waiting up to ``wait_s`` for one to get
there, and otherwise reads on the primary, as do reads under
:func:`~rag_plugin.stores.consistency.reads_on_primary`.

A read that fails on a standby because the standby went away, or because replaying the WAL
cancelled it (a recovery conflict), runs again on another healthy standby or on the primary:
losing a standby costs time, never a failed read.

Lag is measured against the primary: each check samples the primary's WAL position, and a
standby's lag is how long ago the oldest sample it has not replayed yet was taken (zero when
it has replayed the newest), so an idle primary shows no lag and a standby that applies WAL
late (``recovery_min_apply_delay``) shows its delay.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.stores.consistency import gave_up_waiting, waited_in_vain

__all__ = [
    "ReplicaSet",
    "ReplicaStatus",
    "format_lsn",
    "parse_lsn",
]

logger = logging.getLogger(__name__)

UP, DOWN, LAGGING, PROMOTED, UNCHECKED = "up", "down", "lagging", "promoted", "unchecked"


def parse_lsn(text: str) -> int:
    """The integer of a ``pg_lsn`` in PostgreSQL's text form (``16/B374D848``)."""
    try:
        high, low = text.split("/")
        return (int(high, 16) << 32) | int(low, 16)
    except (AttributeError, ValueError) as exc:
        raise InvalidInputError(
            f"{text!r} is not a WAL position; write it as PostgreSQL does, e.g. '16/B374D848'."
        ) from exc


def format_lsn(value: int) -> str:
    """PostgreSQL's text form of a WAL position (the inverse of :func:`parse_lsn`)."""
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


@dataclass(frozen=True, slots=True)
class ReplicaStatus:
    """What the last check found of one standby."""

    name: str
    state: str
    """``up`` (in rotation), ``lagging``, ``down``, ``promoted`` or ``unchecked``."""
    lag_s: float | None
    """Seconds behind the primary (None: not known, e.g. down)."""
    replay_lsn: str | None
    error: str


class _Replica:
    """One standby: its pool and what is known of it (guarded by the set's lock)."""

    def __init__(self, name: str, conninfo: str, pool: ConnectionPool[Any]) -> None:
        self.name = name
        self.conninfo = conninfo
        self.pool = pool
        self.state = UNCHECKED
        self.replay_lsn = 0
        self.lag_s: float | None = None
        self.error = ""

    def status(self) -> ReplicaStatus:
        lsn = format_lsn(self.replay_lsn) if self.replay_lsn else None
        return ReplicaStatus(self.name, self.state, self.lag_s, lsn, self.error)


def _replica_name(conninfo: str) -> str:
    """host:port/dbname of a DSN, without its credentials (for logs and health)."""
    parts = conninfo_to_dict(conninfo)
    return f"{parts.get('host') or 'localhost'}:{parts.get('port') or 5432}/{parts.get('dbname')}"


class ReplicaSet:
    """The standbys of one primary, checked in the background; see the module's docstring.

    ``primary``: a DSN or the pool the stores write through (the checks read its WAL
    position); ``replicas``: one DSN per standby. ``max_lag_s``: a standby further behind
    leaves the rotation. ``wait_s``: how long a read waits for a standby to replay the
    context's writes before it reads on the primary instead. ``pool_timeout_s``: how long a
    read waits for a standby's connection before it tries elsewhere.
    """

    def __init__(
        self,
        primary: str | ConnectionPool[Any],
        replicas: Sequence[str],
        *,
        max_lag_s: float = 10.0,
        wait_s: float = 0.2,
        check_every_s: float = 1.0,
        pool_max_size: int = 4,
        pool_timeout_s: float = 2.0,
    ) -> None:
        if isinstance(replicas, str) or not replicas:
            raise InvalidInputError("replicas must be a non-empty list of DSNs, one per standby.")
        for name, value in (("max_lag_s", max_lag_s), ("check_every_s", check_every_s)):
            if not value > 0:
                raise InvalidInputError(f"{name} must be a positive number of seconds, got {value}")
        if wait_s < 0:
            raise InvalidInputError(f"wait_s must be zero or positive, got {wait_s}")
        self.max_lag_s = float(max_lag_s)
        self.wait_s = float(wait_s)
        self.check_every_s = float(check_every_s)
        self._primary = primary
        self._lock = threading.Lock()
        self._turn = itertools.count()
        # (time, primary WAL position) of the recent checks, oldest first.
        self._samples: deque[tuple[float, int]] = deque()
        self._replicas = [
            _Replica(
                _replica_name(dsn),
                dsn,
                ConnectionPool(
                    dsn,
                    min_size=0,
                    max_size=pool_max_size,
                    kwargs={"autocommit": True},
                    timeout=pool_timeout_s,
                    reconnect_timeout=pool_timeout_s,
                    open=True,
                    name=f"rag_plugin:replica:{_replica_name(dsn)}",
                ),
            )
            for dsn in replicas
        ]
        self._stop = threading.Event()
        self.check()
        self._thread = threading.Thread(target=self._watch, name="rag-replicas", daemon=True)
        self._thread.start()

    # -- choosing ----------------------------------------------------------------------

    def candidates(self, lsn: int = 0) -> list[_Replica]:
        """The standbys in rotation, in the order to try them for a read that must see WAL
        position ``lsn``: those known to have replayed it first, then the least behind; in
        turns among equals, so reads spread over the standbys."""
        with self._lock:
            healthy = [r for r in self._replicas if r.state == UP]
            if not healthy:
                return []
            start = next(self._turn) % len(healthy)
            turn = healthy[start:] + healthy[:start]
            return sorted(turn, key=lambda r: (r.replay_lsn < lsn, r.lag_s or 0.0))

    def replayed(self, lsn: int) -> int | None:
        """The position (in the order the set was given) of a standby in rotation known to
        have replayed ``lsn`` (none is asked or waited for), in turns; None if none is."""
        for replica in self.candidates(lsn):
            if replica.replay_lsn >= lsn:
                return self._replicas.index(replica)
        return None

    def failed_at(self, position: int, exc: BaseException) -> None:
        """A read elsewhere (another client's connection) found the standby at ``position``
        gone: out of rotation until a check finds it healthy."""
        self.failed(self._replicas[position], exc, lost=True)

    def caught_up(
        self, replica: _Replica, conn: psycopg.Connection[Any], lsn: int, deadline: float
    ) -> bool:
        """Whether ``replica`` has replayed WAL up to ``lsn``, asking on ``conn`` (one of its
        connections) until it has or ``deadline`` (``time.monotonic()``) passes."""
        if lsn <= replica.replay_lsn:
            return True
        if lsn <= waited_in_vain():
            # This context has waited for ``lsn`` already (an earlier read of the same request)
            # and no standby got there: its other reads go to the primary without waiting.
            return False
        pause = 0.002
        while True:
            row = conn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()
            replayed = parse_lsn(row[0]) if row and row[0] else 0
            with self._lock:
                replica.replay_lsn = max(replica.replay_lsn, replayed)
            if replayed >= lsn:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                gave_up_waiting(lsn)
                return False
            time.sleep(min(pause, remaining))
            pause = min(2 * pause, 0.05)

    def failed(self, replica: _Replica, exc: BaseException, *, lost: bool) -> None:
        """A read on ``replica`` failed; ``lost``: because of the standby itself (its
        connection broke, or none could be had), which then leaves the rotation until a check
        finds it healthy. (A read cancelled by a recovery conflict leaves it in.)"""
        logger.warning("read on standby %s failed (%s): %s", replica.name, type(exc).__name__, exc)
        if lost:
            with self._lock:
                replica.state, replica.error = DOWN, str(exc).strip()[:200]
                replica.replay_lsn = 0  # see _check_one
            replica.pool.drain()

    # -- checking ----------------------------------------------------------------------

    def status(self) -> list[ReplicaStatus]:
        """Each standby's state, lag and replay position as the last check found them."""
        with self._lock:
            return [r.status() for r in self._replicas]

    def check(self) -> None:
        """Check every standby now (the background thread does, every ``check_every_s``)."""
        now = time.monotonic()
        primary = self._primary_position()
        with self._lock:
            if primary is not None:
                self._samples.append((now, primary))
            # Keep enough history to measure a lag just past the bound.
            while self._samples and self._samples[0][0] < now - self.max_lag_s - 2 * max(
                self.check_every_s, 1.0
            ):
                self._samples.popleft()
        for replica in self._replicas:
            self._check_one(replica, now)

    def _primary_position(self) -> int | None:
        try:
            with self._primary_connection() as conn:
                row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        except (psycopg.Error, PoolTimeout) as exc:
            logger.warning("replica check: primary unreachable: %s", exc)
            return None
        return parse_lsn(row[0]) if row else None

    @contextmanager
    def _primary_connection(self) -> Iterator[psycopg.Connection[Any]]:
        if isinstance(self._primary, ConnectionPool):
            with self._primary.connection(timeout=self.check_every_s * 2) as conn:
                yield conn
            return
        with psycopg.connect(self._primary, autocommit=True, connect_timeout=2) as conn:
            yield conn

    def _check_one(self, replica: _Replica, now: float) -> None:
        try:
            with replica.pool.connection(timeout=max(self.check_every_s, 1.0)) as conn:
                row = conn.execute(
                    "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text"
                ).fetchone()
        except (psycopg.Error, PoolTimeout) as exc:
            with self._lock:
                if replica.state != DOWN:
                    logger.warning("standby %s is down: %s", replica.name, exc)
                replica.state, replica.lag_s = DOWN, None
                replica.error = str(exc).strip()[:200] or type(exc).__name__
                # A standby restarted after a crash may serve reads from before what it had
                # replayed (it is consistent from its last restart point on): not known
                # until a check asks it again.
                replica.replay_lsn = 0
            with suppress(Exception):
                replica.pool.drain()
            return
        assert row is not None
        recovering, replayed = bool(row[0]), parse_lsn(row[1]) if row[1] else 0
        with self._lock:
            # What the standby says now, even if less than before (it restarted between two
            # checks): a read then asks it again rather than trust an older answer.
            replica.replay_lsn = replayed
            if not recovering:
                # A promoted standby follows a timeline of its own, not this primary's.
                state, lag, error = PROMOTED, None, "no longer a standby (promoted)"
            else:
                lag = self._lag(replayed, now)
                if lag is None:
                    state, error = LAGGING, "primary unreachable: lag unknown"
                elif lag > self.max_lag_s:
                    state, error = LAGGING, f"{lag:.1f} s behind (bound {self.max_lag_s:g} s)"
                else:
                    state, error = UP, ""
            if state != replica.state:
                logger.info("standby %s: %s → %s %s", replica.name, replica.state, state, error)
            replica.state, replica.lag_s, replica.error = state, lag, error

    def _lag(self, replayed: int, now: float) -> float | None:
        """Seconds since the oldest primary sample the standby has not replayed (0: none)."""
        if not self._samples:
            return None
        for taken, position in self._samples:
            if position > replayed:
                return max(0.0, now - taken)
        return 0.0

    def _watch(self) -> None:
        while not self._stop.wait(self.check_every_s):
            try:
                self.check()
            except Exception:  # the checks go on whatever one of them met
                logger.exception("replica check failed")

    def close(self) -> None:
        """Stop the checks and close the standbys' pools."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)
        for replica in self._replicas:
            replica.pool.close()
