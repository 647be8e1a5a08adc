"""The Qdrant store: every collection, document, chunk and word kept in Qdrant (SPEC V6).

For a user who keeps vectors in a Qdrant server or cluster (sharded and replicated across
machines) instead of PostgreSQL, and, with qdrant-client's local mode (``location=":memory:"``
or ``path=folder``), for tests and single-process use. All its state is in Qdrant, so any
number of app processes share one server. Where each thing lives: :mod:`.layout`; how the
lexical legs score exactly from Qdrant's candidates: :mod:`.lexical`; how a write stays
repairable without transactions: :mod:`.writes`; the connection and shared lookups:
:mod:`.space`; the search legs: :mod:`.legs`, and where their words are looked up (Qdrant,
or a mirror in local mode): :mod:`.lexicon`; the embedding cache: :mod:`.cache`.

Metadata filters become Qdrant conditions inside every leg's query, before ranking, with the
memory store's rules exactly (:mod:`.filters`); the few forms Qdrant cannot express exactly are
evaluated over the collection's chunk payloads, once per search, and join as the ids they keep.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from qdrant_client import models

from rag_plugin.exceptions import (
    CollectionExistsError,
    CollectionNotFoundError,
    ConfigurationError,
    DocumentNotFoundError,
)
from rag_plugin.stores.base import (
    ChunkInput,
    ChunkRecord,
    CollectionInfo,
    CollectionKey,
    DocumentInput,
    DocumentRecord,
    Store,
    check_same_model,
)
from rag_plugin.stores.prepared import prepare_document
from rag_plugin.stores.qdrant.cache import QdrantEmbeddingCache
from rag_plugin.stores.qdrant.layout import (
    collection_point_id,
    document_point_id,
    match,
)
from rag_plugin.stores.qdrant.legs import CHUNK_FIELDS, QdrantLegs
from rag_plugin.stores.qdrant.lexical import (
    scroll_all,
)
from rag_plugin.stores.qdrant.space import (
    chunk_record,
    collection_info,
    committed,
    committed_point,
    document_record,
    owner_key,
    payload_of,
)
from rag_plugin.stores.qdrant.writes import QdrantWrites
from rag_plugin.stores.usage import Usage, WriteLimits

__all__ = ["QdrantStore"]


_NO_USAGE = ConfigurationError(
    "The Qdrant store keeps no usage and cannot enforce usage limits; use the PostgreSQL store "
    "for quotas on stored documents."
)


class QdrantStore(QdrantWrites, QdrantLegs, Store):
    """Collections kept in Qdrant: a server (``url=``) or qdrant-client's local mode.

    ``QdrantStore(url="http://localhost:6334", api_key_env="QDRANT_API_KEY",
    prefer_grpc=True)`` talks to a server (the seed's ``database.qdrant`` settings: the API key
    is read from the named environment variable, never passed in); ``location=":memory:"`` or
    ``path=folder`` run Qdrant in this process. ``namespace`` separates users of one Qdrant
    (the portal passes its tenant); ``prefix`` names the Qdrant collections. In local mode
    the lexical legs read words from an in-process mirror of Qdrant's points
    (:mod:`.lexicon`); ``mirror=False`` makes them ask Qdrant, as they do a server.
    """

    def for_namespace(self, namespace: str) -> QdrantStore:
        """A store of another namespace on the same client (one client per process serves
        every tenant; local mode can open its folder only once)."""
        sibling = copy.copy(self)
        sibling._namespace = namespace
        return sibling

    def embedding_cache(self) -> QdrantEmbeddingCache:
        """An embedding cache (E7) in this Qdrant and namespace, for an embedder's
        ``cache=``: with it, everything the engine keeps is in Qdrant."""
        name = self._layout.embeddings
        return QdrantEmbeddingCache(lambda: self._plain(name), name, self._namespace)

    def drop_namespace(self, namespace: str) -> int:
        """Delete every collection of ``namespace``, whoever owns it, and its embedding cache
        (the portal calls it when a tenant is deleted); return how many collections there
        were."""
        store = self.for_namespace(namespace)
        with store._using():
            points = scroll_all(
                store._client.scroll,
                collection_name=store._layout.collections,
                scroll_filter=models.Filter(must=[match("namespace", namespace)]),
                with_payload=True,
            )
        for point in points:
            info = collection_info(payload_of(point))
            store.delete_collection(info.name, owner=info.owner)
        store.embedding_cache().clear()
        return len(points)

    # -- collections -------------------------------------------------------------------

    def _create_collection(self, collection: CollectionInfo) -> CollectionInfo:
        with self._using():
            if self._collection_point(collection.owner, collection.name) is not None:
                raise CollectionExistsError(collection.name)
            self._put_collection(collection)
        return collection

    def _get_collection(self, key: CollectionKey) -> CollectionInfo:
        with self._using():
            point = self._collection_point(key.owner, key.name)
            if point is None:
                raise CollectionNotFoundError(key.name)
            return self._counted(payload_of(point))

    def list_collections(self, *, owner: str | None = None) -> list[CollectionInfo]:
        """Return the owner's collections (``owner=None``: the shared ones), sorted by name."""
        with self._using():
            points = scroll_all(
                self._client.scroll,
                collection_name=self._layout.collections,
                scroll_filter=models.Filter(
                    must=[match("namespace", self._namespace), match("owner_key", owner_key(owner))]
                ),
                with_payload=True,
            )
            found = [self._counted(payload_of(point)) for point in points]
        return sorted(found, key=lambda info: info.name)

    def _delete_collection(self, wanted: CollectionKey) -> int:
        with self._using():
            point = self._collection_point(wanted.owner, wanted.name)
            if point is None:
                raise CollectionNotFoundError(wanted.name)
            info = collection_info(payload_of(point))
            key = str(point.id)
            self._lexicon.forget(key)
            documents = self._count(self._layout.documents, committed(key))
            everything = models.FilterSelector(
                filter=models.Filter(must=[match("collection", key)])
            )
            # Its points first and its own point last: a crash in between leaves a collection
            # that a second delete finishes, never points of a collection nobody can reach.
            chunks = self._layout.chunks(info.dimensions, info.metric)
            if self._client.collection_exists(chunks):
                self._client.delete(chunks, points_selector=everything)
            self._client.delete(self._layout.vocabulary, points_selector=everything)
            self._client.delete(self._layout.documents, points_selector=everything)
            self._client.delete(
                self._layout.collections,
                points_selector=models.PointIdsList(points=[key]),
            )
        return documents

    # -- documents ---------------------------------------------------------------------

    def _upsert_documents(
        self,
        collection: CollectionInfo,
        documents: Sequence[tuple[DocumentInput, Sequence[ChunkInput]]],
        *,
        create: bool,
        limits: WriteLimits | None,
    ) -> list[DocumentRecord]:
        """Store documents and their chunks, replacing those with the same source (see the
        module docstring for what happens on a crash). Usage ``limits`` are refused: Qdrant
        has no transaction in which to check them against concurrent writes."""
        if limits is not None and limits.any:
            raise _NO_USAGE
        planned = collection if create else None
        with self._using():
            point = self._collection_point(collection.owner, collection.name)
            if point is None:
                if planned is None:
                    raise CollectionNotFoundError(collection.name)
                info = planned
            else:
                info = collection_info(payload_of(point))
                if planned is not None:
                    check_same_model(info, planned)
            prepared = [prepare_document(info, doc, chunks) for doc, chunks in documents]
            if point is None:
                self._put_collection(info)
            key = collection_point_id(self._namespace, info.owner, info.name)
            return [self._write(info, key, item) for item in prepared]

    def usage(self, *, owner: str | None = None, everyone: bool = False) -> Usage:
        """Not kept by this store (see :meth:`upsert_documents`)."""
        raise _NO_USAGE

    def _delete_document(self, collection: CollectionInfo, document_id: str) -> None:
        with self._using():
            info, key = self._resolve(collection)
            stored = committed_point(self._document_point(key, document_id))
            if stored is None:
                raise DocumentNotFoundError(document_id)
            length, chunks = self._remove_chunks(info, key, document_id, keep=None)
            self._client.delete(
                self._layout.documents,
                points_selector=models.PointIdsList(points=[document_point_id(key, document_id)]),
            )
            self._add_statistics(key, -length, -chunks)

    def _get_document(self, collection: CollectionInfo, document_id: str) -> DocumentRecord:
        with self._using():
            info, key = self._resolve(collection)
            stored = committed_point(self._document_point(key, document_id))
        if stored is None:
            raise DocumentNotFoundError(document_id)
        return document_record(info, payload_of(stored))

    def _find_document(self, collection: CollectionInfo, source: str) -> DocumentRecord | None:
        with self._using():
            info, key = self._resolve(collection)
            found = committed_point(self._source_point(key, info, source))
        if found is None:
            return None
        return document_record(info, payload_of(found))

    def _list_documents(
        self, collection: CollectionInfo, limit: int, offset: int
    ) -> list[DocumentRecord]:
        if limit == 0:
            return []
        with self._using():
            info, key = self._resolve(collection)
            points, _ = self._client.scroll(
                self._layout.documents,
                scroll_filter=committed(key),
                limit=offset + limit,
                order_by=models.OrderBy(key="seq", direction=models.Direction.DESC),
                with_payload=True,
            )
        return [document_record(info, payload_of(point)) for point in points[offset:]]

    def _document_chunks(self, collection: CollectionInfo, document_id: str) -> list[ChunkRecord]:
        with self._using():
            info, key = self._resolve(collection)
            stored = committed_point(self._document_point(key, document_id))
            if stored is None:
                raise DocumentNotFoundError(document_id)
            points = scroll_all(
                self._client.scroll,
                collection_name=self._chunk_collection(info),
                scroll_filter=models.Filter(
                    must=[
                        match("collection", key),
                        match("document_id", document_id),
                        match("generation", payload_of(stored)["generation"]),
                    ]
                ),
                with_payload=CHUNK_FIELDS,
            )
        chunks = [chunk_record(payload_of(point)) for point in points]
        return sorted(chunks, key=lambda chunk: chunk.index)
