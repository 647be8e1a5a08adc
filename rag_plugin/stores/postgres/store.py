"""The PostgreSQL store: every piece of state in the database, every change one transaction.

``PostgresStore(dsn_or_pool, schema="tenant")`` keeps collections, documents, chunks, vectors,
BM25 postings and statistics and the fuzzy word postings (as array blocks, ``blocks.py``) in
one schema (see ``schema.py`` for the
tables and why they look so). Nothing is loaded into the process: any number of app processes
share one index and see each other's writes at once, and an app process's memory does not grow
with the corpus.

- Dense: partial HNSW indexes per (dimension, metric), exact scans for small collections or
  selective filters (ranked by binary signatures first when the filter matches many),
  iterative scans otherwise (``dense.py``).
- BM25: over the whole collection, every posting of the query's terms read from the term
  blocks in one round trip and scored by numpy exactly as
  :class:`~rag_plugin.lexical.bm25.Bm25Index` does (``lexical.py``).
- Fuzzy: exact, from the word vocabulary, the word blocks and the chunks' forward index
  (``fuzzy.py``; the words are ``prepared.chunk_words``); correction from the analyzer
  vocabulary (``correction.py``).
- Writes: one transaction per document, serialised per collection (``writes.py``,
  ``locks.py``), checked against usage limits before the commit (``usage.py``).
- Replicas (``replicas=``, DSNs of streaming standbys or a shared ``ReplicaSet``): searches
  and reads run on a standby that has replayed the context's own writes, writes on the
  primary (``replicas.py``).

Collection names are validated before any SQL; identifiers go through ``psycopg.sql``; values
are parameters. Every query is scoped by the collection's owner (``owner IS NOT DISTINCT FROM``)
and applies metadata filters before ranking (the legs read the ids of the matching chunks
from a narrow table of each chunk's metadata, ``rag_chunk_filters``, once per search when the
legs share the filter, and rank only those).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import psycopg

from rag_plugin.exceptions import CollectionExistsError, InvalidInputError, StoreError
from rag_plugin.stores.base import (
    ChunkInput,
    ChunkRecord,
    CollectionInfo,
    CollectionKey,
    DocumentInput,
    DocumentRecord,
    QueryCorrection,
    ScoredChunk,
    SearchContext,
    Store,
    check_same_model,
    validate_collection_name,
)
from rag_plugin.stores.postgres import correction, locks, near, reads, writes
from rag_plugin.stores.postgres.cache import PostgresEmbeddingCache
from rag_plugin.stores.postgres.connection import ConnectionSource, Database, validate_schema_name
from rag_plugin.stores.postgres.dense import dense_search
from rag_plugin.stores.postgres.filters import sql_filter
from rag_plugin.stores.postgres.fuzzy import fuzzy_search
from rag_plugin.stores.postgres.lexical import bm25_search, lexical_leg
from rag_plugin.stores.postgres.replicas import ReplicaSet
from rag_plugin.stores.postgres.rows import CollectionRow, Tables
from rag_plugin.stores.postgres.schema import drop_tables, ensure_schema, ensure_vector_index
from rag_plugin.stores.postgres.usage import check_limits, owner_usage
from rag_plugin.stores.prepared import prepare_document
from rag_plugin.stores.usage import Usage, WriteLimits
from rag_plugin.vectors import validate_embedding

__all__ = ["PostgresStore"]

logger = logging.getLogger(__name__)


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {value!r}")
    return value


class PostgresStore(Store):
    """Collections in one PostgreSQL schema, searched in the database."""

    def __init__(
        self,
        conninfo_or_pool: ConnectionSource,
        *,
        schema: str = "public",
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 128,
        ef_search: int = 100,
        exact_search_below: int = 10_000,
        pool_max_size: int = 4,
        create_schema: bool = True,
        replicas: ReplicaSet | Sequence[str] | None = None,
    ) -> None:
        self.hnsw_m = _positive("hnsw_m", hnsw_m)
        self.hnsw_ef_construction = _positive("hnsw_ef_construction", hnsw_ef_construction)
        self.ef_search = _positive("ef_search", ef_search)
        if isinstance(exact_search_below, bool) or exact_search_below < 0:
            raise InvalidInputError(
                f"exact_search_below must be zero or positive, got {exact_search_below!r}"
            )
        self.exact_search_below = exact_search_below
        self._db = Database(
            conninfo_or_pool, schema, max_size=_positive("pool_max_size", pool_max_size)
        )
        # Standbys given as DSNs are this store's own (closed with it); a ReplicaSet is lent.
        self._own_replicas: ReplicaSet | None = None
        if replicas is not None and not isinstance(replicas, ReplicaSet):
            primary = self._db.pool
            if primary is None:
                self._db.close()
                raise InvalidInputError(
                    "A store on one lent connection cannot read on replicas: give it a DSN or "
                    "a pool."
                )
            replicas = self._own_replicas = ReplicaSet(primary, replicas)
        if replicas is not None:
            self._db.use_replicas(replicas)
        self._tables = Tables(self._db.schema)
        self._plans = threading.local()
        if create_schema:
            try:
                self.ensure_schema()
            except BaseException:
                self._db.close()  # the pool's connections and threads go with the error
                raise

    @property
    def last_dense_plan(self) -> str:
        """The plan of the calling thread's last dense search (a ``dense.DensePlan`` value:
        ``exact``, ``signatures+exact``, ``hnsw`` or ``hnsw+exact``; empty before one): per
        thread, since one store serves every request of a process and the engine runs legs in
        threads of its own."""
        plan: str = getattr(self._plans, "dense", "")
        return plan

    @property
    def concurrent_legs(self) -> bool:
        """True with a connection pool: the engine then runs hybrid legs at once, each on
        its own connection, so the database works on them in parallel."""
        return self._db.concurrent

    @property
    def schema(self) -> str:
        """The schema holding this store's tables."""
        return self._db.schema

    def ensure_schema(self) -> int:
        """Create or migrate the tables (idempotent); return the schema version."""
        with self._db.transaction() as conn:
            return ensure_schema(conn, self._db.schema)

    @property
    def replicas(self) -> ReplicaSet | None:
        """The standbys this store reads on, if any."""
        return self._db.replicas

    def close(self) -> None:
        """Close the connection pool if the store opened it from a DSN (and the standbys'
        pools if it was given their DSNs)."""
        if self._own_replicas is not None:
            self._own_replicas.close()
        self._db.close()

    def for_namespace(self, namespace: str) -> PostgresStore:
        """The store of the schema ``namespace`` on this store's connections, standbys and
        settings, its tables created or migrated (the portal's tenant schema)."""
        return PostgresStore(
            self._db.source,
            schema=namespace,
            hnsw_m=self.hnsw_m,
            hnsw_ef_construction=self.hnsw_ef_construction,
            ef_search=self.ef_search,
            exact_search_below=self.exact_search_below,
            replicas=self._db.replicas,
        )

    def drop_namespace(self, namespace: str) -> int:
        """Drop the store's tables in the schema ``namespace`` (the schema and whatever else
        it holds stay: the portal's tenant schema goes with its tenant); return how many
        collections they held, 0 if the schema holds none of them or is gone."""
        schema = validate_schema_name(namespace)
        with self._db.writing() as conn:
            return drop_tables(conn, schema)

    def embedding_cache(self) -> PostgresEmbeddingCache:
        """An embedding cache in this store's schema (``rag_embedding_cache``), on its
        connections."""
        return PostgresEmbeddingCache(self._db.source, schema=self.schema, create_schema=False)

    # -- collections -------------------------------------------------------------------

    def _create_collection(self, collection: CollectionInfo) -> CollectionInfo:
        with self._db.writing() as conn:
            row = writes.insert_collection(conn, self._tables, collection).fetchone()
        if row is None:
            raise CollectionExistsError(collection.name)
        created = CollectionRow.from_row(row).info
        self._ensure_vector_index(created)
        return created

    def _get_collection(self, key: CollectionKey) -> CollectionInfo:
        return reads.get_collection(self._db, self._tables, key)

    def list_collections(self, *, owner: str | None = None) -> list[CollectionInfo]:
        """Return the owner's collections (``owner=None``: the shared ones), sorted by name."""
        return reads.list_collections(self._db, self._tables, owner)

    def usage(self, *, owner: str | None = None, everyone: bool = False) -> Usage:
        """What the owner's collections hold, or all of them: sums of their counters."""
        with self._db.transaction() as conn:
            return owner_usage(conn, self._tables, owner, everyone=everyone)

    def _delete_collection(self, key: CollectionKey) -> int:
        with self._db.writing(pipeline=True) as conn:
            row = locks.lock_collection(conn, self._tables, key, for_delete=True)
            return writes.delete_collection(conn, self._tables, row)

    def prune_near_keys(self) -> int:
        """Maintenance: delete the near-entry index's rows of words no collection of the
        schema holds any more (left by deleted and replaced documents; a deleted collection
        takes its own words' rows with it); return how many went. It reads the whole index,
        and the schema's writes wait until it commits."""
        with self._db.writing() as conn:
            return near.prune_keys(conn, self._tables)

    # -- documents ---------------------------------------------------------------------

    def _upsert_documents(
        self,
        collection: CollectionInfo,
        documents: Sequence[tuple[DocumentInput, Sequence[ChunkInput]]],
        *,
        create: bool,
        limits: WriteLimits | None,
    ) -> list[DocumentRecord]:
        """Store documents with their chunks in one transaction, replacing those whose source
        is stored; with ``create=True`` the collection is created in it if missing; with
        ``limits`` the usage is checked last, before the commit (:func:`check_limits`).

        Three round trips however many documents: the collection lock with the replaced
        documents' lookup and the new chunks' ids (after the insert of a missing collection),
        then every write in one pipeline batch (one statement per table), then the commit.
        """
        prepared = [prepare_document(collection, d, chunks) for d, chunks in documents]
        sources = [document.source for document, _ in documents]
        with self._db.writing(pipeline=True) as conn:
            inserted = writes.insert_collection(conn, self._tables, collection) if create else None
            locked = locks.lock_for_sources(
                conn,
                self._tables,
                collection.key,
                sources,
                chunks=sum(len(chunks) for _, chunks in documents),
            )
            row = locked.row
            new = inserted is not None and inserted.fetchone() is not None
            if create and not new:
                check_same_model(row.info, collection)
            if (row.info.dimensions, row.info.analyzer) != (
                collection.dimensions,
                collection.analyzer,
            ):
                # The collection was recreated with other settings since the caller read it.
                prepared = [prepare_document(row.info, d, c) for d, c in documents]
            records, added = writes.write_documents(
                conn,
                self._tables,
                row,
                [(locked.stored.get(p.document.source), p) for p in prepared],
                chunk_ids=locked.chunk_ids,
            )
            if limits is not None and limits.any:
                check_limits(conn, self._tables, row.info.owner, limits, added)
        if new:
            try:
                self._ensure_vector_index(row.info)
            except StoreError:
                # The documents are stored and exactly searchable; the next collection of
                # this dimension and metric, or ensure_vector_index, builds the index.
                logger.warning("Could not build the vector index after a write", exc_info=True)
        return records

    def _delete_document(self, collection: CollectionInfo, document_id: str) -> None:
        with self._db.writing(pipeline=True) as conn:
            writes.delete_document(conn, self._tables, collection.key, document_id)

    def _get_document(self, collection: CollectionInfo, document_id: str) -> DocumentRecord:
        return reads.get_document(self._db, self._tables, collection.key, document_id)

    def _find_document(self, collection: CollectionInfo, source: str) -> DocumentRecord | None:
        return reads.find_document(self._db, self._tables, collection.key, source)

    def find_sources(
        self, name: str, *, owner: str | None = None, sources: Sequence[str]
    ) -> tuple[CollectionInfo, dict[str, tuple[DocumentRecord, list[ChunkRecord]]]]:
        """The owner's collection and, for each of ``sources`` stored in it, the document and
        its chunks in index order, in one round trip; raise ``CollectionNotFoundError`` if
        the collection is absent. Empty and absent sources are missing from the map.
        """
        wanted = CollectionKey(validate_collection_name(name), owner)
        return reads.find_sources(self._db, self._tables, wanted, sources)

    def _list_documents(
        self, collection: CollectionInfo, limit: int, offset: int
    ) -> list[DocumentRecord]:
        return reads.list_documents(self._db, self._tables, collection.key, limit, offset)

    def _document_chunks(self, collection: CollectionInfo, document_id: str) -> list[ChunkRecord]:
        return reads.document_chunks(self._db, self._tables, collection.key, document_id)

    # -- search legs -------------------------------------------------------------------

    def _dense(
        self,
        collection: CollectionInfo,
        vector: Sequence[float],
        n: int,
        context: SearchContext,
    ) -> list[ScoredChunk]:
        """Ties go to the smaller chunk id (``dense.py``)."""
        where = sql_filter(context)

        def search(conn: psycopg.Connection[Any]) -> list[ScoredChunk]:
            row = reads.collection_row(conn, self._tables, collection)
            validate_embedding(vector, row.info.dimensions)
            if n == 0:
                return []
            hits, self._plans.dense = dense_search(
                conn,
                self._tables,
                row,
                vector,
                n,
                where,
                ef_search=self.ef_search,
                exact_below=self.exact_search_below,
            )
            return hits

        return self._db.read(search)

    def _bm25(
        self, collection: CollectionInfo, query: str, n: int, context: SearchContext
    ) -> list[ScoredChunk]:
        return lexical_leg(
            self._db, self._tables, bm25_search, context.tokens, collection, query, n, context
        )

    def _fuzzy(
        self, collection: CollectionInfo, query: str, n: int, context: SearchContext
    ) -> list[ScoredChunk]:
        return lexical_leg(
            self._db, self._tables, fuzzy_search, context.fuzzy_words, collection, query, n, context
        )

    def _correct_query(self, collection: CollectionInfo, query: str) -> QueryCorrection:
        def correct(conn: psycopg.Connection[Any]) -> QueryCorrection:
            row = reads.collection_row(conn, self._tables, collection)
            return correction.correct_query(conn, self._tables, row, query)

        return self._db.read(correct)

    # -- helpers -----------------------------------------------------------------------

    def _ensure_vector_index(self, collection: CollectionInfo) -> None:
        # Outside the insert's transaction: building it over existing rows can take a while,
        # and the collection is usable (exactly searched) before it exists.
        with self._db.transaction() as conn:
            ensure_vector_index(
                conn,
                self._db.schema,
                collection.dimensions,
                collection.metric,
                m=self.hnsw_m,
                ef_construction=self.hnsw_ef_construction,
            )
