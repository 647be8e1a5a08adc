"""The collection row lock every write takes first, sent with the read of the documents the
write replaces or deletes (and the ids of the chunks it inserts), so all cost one round trip."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from rag_plugin.exceptions import CollectionNotFoundError
from rag_plugin.stores.base import CollectionKey
from rag_plugin.stores.postgres.rows import CollectionRow, Tables

__all__ = [
    "LockedForWrite",
    "StoredDocument",
    "lock_collection",
    "lock_for_sources",
    "lock_for_write",
]


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """A stored document a write replaces or deletes: its id, chunk count, Σdl and bytes of
    chunk text."""

    id: str
    chunks: int
    length: int
    text_bytes: int


_LOCK = (
    "SELECT {collection_columns} FROM {collections}"
    " WHERE name = %s AND owner IS NOT DISTINCT FROM %s FOR NO KEY UPDATE"
)
# A delete needs the stronger lock: it conflicts with the FK checks of concurrent inserts.
_LOCK_FOR_DELETE = (
    "SELECT {collection_columns} FROM {collections}"
    " WHERE name = %s AND owner IS NOT DISTINCT FROM %s FOR UPDATE"
)


def _locked_row(cursor: psycopg.Cursor[Any], key: CollectionKey) -> CollectionRow:
    row = cursor.fetchone()
    if row is None:
        raise CollectionNotFoundError(key.name)
    return CollectionRow.from_row(row)


def lock_collection(
    conn: psycopg.Connection[Any], tables: Tables, key: CollectionKey, *, for_delete: bool
) -> CollectionRow:
    """Lock the owner's collection row for this transaction and return it."""
    cursor = conn.execute(tables(_LOCK_FOR_DELETE if for_delete else _LOCK), (key.name, key.owner))
    return _locked_row(cursor, key)


# The document's current chunk count, Σdl and text bytes, for the statistics a replace or
# delete adjusts. It joins the collection by name and owner, so it can be sent with the lock,
# before the collection id is known; it runs after the lock is granted, so it sees every
# committed write.
_STORED = (
    "SELECT d.id, s.chunks, s.length, d.source, s.bytes FROM {documents} d"
    " JOIN {collections} k ON k.id = d.collection_id,"
    " LATERAL (SELECT count(*), coalesce(sum(c.token_count), 0),"
    "  coalesce(sum(octet_length(c.content)), 0) FROM {chunks} c"
    "  WHERE c.document_id = d.id) AS s(chunks, length, bytes)"
    " WHERE k.name = %s AND k.owner IS NOT DISTINCT FROM %s AND "
)
# The partial unique index on (collection_id, source) needs the ``<> ''`` predicate.
_STORED_BY_SOURCES = _STORED + "d.source = ANY(%s) AND d.source <> ''"
_STORED_BY_ID = _STORED + "d.id = %s"


def lock_for_write(
    conn: psycopg.Connection[Any], tables: Tables, key: CollectionKey, *, document_id: str
) -> tuple[CollectionRow, StoredDocument | None]:
    """Lock the collection and find the document ``document_id``, in one round trip; the
    document is None when absent."""
    locked = conn.execute(tables(_LOCK), (key.name, key.owner))
    found = conn.execute(tables(_STORED_BY_ID), (key.name, key.owner, document_id))
    row = _locked_row(locked, key)
    stored = found.fetchone()
    return row, (_stored(stored) if stored is not None else None)


# Ids for the chunks a write inserts, from the chunks' own sequence. Taken after the lock is
# granted, so a collection's chunk ids grow with its writes, as its posting blocks expect
# (blocks.py); knowing them, the write builds its blocks in Python and reads nothing back.
_RESERVE_IDS = (
    "SELECT nextval(s) FROM pg_get_serial_sequence(%s, 'id') AS s, generate_series(1, %s)"
)


@dataclass(frozen=True, slots=True)
class LockedForWrite:
    """What a write learns with its lock: the collection's row, the stored documents it
    replaces (by source), and the ids of the chunks it inserts (ascending)."""

    row: CollectionRow
    stored: dict[str, StoredDocument]
    chunk_ids: list[int]


def lock_for_sources(
    conn: psycopg.Connection[Any],
    tables: Tables,
    key: CollectionKey,
    sources: Sequence[str],
    *,
    chunks: int,
) -> LockedForWrite:
    """Lock the collection, find the documents stored under ``sources`` (empty ones are
    never stored under; absent ones are missing from the map) and take ids for ``chunks``
    new chunks, in one round trip."""
    locked = conn.execute(tables(_LOCK), (key.name, key.owner))
    wanted = sorted({source for source in sources if source})
    found = (
        conn.execute(tables(_STORED_BY_SOURCES), (key.name, key.owner, wanted)) if wanted else None
    )
    reserved = (
        conn.execute(_RESERVE_IDS, (tables("{chunks}").as_string(None), chunks)) if chunks else None
    )
    row = _locked_row(locked, key)
    stored = found.fetchall() if found is not None else []
    ids = sorted(int(r[0]) for r in reserved.fetchall()) if reserved is not None else []
    return LockedForWrite(row, {str(r[3]): _stored(r) for r in stored}, ids)


def _stored(row: Sequence[Any]) -> StoredDocument:
    return StoredDocument(str(row[0]), int(row[1]), int(row[2]), int(row[4]))
