"""The SQL of PostgresStore's reads of collections, documents and chunks (templates for
``Tables``: ``{collection_columns}`` and the other column lists are ``rows.py``'s)."""

from __future__ import annotations

from typing import Any

from rag_plugin.exceptions import CollectionNotFoundError
from rag_plugin.stores.postgres.rows import CollectionRow

__all__ = [
    "CHUNKS_BY_ID",
    "CHUNKS_BY_SOURCES",
    "COLLECTION",
    "DOCUMENTS_BY_SOURCES",
    "DOCUMENTS_NEWEST_FIRST",
    "DOCUMENT_BY_ID",
    "DOCUMENT_BY_SOURCE",
    "DOCUMENT_EXISTS",
    "found_collection",
]

COLLECTION = (
    "SELECT {collection_columns} FROM {collections}"
    " WHERE name = %s AND owner IS NOT DISTINCT FROM %s"
)

# Reads of one collection's rows for PostgresStore._read: {owned_collection} comes first.
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
