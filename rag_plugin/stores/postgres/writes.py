"""Document writes: chunks, vectors, postings, vocabularies, statistics in one transaction.

Concurrency: every write first locks its collection's row (``locks.py``: ``FOR NO KEY
UPDATE``; delete uses ``FOR UPDATE``). Writers to one collection therefore take turns — no
lost update of N, Σdl or a term's df, and no deadlock, because no writer holds a vocabulary
or document row while waiting for the collection — while writers to other collections and
every reader (MVCC) run freely. The expensive part of an ingest, the embedding model, runs
before the transaction.

Round trips: the writes run in psycopg's pipeline mode (see ``Database.transaction``). A
document write reads once — the locked collection row with the document it replaces and the
ids its new chunks will have (``locks.py``) — and every statement after that reads nothing
back: the chunks are inserted under those ids and their postings sent as finished blocks, a
replaced document's counts come from the first read, and the vocabularies' df updates and
clean-up happen in SQL. So a write is three round trips whatever its size: the lock, every
statement in one batch, and the COMMIT (sent only once the batch has run, so a client killed
before leaves nothing behind).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg

from rag_plugin.exceptions import DocumentNotFoundError, StoreError
from rag_plugin.stores.base import CollectionInfo, CollectionKey, DocumentRecord, new_document_id
from rag_plugin.stores.postgres import arrays
from rag_plugin.stores.postgres.blocks import add_postings, remove_postings
from rag_plugin.stores.postgres.locks import StoredDocument, lock_for_write
from rag_plugin.stores.postgres.near import add_entries, drop_collection_keys
from rag_plugin.stores.postgres.rows import CollectionRow, Tables, packed_vectors
from rag_plugin.stores.prepared import PreparedDocument
from rag_plugin.stores.usage import Usage

__all__ = ["delete_collection", "delete_document", "insert_collection", "write_documents"]


_INSERT_COLLECTION = (
    "INSERT INTO {collections} (name, owner, dimensions, embedding_model, metric, analyzer)"
    " VALUES (%s, %s, %s, %s, %s, %s)"
    " ON CONFLICT ON CONSTRAINT rag_collections_name_owner DO NOTHING"
    " RETURNING {collection_columns}"
)


def insert_collection(
    conn: psycopg.Connection[Any], tables: Tables, info: CollectionInfo
) -> psycopg.Cursor[Any]:
    """Insert the collection unless the owner has one by its name; the cursor returns its
    row, or nothing when it existed. Not read here, so it can lead a pipelined batch."""
    return conn.execute(
        tables(_INSERT_COLLECTION),
        (
            info.name,
            info.owner,
            info.dimensions,
            info.embedding_model,
            info.metric.value,
            info.analyzer,
        ),
    )


def _remove_chunks(
    conn: psycopg.Connection[Any], tables: Tables, collection_id: int, document_id: str
) -> None:
    """Remove a document's chunks and postings, lowering df and dropping keys left at 0."""
    remove_postings(conn, tables, collection_id, document_id)
    conn.execute(
        tables(
            "WITH gone AS (DELETE FROM {chunks} WHERE document_id = %s RETURNING id)"
            " DELETE FROM {chunk_filters} WHERE chunk_id IN (SELECT id FROM gone)"
        ),
        (document_id,),
    )


def delete_document(
    conn: psycopg.Connection[Any], tables: Tables, key: CollectionKey, document_id: str
) -> None:
    """Lock the collection and delete one document; raise DocumentNotFoundError if absent."""
    row, stored = lock_for_write(conn, tables, key, document_id=document_id)
    if stored is None:
        raise DocumentNotFoundError(document_id)
    _remove_chunks(conn, tables, row.id, document_id)
    conn.execute(tables("DELETE FROM {documents} WHERE id = %s"), (document_id,))
    _add_statistics(
        conn,
        tables,
        row.id,
        Usage(-1, -stored.chunks, -stored.text_bytes),
        length=-stored.length,
    )


def _add_statistics(
    conn: psycopg.Connection[Any],
    tables: Tables,
    collection_id: int,
    added: Usage,
    *,
    length: int,
) -> None:
    conn.execute(
        tables(
            "UPDATE {collections} SET document_count = document_count + %s,"
            " chunk_count = chunk_count + %s, text_bytes = text_bytes + %s,"
            " token_count = token_count + %s WHERE id = %s"
        ),
        (added.documents, added.chunks, added.text_bytes, length, collection_id),
    )


def write_documents(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    documents: Sequence[tuple[StoredDocument | None, PreparedDocument]],
    *,
    chunk_ids: Sequence[int],
) -> tuple[list[DocumentRecord], Usage]:
    """Insert documents in a locked collection, each new or replacing the stored one (same
    source); return their records in input order and what the write added to the usage.
    ``chunk_ids`` (ascending, taken with the lock) go to the chunks in input order.

    Reads nothing back, so in pipeline mode every statement goes out in one batch, and a
    batch of documents costs one statement per table (plus the removal of replaced ones'
    chunks), not one per document.
    """
    created_at = datetime.now(UTC)
    placed: list[tuple[str, PreparedDocument]] = []
    for existing, prepared in documents:
        if existing is not None:
            _remove_chunks(conn, tables, row.id, existing.id)
        source = prepared.document.source
        document_id = existing.id if existing else new_document_id(row.info.key, source)
        placed.append((document_id, prepared))
    # One statement for new and replaced documents alike, in input order: each row takes
    # the next seq (newest first), and a replaced document keeps its id and takes the new seq.
    conn.execute(
        tables(
            "INSERT INTO {documents} AS d (id, collection_id, source, title, tags, metadata,"
            " content_hash, created_at, chunk_count)"
            " SELECT u.id, %s, u.source, u.title,"
            " ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)), u.metadata::jsonb,"
            " u.hash, %s, u.chunks"
            " FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::text[],"
            " %b::text[], %b::integer[]) WITH ORDINALITY"
            " AS u(id, source, title, tags, metadata, hash, chunks, position)"
            " ORDER BY u.position"
            " ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title, tags = EXCLUDED.tags,"
            " metadata = EXCLUDED.metadata, content_hash = EXCLUDED.content_hash,"
            " created_at = EXCLUDED.created_at, chunk_count = EXCLUDED.chunk_count,"
            " seq = EXCLUDED.seq"
        ),
        (
            row.id,
            created_at,
            [document_id for document_id, _ in placed],
            [p.document.source for _, p in placed],
            [p.document.title for _, p in placed],
            [json.dumps(p.tags) for _, p in placed],
            [json.dumps(p.metadata) for _, p in placed],
            [p.document.content_hash for _, p in placed],
            [len(p.chunks) for _, p in placed],
        ),
    )
    replaced = [existing for existing, _ in documents if existing is not None]
    added_length = _insert_chunks(conn, tables, row, created_at, placed, chunk_ids)
    added = Usage(
        len(placed) - len(replaced),
        sum(len(p.chunks) for _, p in placed) - sum(e.chunks for e in replaced),
        sum(len(c.chunk.content.encode()) for _, p in placed for c in p.chunks)
        - sum(e.text_bytes for e in replaced),
    )
    _add_statistics(
        conn, tables, row.id, added, length=added_length - sum(e.length for e in replaced)
    )
    records = [
        DocumentRecord(
            id=document_id,
            collection=row.info.name,
            source=prepared.document.source,
            title=prepared.document.title,
            tags=tuple(prepared.tags),
            content_hash=prepared.document.content_hash,
            created_at=created_at,
            chunk_count=len(prepared.chunks),
            metadata=prepared.metadata,
        )
        for document_id, prepared in placed
    ]
    return records, added


def _insert_chunks(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    created_at: datetime,
    documents: Sequence[tuple[str, PreparedDocument]],
    chunk_ids: Sequence[int],
) -> int:
    """Insert the documents' chunks under ``chunk_ids``, their postings and df increments;
    return their Σdl."""
    items = [
        (document_id, prepared, item)
        for document_id, prepared in documents
        for item in prepared.chunks
    ]
    if not items:
        return 0
    if len(chunk_ids) != len(items):  # pragma: no cover - the store reserves one id a chunk
        raise StoreError(f"{len(chunk_ids)} chunk ids were reserved for {len(items)} chunks.")
    created = created_at.isoformat()
    values, ends = packed_vectors([item.chunk.embedding for _, _, item in items])
    metadata = []
    for _, prepared, item in items:
        # The store's own keys win, so a filter on source or title always means the document's.
        base = {
            "title": prepared.document.title,
            "source": prepared.document.source,
            "created_at": created,
            "tags": prepared.tags,
        }
        metadata.append(json.dumps({**prepared.metadata, **item.metadata, **base}))
    # The filter table's copy of the metadata and the vector's binary signature come from the
    # same statement (migrations 13 and 14). chunk_key is records.chunk_id, built in SQL.
    conn.execute(
        tables(
            "WITH added AS (INSERT INTO {chunks} (id, collection_id, document_id, idx,"
            " chunk_key, content, start_offset, end_offset, metadata, token_count, dimensions,"
            " metric, embedding)"
            " SELECT u.id, %(coll)s, u.doc, u.idx, u.doc || '_' || u.idx, u.content,"
            " u.start_at, u.end_at, u.metadata::jsonb, u.length, %(dims)s, %(metric)s,"
            " (%(values)b::float8[])[u.vector_end - %(dims)s + 1 : u.vector_end]::vector"
            " FROM unnest(%(id)b::bigint[], %(doc)b::text[], %(idx)b::integer[],"
            " %(content)b::text[], %(start)b::integer[], %(end)b::integer[],"
            " %(metadata)b::text[], %(length)b::integer[], %(ends)b::integer[])"
            " AS u(id, doc, idx, content, start_at, end_at, metadata, length, vector_end)"
            " RETURNING id, collection_id, metadata, embedding)"
            " INSERT INTO {chunk_filters} (chunk_id, collection_id, metadata, signature)"
            " SELECT id, collection_id, metadata, binary_quantize(embedding) FROM added"
        ),
        {
            "coll": row.id,
            "dims": row.info.dimensions,
            "metric": row.info.metric.value,
            "id": arrays.int8s(chunk_ids),
            "doc": [document_id for document_id, _, _ in items],
            "idx": [item.chunk.index for _, _, item in items],
            "content": [item.chunk.content for _, _, item in items],
            "start": [item.chunk.start_offset for _, _, item in items],
            "end": [item.chunk.end_offset for _, _, item in items],
            "metadata": metadata,
            "length": [item.length for _, _, item in items],
            "values": values,
            "ends": ends,
        },
    )
    # Postings before the vocabulary: the crash test holds the vocabulary to stop a write
    # half-way, after its postings.
    term_df, word_df = add_postings(
        conn,
        tables,
        row.id,
        [
            (chunk_id, item.length, item.term_frequencies, item.words)
            for chunk_id, (_, _, item) in zip(chunk_ids, items, strict=True)
        ],
    )
    add_entries(conn, tables, row.id, term_df, word_df)
    return sum(item.length for _, _, item in items)


def delete_collection(conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow) -> int:
    """Delete a locked collection and all it holds; return how many documents it had."""
    for template in (
        "DELETE FROM {chunk_terms} f USING {chunks} c"
        " WHERE c.collection_id = %s AND f.chunk_id = c.id",
        "DELETE FROM {term_blocks} WHERE collection_id = %s",
        "DELETE FROM {word_blocks} WHERE collection_id = %s",
        "DELETE FROM {chunk_filters} WHERE collection_id = %s",
        "DELETE FROM {chunks} WHERE collection_id = %s",
        "DELETE FROM {documents} WHERE collection_id = %s",
    ):
        conn.execute(tables(template), (row.id,))
    # Last, so the near-entry index is locked against the schema's writers only from here to
    # the commit: the keys of the words only this collection held, then its vocabularies.
    drop_collection_keys(conn, tables, row.id)
    for template in (
        "DELETE FROM {word_vocabulary} WHERE collection_id = %s",
        "DELETE FROM {vocabulary} WHERE collection_id = %s",
        "DELETE FROM {collections} WHERE id = %s",
    ):
        conn.execute(tables(template), (row.id,))
    return row.info.document_count
