"""PostgresStore's reads of collections, documents and chunks, each one round trip, and their
SQL (templates for ``Tables``: ``{collection_columns}`` and the other column lists are
``rows.py``'s)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from rag_plugin.exceptions import CollectionNotFoundError, DocumentNotFoundError
from rag_plugin.stores.base import ChunkRecord, CollectionInfo, CollectionKey, DocumentRecord
from rag_plugin.stores.postgres.connection import Database
from rag_plugin.stores.postgres.rows import CollectionRow, Tables, chunk_record, document_record

__all__ = [
    "CHUNKS_BY_ID",
    "CHUNKS_BY_SOURCES",
    "COLLECTION",
    "DOCUMENTS_BY_SOURCES",
    "DOCUMENTS_NEWEST_FIRST",
    "DOCUMENT_BY_ID",
    "DOCUMENT_BY_SOURCE",
    "DOCUMENT_EXISTS",
    "collection_row",
    "document_chunks",
    "find_document",
    "find_sources",
    "found_collection",
    "get_collection",
    "get_document",
    "list_collections",
    "list_documents",
]

COLLECTION = (
    "SELECT {collection_columns} FROM {collections}"
    " WHERE name = %s AND owner IS NOT DISTINCT FROM %s"
)

# Reads of one collection's rows for _read_owned: {owned_collection} comes first.
DOCUMENT_BY_ID = (
    "SELECT {document_columns} FROM {documents} d"
    " WHERE d.collection_id = {owned_collection} AND d.id = %s"
)
DOCUMENT_EXISTS = "SELECT 1 FROM {documents} WHERE collection_id = {owned_collection} AND id = %s"
# The partial unique index on (collection_id, source) needs the ``<> ''``.
DOCUMENT_BY_SOURCE = (
    "SELECT {document_columns} FROM {documents} d"
    " WHERE d.collection_id = {owned_collection} AND d.source = %s AND d.source <> ''"
)
DOCUMENTS_BY_SOURCES = (
    "SELECT {document_columns} FROM {documents} d"
    " WHERE d.collection_id = {owned_collection} AND d.source = ANY(%s) AND d.source <> ''"
)
DOCUMENTS_NEWEST_FIRST = (
    "SELECT {document_columns} FROM {documents} d WHERE d.collection_id = {owned_collection}"
    " ORDER BY d.seq DESC LIMIT %s OFFSET %s"
)
CHUNKS_BY_ID = (
    "SELECT {chunk_columns} FROM {chunks} c"
    " WHERE c.collection_id = {owned_collection} AND c.document_id = %s ORDER BY c.idx"
)
CHUNKS_BY_SOURCES = (
    "SELECT {chunk_columns} FROM {documents} d JOIN {chunks} c ON c.document_id = d.id"
    " WHERE d.collection_id = {owned_collection} AND d.source = ANY(%s) AND d.source <> ''"
    " ORDER BY c.document_id, c.idx"
)


def found_collection(rows: list[Any], name: str) -> CollectionRow:
    """The collection of a ``COLLECTION`` read, or ``CollectionNotFoundError``."""
    if not rows:
        raise CollectionNotFoundError(name)
    return CollectionRow.from_row(rows[0])


def collection_row(
    conn: psycopg.Connection[Any], tables: Tables, info: CollectionInfo
) -> CollectionRow:
    """The stored row of the collection ``info`` names, read in the caller's transaction."""
    rows = conn.execute(tables(COLLECTION), (info.name, info.owner)).fetchall()
    return found_collection(rows, info.name)


def _read_owned(
    db: Database, tables: Tables, key: CollectionKey, *statements: tuple[str, tuple[Any, ...]]
) -> tuple[CollectionRow, list[list[Any]]]:
    """The collection's row and the rows of ``statements``, all in one round trip.

    Each statement reaches the collection through ``{owned_collection}``, whose two
    parameters (name, owner) come first, before the statement's own. ``key.name`` is
    checked already (by ``Store``'s public methods, or ``PostgresStore.find_sources``).
    """
    owned = (key.name, key.owner)
    collections, *results = db.read_run(
        (tables(COLLECTION), owned),
        *((tables(template), (*owned, *params)) for template, params in statements),
    )
    return found_collection(collections, key.name), results


def get_collection(db: Database, tables: Tables, key: CollectionKey) -> CollectionInfo:
    """The owner's collection, or ``CollectionNotFoundError``."""
    return _read_owned(db, tables, key)[0].info


def list_collections(db: Database, tables: Tables, owner: str | None) -> list[CollectionInfo]:
    """The owner's collections (``None``: the shared ones), sorted by name."""
    (rows,) = db.read_run(
        (
            tables(
                "SELECT {collection_columns} FROM {collections}"
                " WHERE owner IS NOT DISTINCT FROM %s ORDER BY name"
            ),
            (owner,),
        )
    )
    return [CollectionRow.from_row(row).info for row in rows]


def get_document(
    db: Database, tables: Tables, key: CollectionKey, document_id: str
) -> DocumentRecord:
    """The collection's document ``document_id``, or ``DocumentNotFoundError``."""
    row, (found,) = _read_owned(db, tables, key, (DOCUMENT_BY_ID, (document_id,)))
    if not found:
        raise DocumentNotFoundError(document_id)
    return document_record(row.info.name, found[0])


def find_document(
    db: Database, tables: Tables, key: CollectionKey, source: str
) -> DocumentRecord | None:
    """The collection's document stored under ``source``, if any."""
    row, (found,) = _read_owned(db, tables, key, (DOCUMENT_BY_SOURCE, (source,)))
    return document_record(row.info.name, found[0]) if found else None


def find_sources(
    db: Database, tables: Tables, key: CollectionKey, sources: Sequence[str]
) -> tuple[CollectionInfo, dict[str, tuple[DocumentRecord, list[ChunkRecord]]]]:
    """The collection and, for each of ``sources`` stored in it, the document and its chunks
    in index order; empty and absent sources are missing from the map."""
    asked = sorted({source for source in sources if source})
    if not asked:
        return _read_owned(db, tables, key)[0].info, {}
    row, (documents, chunks) = _read_owned(
        db, tables, key, (DOCUMENTS_BY_SOURCES, (asked,)), (CHUNKS_BY_SOURCES, (asked,))
    )
    by_document: dict[str, list[ChunkRecord]] = {}
    for chunk in map(chunk_record, chunks):
        by_document.setdefault(chunk.document_id, []).append(chunk)
    found = {}
    for record in (document_record(key.name, r) for r in documents):
        found[record.source] = (record, by_document.get(record.id, []))
    return row.info, found


def list_documents(
    db: Database, tables: Tables, key: CollectionKey, limit: int, offset: int
) -> list[DocumentRecord]:
    """A page of the collection's documents, newest first."""
    row, (rows,) = _read_owned(db, tables, key, (DOCUMENTS_NEWEST_FIRST, (limit, offset)))
    return [document_record(row.info.name, r) for r in rows]


def document_chunks(
    db: Database, tables: Tables, key: CollectionKey, document_id: str
) -> list[ChunkRecord]:
    """The document's chunks in index order, or ``DocumentNotFoundError``."""
    _, (exists, rows) = _read_owned(
        db, tables, key, (DOCUMENT_EXISTS, (document_id,)), (CHUNKS_BY_ID, (document_id,))
    )
    if not exists:
        raise DocumentNotFoundError(document_id)
    return [chunk_record(r) for r in rows]
