"""Document writes: chunks, vectors, postings, vocabularies, statistics in one transaction.

Concurrency: every write first locks its collection's row (``FOR NO KEY UPDATE``; delete uses
``FOR UPDATE``). Writers to one collection therefore take turns — no lost update of N, Σdl or
a term's df, and no deadlock, because no writer holds a vocabulary or document row while
waiting for the collection — while writers to other collections and every reader (MVCC) run
freely. The expensive part of an ingest, the embedding model, runs before the transaction.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.exceptions import CollectionNotFoundError, DocumentNotFoundError, InvalidInputError
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput, DocumentRecord
from rag_plugin.stores.postgres.rows import (
    CollectionRow,
    Tables,
    json_copy,
    vector_literal,
)
from rag_plugin.stores.postgres.words import (
    chunk_words,
    insert_words,
    remove_postings,
    remove_words,
)
from rag_plugin.vectors import validate_embedding

__all__ = [
    "PreparedDocument",
    "delete_collection",
    "delete_document",
    "lock_collection",
    "prepare_document",
    "write_document",
]


@dataclass(frozen=True, slots=True)
class _PreparedChunk:
    chunk: ChunkInput
    vector: str
    metadata: dict[str, Any]
    term_frequencies: Counter[str]
    length: int
    words: list[str]


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    """A document validated and analysed in Python, before any SQL runs."""

    document: DocumentInput
    tags: list[str]
    metadata: dict[str, Any]
    chunks: list[_PreparedChunk]


def prepare_document(
    collection: CollectionInfo, document: DocumentInput, chunks: Sequence[ChunkInput]
) -> PreparedDocument:
    """Validate vectors, indexes and metadata and tokenise the chunks; raise before any SQL."""
    indexes = [chunk.index for chunk in chunks]
    if len(set(indexes)) != len(indexes):
        raise InvalidInputError(f"chunk indexes must be unique, got {sorted(indexes)}")
    analyzer = get_analyzer(collection.analyzer)
    prepared: list[_PreparedChunk] = []
    for chunk in chunks:
        validate_embedding(chunk.embedding, collection.dimensions)
        tokens = analyzer.tokens(chunk.content)
        prepared.append(
            _PreparedChunk(
                chunk=chunk,
                vector=vector_literal(chunk.embedding),
                metadata=json_copy(chunk.metadata, "chunk metadata"),
                term_frequencies=Counter(tokens),
                length=len(tokens),
                words=chunk_words(chunk.content),
            )
        )
    return PreparedDocument(
        document=document,
        tags=[str(tag) for tag in document.tags],
        metadata=json_copy(document.metadata, "document metadata"),
        chunks=prepared,
    )


def lock_collection(
    conn: psycopg.Connection[Any], tables: Tables, info: CollectionInfo, *, for_delete: bool
) -> CollectionRow:
    """Lock the owner's collection row for this transaction and return it."""
    # A delete needs the stronger lock: it conflicts with the FK checks of concurrent inserts.
    strength = sql.SQL("UPDATE" if for_delete else "NO KEY UPDATE")
    row = conn.execute(
        tables(
            "SELECT {collection_columns} FROM {collections}"
            " WHERE name = %s AND owner IS NOT DISTINCT FROM %s FOR {strength}",
            strength=strength,
        ),
        (info.name, info.owner),
    ).fetchone()
    if row is None:
        raise CollectionNotFoundError(info.name)
    return CollectionRow.from_row(row)


def _remove_chunks(
    conn: psycopg.Connection[Any], tables: Tables, collection_id: int, document_id: str
) -> tuple[int, int]:
    """Remove a document's chunks and postings, decrementing df; return (chunks, Σdl)."""
    remove_words(conn, tables, collection_id, document_id)
    remove_postings(
        conn,
        tables,
        collection_id,
        document_id,
        postings="postings",
        vocabulary="vocabulary",
        key="term",
    )
    removed = conn.execute(
        tables(
            "WITH gone AS (DELETE FROM {chunks} WHERE document_id = %s RETURNING token_count)"
            " SELECT count(*), coalesce(sum(token_count), 0) FROM gone"
        ),
        (document_id,),
    ).fetchone()
    return (int(removed[0]), int(removed[1])) if removed else (0, 0)


def delete_document(
    conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow, document_id: str
) -> None:
    """Delete one document of a locked collection; raise DocumentNotFoundError if absent."""
    found = conn.execute(
        tables("SELECT 1 FROM {documents} WHERE id = %s AND collection_id = %s"),
        (document_id, row.id),
    ).fetchone()
    if found is None:
        raise DocumentNotFoundError(document_id)
    chunks, length = _remove_chunks(conn, tables, row.id, document_id)
    conn.execute(tables("DELETE FROM {documents} WHERE id = %s"), (document_id,))
    _add_statistics(conn, tables, row.id, documents=-1, chunks=-chunks, length=-length)


def _add_statistics(
    conn: psycopg.Connection[Any],
    tables: Tables,
    collection_id: int,
    *,
    documents: int,
    chunks: int,
    length: int,
) -> None:
    conn.execute(
        tables(
            "UPDATE {collections} SET document_count = document_count + %s,"
            " chunk_count = chunk_count + %s, token_count = token_count + %s WHERE id = %s"
        ),
        (documents, chunks, length, collection_id),
    )


def write_document(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    prepared: PreparedDocument,
) -> DocumentRecord:
    """Insert (or replace by source) one document in a locked collection."""
    document = prepared.document
    existing = None
    if document.source:
        existing = conn.execute(
            tables("SELECT id FROM {documents} WHERE collection_id = %s AND source = %s"),
            (row.id, document.source),
        ).fetchone()
    removed_chunks = removed_length = 0
    if existing is not None:
        document_id = str(existing[0])
        removed_chunks, removed_length = _remove_chunks(conn, tables, row.id, document_id)
    else:
        document_id = uuid.uuid4().hex
    created_at = datetime.now(UTC)
    values = {
        "id": document_id,
        "coll": row.id,
        "source": document.source,
        "title": document.title,
        "tags": prepared.tags,
        "metadata": json.dumps(prepared.metadata),
        "hash": document.content_hash,
        "created": created_at,
        "chunks": len(prepared.chunks),
    }
    if existing is not None:
        # The replaced document keeps its id and becomes the newest (a new seq).
        conn.execute(
            tables(
                "UPDATE {documents} SET title = %(title)s, tags = %(tags)s,"
                " metadata = %(metadata)s::jsonb, content_hash = %(hash)s,"
                " created_at = %(created)s, chunk_count = %(chunks)s, seq = DEFAULT"
                " WHERE id = %(id)s"
            ),
            values,
        )
    else:
        conn.execute(
            tables(
                "INSERT INTO {documents} (id, collection_id, source, title, tags, metadata,"
                " content_hash, created_at, chunk_count) VALUES (%(id)s, %(coll)s, %(source)s,"
                " %(title)s, %(tags)s, %(metadata)s::jsonb, %(hash)s, %(created)s, %(chunks)s)"
            ),
            values,
        )
    added_length = _insert_chunks(conn, tables, row, document_id, created_at, prepared)
    _add_statistics(
        conn,
        tables,
        row.id,
        documents=0 if existing is not None else 1,
        chunks=len(prepared.chunks) - removed_chunks,
        length=added_length - removed_length,
    )
    return DocumentRecord(
        id=document_id,
        collection=row.info.name,
        source=document.source,
        title=document.title,
        tags=tuple(prepared.tags),
        content_hash=document.content_hash,
        created_at=created_at,
        chunk_count=len(prepared.chunks),
        metadata=prepared.metadata,
    )


def _insert_chunks(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    document_id: str,
    created_at: datetime,
    prepared: PreparedDocument,
) -> int:
    """Insert the chunks, their postings and df increments; return Σdl of the new chunks."""
    if not prepared.chunks:
        return 0
    document = prepared.document
    # The store's own keys win, so a filter on source or title always means the document's.
    base = {
        "title": document.title,
        "source": document.source,
        "created_at": created_at.isoformat(),
        "tags": prepared.tags,
    }
    items = prepared.chunks
    ids = conn.execute(
        tables(
            "INSERT INTO {chunks} (collection_id, document_id, idx, chunk_key, content,"
            " start_offset, end_offset, metadata, token_count, dimensions, metric, embedding)"
            " SELECT %(coll)s, %(doc)s, u.idx, %(doc)s || '_' || u.idx, u.content, u.start_at,"
            " u.end_at, u.metadata::jsonb, u.length, %(dims)s, %(metric)s, u.embedding::vector"
            " FROM unnest(%(idx)s::integer[], %(content)s::text[], %(start)s::integer[],"
            " %(end)s::integer[], %(metadata)s::text[], %(length)s::integer[],"
            " %(embedding)s::text[])"
            " AS u(idx, content, start_at, end_at, metadata, length, embedding)"
            " RETURNING idx, id"
        ),
        {
            "coll": row.id,
            "doc": document_id,
            "dims": row.info.dimensions,
            "metric": row.info.metric.value,
            "idx": [item.chunk.index for item in items],
            "content": [item.chunk.content for item in items],
            "start": [item.chunk.start_offset for item in items],
            "end": [item.chunk.end_offset for item in items],
            "metadata": [
                json.dumps({**prepared.metadata, **item.metadata, **base}) for item in items
            ],
            "length": [item.length for item in items],
            "embedding": [item.vector for item in items],
        },
    ).fetchall()
    chunk_ids = dict(ids)
    document_frequency: Counter[str] = Counter()
    with conn.cursor().copy(
        tables("COPY {postings} (collection_id, term, chunk_id, tf, dl) FROM STDIN")
    ) as copy:
        for item in items:
            chunk_id = chunk_ids[item.chunk.index]
            for term, tf in item.term_frequencies.items():
                copy.write_row((row.id, term, chunk_id, tf, item.length))
            document_frequency.update(item.term_frequencies.keys())
    if document_frequency:
        terms = sorted(document_frequency)
        conn.execute(
            tables(
                "INSERT INTO {vocabulary} AS v (collection_id, term, df)"
                " SELECT %s, t, n FROM unnest(%s::text[], %s::integer[]) AS u(t, n)"
                " ON CONFLICT (collection_id, term) DO UPDATE SET df = v.df + EXCLUDED.df"
            ),
            (row.id, terms, [document_frequency[t] for t in terms]),
        )
    insert_words(conn, tables, row.id, {chunk_ids[item.chunk.index]: item.words for item in items})
    return sum(item.length for item in items)


def delete_collection(conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow) -> int:
    """Delete a locked collection and all it holds; return how many documents it had."""
    for template in (
        "DELETE FROM {postings} WHERE collection_id = %s",
        "DELETE FROM {words} WHERE collection_id = %s",
        "DELETE FROM {word_vocabulary} WHERE collection_id = %s",
        "DELETE FROM {vocabulary} WHERE collection_id = %s",
        "DELETE FROM {chunks} WHERE collection_id = %s",
        "DELETE FROM {documents} WHERE collection_id = %s",
        "DELETE FROM {collections} WHERE id = %s",
    ):
        conn.execute(tables(template), (row.id,))
    return row.info.document_count
