"""An owner's usage, summed from its collection rows, and a write's limits checked against it
inside the write's transaction."""

from __future__ import annotations

from typing import Any

import psycopg

from rag_plugin.stores.postgres.rows import Tables
from rag_plugin.stores.usage import Usage, UsageLimits, WriteLimits, check_usage

__all__ = ["check_limits", "owner_usage"]


# The usage of one owner's collections (%s: the owner, NULL for the unowned) and of all.
_OWNER_USAGE = (
    "SELECT coalesce(sum(document_count), 0), coalesce(sum(chunk_count), 0),"
    " coalesce(sum(text_bytes), 0) FROM {collections} WHERE owner IS NOT DISTINCT FROM %s"
)
_STORE_USAGE = (
    "SELECT coalesce(sum(document_count), 0), coalesce(sum(chunk_count), 0),"
    " coalesce(sum(text_bytes), 0) FROM {collections}"
)


def owner_usage(
    conn: psycopg.Connection[Any], tables: Tables, owner: str | None, *, everyone: bool
) -> Usage:
    """What the owner's collections hold, or with ``everyone`` all of the schema's."""
    cursor = (
        conn.execute(tables(_STORE_USAGE))
        if everyone
        else conn.execute(tables(_OWNER_USAGE), (owner,))
    )
    row = cursor.fetchone()
    assert row is not None  # an aggregate always returns its row
    return Usage(int(row[0]), int(row[1]), int(row[2]))


def check_limits(
    conn: psycopg.Connection[Any],
    tables: Tables,
    owner: str | None,
    limits: WriteLimits,
    added: Usage,
) -> None:
    """Check a write's limits after its changes, inside its transaction.

    A transaction-scoped advisory lock per owner (then one for the store) makes limited
    writers take turns from here to their commit, which follows at once; each reads the
    usage after taking it, so it sees every write that passed before it (READ COMMITTED: a
    statement sees what committed before it began) plus its own. Writers to other owners
    only meet at the store's lock, and only when the store has limits.
    """
    checks: list[tuple[str, UsageLimits, str, bool]] = [
        (limits.owner_name, limits.owner, f"rag-usage:{tables.schema}:owner:{owner}", False),
        (limits.store_name, limits.store, f"rag-usage:{tables.schema}:store", True),
    ]
    for scope, wanted, lock_name, everyone in checks:
        if not wanted.any:
            continue
        # A hash collision between two names only makes their writers take turns.
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_name,))
        check_usage(scope, wanted, owner_usage(conn, tables, owner, everyone=everyone), added)
