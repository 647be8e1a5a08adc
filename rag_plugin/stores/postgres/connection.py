"""Connections to one schema: a pool we own, a pool we are lent, or one lent connection."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import psycopg
from psycopg import sql
from psycopg.abc import Params, QueryNoTemplate
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from rag_plugin.exceptions import InvalidInputError, RagError, StoreError
from rag_plugin.stores.consistency import on_primary, raise_read_after, read_after
from rag_plugin.stores.postgres import arrays
from rag_plugin.stores.postgres.replicas import parse_lsn

if TYPE_CHECKING:
    from rag_plugin.stores.postgres.replicas import ReplicaSet

__all__ = [
    "ConnectionSource",
    "Database",
    "Statement",
    "check_pooled_connection",
    "validate_schema_name",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

ConnectionSource: TypeAlias = "str | ConnectionPool[Any] | psycopg.Connection[Any]"
"""A DSN (the store opens and owns a pool), a ``ConnectionPool`` or one ``Connection``."""

_SET_PATH = "SELECT set_config('search_path', %s, true)"
_ASYNC_COMMIT = "SELECT set_config('synchronous_commit', 'off', true)"

# PostgreSQL's own identifier rule minus the ``pg_`` prefix it reserves (as django-tenants).
_SCHEMA_NAME = re.compile(r"(?!pg_)[A-Za-z_][A-Za-z0-9_]{0,62}")


def validate_schema_name(name: str) -> str:
    """Return ``name`` if it can name a schema, else raise :class:`InvalidInputError`."""
    if not isinstance(name, str) or _SCHEMA_NAME.fullmatch(name) is None:
        raise InvalidInputError(
            f"Schema name {name!r} is invalid; use 1-63 ASCII letters, digits or underscores, "
            "starting with a letter or underscore and not with 'pg_'."
        )
    return name


def check_pooled_connection(pool: ConnectionPool[Any], conn: psycopg.Connection[Any]) -> None:
    """A pool's ``check``: one empty round trip as ``conn`` leaves ``pool``; if it fails, every
    idle connection of the pool is replaced (drained) and the error raised, so that the pool
    hands out a new connection instead.

    A server that restarted has ended every connection the pool kept. psycopg_pool's own
    check would find them dead one at a time, waiting 1, 2, 4 s... between them, long enough
    for the request that waits to time out.
    """
    try:
        ConnectionPool.check_connection(conn)
    except psycopg.Error:
        pool.drain()
        raise


Statement: TypeAlias = "tuple[QueryNoTemplate, Params | None]"
"""A query and its parameters, for :meth:`Database.run`."""


def _end_failed_transaction(conn: psycopg.Connection[Any]) -> None:
    """Roll back what a failed pipeline left open (the server skips COMMIT after an error)."""
    if conn.closed or conn.info.transaction_status == TransactionStatus.IDLE:
        return
    # The error that got us here is the one to report; a broken connection, which this
    # rollback may also meet, is dropped by the pool.
    with suppress(psycopg.Error):
        conn.rollback()


class _ConnectionLost(Exception):
    """A pooled connection broke under a statement; another connection may do."""


def _rows(cursor: psycopg.Cursor[Any]) -> list[Any]:
    """A statement's rows; none for one that returns no result set (a write)."""
    return cursor.fetchall() if cursor.description is not None else []


class Database:
    """Hands out transactions whose ``search_path`` is ``<schema>, public``.

    The schema comes first so unqualified names resolve to the tenant's tables; ``public``
    follows because the ``vector`` type and operators live there. The store
    still qualifies its own tables, so a caller's search_path can never redirect them.

    After :meth:`use_replicas`, :meth:`read` and :meth:`read_run` read on a standby that has
    replayed the context's writes (see :mod:`~rag_plugin.stores.postgres.replicas`), and
    :meth:`writing` records each write's WAL position for them.
    """

    def __init__(
        self,
        source: ConnectionSource,
        schema: str,
        *,
        min_size: int = 1,
        max_size: int = 4,
    ) -> None:
        self.schema = validate_schema_name(schema)
        self.replicas: ReplicaSet | None = None
        self._search_path = sql.SQL("SET {scope} search_path TO {schema}, public")
        self._pool: ConnectionPool[Any] | None = None
        self._connection: psycopg.Connection[Any] | None = None
        self._lock = threading.RLock()
        self._owns_pool = False
        self._path: str | None = None
        if isinstance(source, str):
            self._pool = ConnectionPool(
                source,
                min_size=min_size,
                max_size=max_size,
                kwargs={"autocommit": True},
                configure=self._configure,
                check=self._check,
                open=True,
                name=f"rag_plugin:{schema}",
            )
            self._owns_pool = True
        elif isinstance(source, ConnectionPool):
            self._pool = source
        elif isinstance(source, psycopg.Connection):
            self._connection = source
        else:
            raise InvalidInputError(
                f"Expected a DSN string, a psycopg_pool.ConnectionPool or a psycopg.Connection, "
                f"got {type(source).__name__}."
            )

    @property
    def pool(self) -> ConnectionPool[Any] | None:
        """The pool the transactions come from (None for one lent connection)."""
        return self._pool

    @property
    def source(self) -> ConnectionPool[Any] | psycopg.Connection[Any]:
        """Where the transactions come from: the pool, or the one lent connection (to lend
        them on to another schema's store)."""
        found = self._pool if self._pool is not None else self._connection
        if found is None:  # pragma: no cover - the constructor sets one of them
            raise StoreError("The database has neither a pool nor a connection.")
        return found

    def use_replicas(self, replicas: ReplicaSet) -> None:
        """Read on ``replicas`` from now on (see :meth:`read`)."""
        if self._pool is None:
            raise InvalidInputError(
                "A store on one lent connection reads inside its lender's transactions, which "
                "no standby can see: give it a DSN or a pool to read on replicas."
            )
        self.replicas = replicas

    @property
    def concurrent(self) -> bool:
        """Whether two transactions can run at once (a pool of two or more connections)."""
        return self._pool is not None and self._pool.max_size >= 2

    def table(self, name: str) -> sql.Identifier:
        """The schema-qualified identifier of one of the store's tables."""
        return sql.Identifier(self.schema, name)

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        # A connection the server dropped while it sat idle (a restart) is replaced, not
        # handed out.
        if self._pool is not None:
            check_pooled_connection(self._pool, conn)

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        # A pool we own serves only this schema, so the path is set once per connection.
        conn.execute(self._statement("SESSION"))

    def _path_value(self, conn: psycopg.Connection[Any]) -> str:
        if self._path is None:
            self._path = sql.Identifier(self.schema).as_string(conn) + ", public"
        return self._path

    def _statement(self, scope: str) -> sql.Composed:
        return self._search_path.format(scope=sql.SQL(scope), schema=sql.Identifier(self.schema))

    @contextmanager
    def transaction(self, *, pipeline: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """One transaction (a savepoint inside a caller's transaction); errors → StoreError.

        ``pipeline=True`` sends the block's statements in psycopg's pipeline mode, BEGIN
        included: the block waits only where it reads a result, once when it ends (for every
        statement to run) and once for the COMMIT. A database error then surfaces at that read
        or at the end, and COPY is unavailable. (A lent connection that is inside a
        transaction or not in autocommit mode gets the plain transaction.)
        """
        try:
            with self._connect() as conn:
                if pipeline and self._can_pipeline(conn):
                    with self._pipelined(conn):
                        yield conn
                    return
                with self._plain(conn):
                    yield conn
        except RagError:
            raise
        except psycopg.Error as exc:
            raise StoreError(f"database error in schema {self.schema!r}: {exc}") from exc

    @contextmanager
    def writing(self, *, pipeline: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """:meth:`transaction` for a write: with replicas, the context's later reads see it
        (its WAL position, read once it has committed, raises the context's read-after)."""
        with self.transaction(pipeline=pipeline) as conn:
            yield conn
        if self.replicas is not None:
            ((row,),) = self.run(("SELECT pg_current_wal_lsn()::text", None))
            raise_read_after(parse_lsn(row[0]))

    def read(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work(conn)`` in one read transaction: on a standby in rotation that has replayed
        the context's read-after position, else (or under ``reads_on_primary``) on the
        primary; errors → StoreError.

        A standby that fails under it (gone, or a recovery conflict cancelled the read)
        hands ``work`` to the next standby, and the last to the primary: ``work`` must only
        read.
        """
        replicas = self.replicas
        if replicas is not None and not on_primary():
            lsn = read_after()
            deadline = time.monotonic() + replicas.wait_s
            for replica in replicas.candidates(lsn):
                conn: psycopg.Connection[Any] | None = None
                try:
                    with replica.pool.connection() as conn:
                        if not replicas.caught_up(replica, conn, lsn, deadline):
                            continue
                        with conn.transaction():
                            conn.execute(_SET_PATH, (self._path_value(conn),))
                            return work(conn)
                except RagError:
                    raise
                except (psycopg.Error, PoolTimeout) as exc:
                    lost = isinstance(exc, PoolTimeout) or conn is None or conn.broken
                    replicas.failed(replica, exc, lost=lost)
        with self.transaction() as conn:
            return work(conn)

    def read_run(self, *statements: Statement) -> list[list[Any]]:
        """:meth:`run` for reads, on a standby when there are replicas (see :meth:`read`)."""
        if self.replicas is None:
            return self.run(*statements)

        def work(conn: psycopg.Connection[Any]) -> list[list[Any]]:
            with conn.pipeline():
                cursors = [conn.execute(query, params) for query, params in statements]
            return [_rows(cursor) for cursor in cursors]

        return self.read(work)

    def run(self, *statements: Statement, durable: bool = True) -> list[list[Any]]:
        """Run statements in one round trip as one implicit transaction; return their rows.

        For reads, which see what a BEGIN … COMMIT around them would (READ COMMITTED), and
        for single-statement writes that are safe to repeat (an upsert): when the connection
        is lost under them (the server restarted, say), they run once more on a new connection
        of the pool. All statements are sent before the first runs, so use
        :meth:`transaction` for a write of several statements that must not commit if the
        client dies half-way. ``durable=False`` lets the commit return before its WAL is
        flushed (``synchronous_commit`` off: a server crash may lose it, never half of it),
        for data that is cheap to lose, such as a cache; a lender's transaction keeps its
        own setting.
        """
        try:
            try:
                return self._run_once(statements, durable, again=True)
            except _ConnectionLost as lost:
                logger.warning("connection lost in schema %r, running again: %s", self.schema, lost)
                if self._pool is not None:
                    # A server that dropped one connection (a restart) dropped every one the
                    # pool keeps: replace them all, so that the second run gets a new one.
                    self._pool.drain()
            return self._run_once(statements, durable, again=False)
        except RagError:
            raise
        except psycopg.Error as exc:
            raise StoreError(f"database error in schema {self.schema!r}: {exc}") from exc

    def _run_once(
        self, statements: tuple[Statement, ...], durable: bool, *, again: bool
    ) -> list[list[Any]]:
        """:meth:`run` on one connection; ``again``: a lost pooled connection raises
        :class:`_ConnectionLost`, for the caller to run the statements again."""
        with self._connect() as conn:
            try:
                if not self._can_pipeline(conn):
                    with self._plain(conn):
                        return [_rows(conn.execute(query, params)) for query, params in statements]
                try:
                    with conn.pipeline():
                        # Both settings are local to the implicit transaction, which ends at
                        # the sync.
                        if not self._owns_pool:
                            conn.execute(_SET_PATH, (self._path_value(conn),))
                        if not durable:
                            conn.execute(_ASYNC_COMMIT)
                        cursors = [conn.execute(query, params) for query, params in statements]
                    # The pipeline's closing sync has brought every result in.
                    return [_rows(cursor) for cursor in cursors]
                finally:
                    _end_failed_transaction(conn)
            except psycopg.OperationalError as exc:
                # Only a pool has another connection to give; a lent one is all there is.
                if again and self._pool is not None and conn.broken:
                    raise _ConnectionLost(str(exc)) from exc
                raise

    def _can_pipeline(self, conn: psycopg.Connection[Any]) -> bool:
        # BEGIN/COMMIT are sent by hand, which is only right on an autocommit connection
        # between transactions (a pool's, or a lent one that is idle).
        return conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE

    @contextmanager
    def _pipelined(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        # psycopg's own conn.transaction() syncs at BEGIN and around COMMIT (three extra
        # round trips in pipeline mode); sent by hand, BEGIN rides with the first statements.
        try:
            with conn.pipeline():
                conn.execute("BEGIN", prepare=False)
                if not self._owns_pool:
                    # set_config's is_local: the path ends with this transaction.
                    conn.execute(_SET_PATH, (self._path_value(conn),))
                try:
                    yield
                except BaseException:
                    conn.execute("ROLLBACK", prepare=False)
                    raise
            # The pipeline's closing sync waited for every statement to run. Only now does
            # COMMIT go out, so a client that dies before (SIGKILL while the server waits
            # on a lock, say) leaves nothing behind, as without a pipeline.
            conn.execute("COMMIT", prepare=False)
        finally:
            _end_failed_transaction(conn)

    @contextmanager
    def _plain(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        outermost = conn.info.transaction_status == TransactionStatus.IDLE
        with conn.transaction():
            if self._owns_pool:
                yield
                return
            if outermost:
                # A lent connection between transactions: the path set here ends with the
                # transaction (set_config's is_local), so there is nothing to restore.
                conn.execute(_SET_PATH, (self._path_value(conn),))
                yield
                return
            # Inside the lender's own transaction (where is_local would outlive ours): set
            # the path, then put the lender's back. On an error the savepoint's rollback
            # restores it.
            row = conn.execute(
                "SELECT current_setting('search_path'), set_config('search_path', %s, true)",
                (self._path_value(conn),),
            ).fetchone()
            yield
            if row is not None:
                conn.execute(_SET_PATH, (row[0],))

    @contextmanager
    def _connect(self) -> Iterator[psycopg.Connection[Any]]:
        if self._pool is not None:
            with self._pool.connection() as conn:
                arrays.adapt(conn)
                yield conn
            return
        if self._connection is None:
            raise StoreError(f"the store for schema {self.schema!r} has been closed")
        # One lent connection cannot run two transactions at once: callers take turns.
        with self._lock:
            arrays.adapt(self._connection)
            yield self._connection

    def close(self) -> None:
        """Close the pool if this object opened it; lent pools and connections stay open."""
        if self._owns_pool and self._pool is not None:
            self._pool.close()
        self._pool = None
        self._connection = None
