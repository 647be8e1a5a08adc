"""The Qdrant store's connection and the lookups its reads and writes share: the client
(server or local mode), its lock, the store's Qdrant collections created on first use, and
the points of collections and documents found by id.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from rag_plugin.exceptions import (
    CollectionNotFoundError,
    ConfigurationError,
    StoreError,
)
from rag_plugin.stores.base import (
    ChunkRecord,
    CollectionInfo,
    DocumentRecord,
    new_document_id,
)
from rag_plugin.stores.qdrant.layout import (
    CHUNK_INDEXES,
    DENSE,
    QDRANT_DISTANCES,
    SPARSE,
    Layout,
    collection_point_id,
    document_point_id,
    live_chunks,
    match,
)
from rag_plugin.stores.qdrant.lexicon import MirroredLexicon, QdrantLexicon
from rag_plugin.vectors import DistanceMetric

__all__ = [
    "QdrantSpace",
    "chunk_record",
    "collection_info",
    "committed",
    "committed_point",
    "document_record",
    "holding",
    "owner_key",
    "payload_of",
]


_PREFIX_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


class QdrantSpace:
    """Where a Qdrant store's points are, and how it reaches them (:mod:`.store` builds on
    it)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key_env: str | None = None,
        prefer_grpc: bool = False,
        location: str | None = None,
        path: str | os.PathLike[str] | None = None,
        prefix: str = "rag",
        namespace: str = "",
        timeout: int | None = None,
        mirror: bool | None = None,
    ) -> None:
        if sum(value is not None for value in (url, location, path)) != 1:
            raise ConfigurationError(
                "QdrantStore needs exactly one of url= (a Qdrant server), location=':memory:' "
                "or path= (Qdrant in this process)."
            )
        if not prefix or set(prefix) - _PREFIX_CHARACTERS or not prefix[0].isalpha():
            raise ConfigurationError(
                f"The Qdrant prefix must be lowercase letters, digits and '_', starting with a "
                f"letter; got {prefix!r}."
            )
        api_key = None
        if api_key_env:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise ConfigurationError(
                    f"The environment variable {api_key_env} (api_key_env, the Qdrant API key) "
                    "is not set."
                )
        if mirror and url is not None:
            raise ConfigurationError(
                "mirror=True is for local mode only: other processes write to a Qdrant server, "
                "so this process cannot keep its words in memory."
            )
        self._where = url if url is not None else str(location if location is not None else path)
        self._local = url is None
        try:
            self._client = QdrantClient(
                url=url,
                api_key=api_key,
                prefer_grpc=prefer_grpc,
                location=location,
                path=None if path is None else str(path),
                timeout=timeout,
                # A server's version check runs in a thread that can only warn; the first
                # request says clearly when the server cannot be reached.
                check_compatibility=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ConfigurationError(f"Could not open Qdrant at {self._where}: {exc}") from exc
        self._layout = Layout(prefix)
        self._namespace = namespace
        # Local mode is not safe for threads; one lock also orders this process's writes.
        self._lock = threading.RLock()
        self._ready: set[str] = set()  # shared with for_namespace's stores
        mirrored = self._local if mirror is None else mirror
        self._lexicon = (MirroredLexicon if mirrored else QdrantLexicon)(self._client, self._layout)

    def close(self) -> None:
        """Close the client (and, in local mode, release the folder); the stores
        :meth:`for_namespace` made share it, so they close with it."""
        self._client.close()

    @property
    def namespace(self) -> str:
        """The namespace this store's collections are in."""
        return self._namespace

    # -- shared lookups -----------------------------------------------------------------------

    @contextmanager
    def _using(self) -> Iterator[None]:
        """Hold the lock, create the store's Qdrant collections on first use, and turn a
        failure to reach Qdrant into an error naming where it was looked for."""
        with self._lock:
            try:
                self._ensure_base()
                yield
            except (ResponseHandlingException, ConnectionError, OSError) as exc:
                raise ConfigurationError(
                    f"Qdrant at {self._where} (the Qdrant url setting) cannot be reached: {exc}"
                ) from exc
            except UnexpectedResponse as exc:
                raise StoreError(f"Qdrant at {self._where} refused a request: {exc}") from exc

    @contextmanager
    def _plain(self, name: str) -> Iterator[QdrantClient]:
        """:meth:`_using` for the Qdrant collection ``name`` of points without vectors,
        created on first use with its ``namespace`` indexed."""
        with self._using():
            if name not in self._ready:
                if not self._client.collection_exists(name):
                    self._client.create_collection(name, vectors_config={})
                    self._index(name, "namespace", models.PayloadSchemaType.KEYWORD)
                self._ready.add(name)
            yield self._client

    def _ensure_base(self) -> None:
        for name in (self._layout.collections, self._layout.documents, self._layout.vocabulary):
            if name in self._ready:
                continue
            if not self._client.collection_exists(name):
                self._client.create_collection(name, vectors_config={})
                if name == self._layout.documents:
                    self._index(name, "seq", models.PayloadSchemaType.INTEGER)
                for field in ("collection", "source", "kind", "keys", "prefixes", "owner_key"):
                    self._index(name, field, models.PayloadSchemaType.KEYWORD)
            self._ready.add(name)

    def _ensure_chunks(self, info: CollectionInfo) -> str:
        """The Qdrant collection for ``info``'s chunks, created when it is the first of its
        dimension and metric."""
        name = self._chunk_collection(info)
        if name not in self._ready:
            if not self._client.collection_exists(name):
                self._client.create_collection(
                    name,
                    vectors_config={
                        DENSE: models.VectorParams(
                            size=info.dimensions, distance=QDRANT_DISTANCES[info.metric]
                        )
                    },
                    sparse_vectors_config={SPARSE: models.SparseVectorParams()},
                )
                for field in CHUNK_INDEXES:
                    self._index(name, field, models.PayloadSchemaType.KEYWORD)
                self._index(name, "live", models.PayloadSchemaType.BOOL)
            self._ready.add(name)
        return name

    def _index(self, name: str, field: str, schema: models.PayloadSchemaType) -> None:
        """A payload index (local mode has none: it scans); ``collection`` is the tenant."""
        if self._local:
            return
        if field == "collection":
            tenant = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
            self._client.create_payload_index(name, field, field_schema=tenant)
        else:
            self._client.create_payload_index(name, field, field_schema=schema)

    def _chunk_collection(self, info: CollectionInfo) -> str:
        return self._layout.chunks(info.dimensions, info.metric)

    def _put_collection(self, info: CollectionInfo) -> None:
        key = collection_point_id(self._namespace, info.owner, info.name)
        self._ensure_chunks(info)
        self._client.upsert(
            self._layout.collections,
            points=[
                models.PointStruct(
                    id=key,
                    vector={},
                    payload={
                        "namespace": self._namespace,
                        "owner": info.owner,
                        "owner_key": owner_key(info.owner),
                        "name": info.name,
                        "dimensions": info.dimensions,
                        "embedding_model": info.embedding_model,
                        "metric": info.metric.value,
                        "analyzer": info.analyzer,
                        "length": 0,
                        "chunks": 0,
                    },
                )
            ],
        )

    def _collection_point(self, owner: str | None, name: str) -> models.Record | None:
        found = self._client.retrieve(
            self._layout.collections,
            ids=[collection_point_id(self._namespace, owner, name)],
            with_payload=True,
        )
        return found[0] if found else None

    def _resolve(self, collection: CollectionInfo) -> tuple[CollectionInfo, str]:
        # Called by the store's hooks only: Store's public methods checked the name.
        point = self._collection_point(collection.owner, collection.name)
        if point is None:
            raise CollectionNotFoundError(collection.name)
        return collection_info(payload_of(point)), str(point.id)

    def _counted(self, payload: dict[str, Any]) -> CollectionInfo:
        info = collection_info(payload)
        key = collection_point_id(self._namespace, info.owner, info.name)
        chunks = self._chunk_collection(info)
        live = live_chunks(key)
        return replace(
            info,
            document_count=self._count(self._layout.documents, committed(key)),
            chunk_count=self._count(chunks, live) if self._client.collection_exists(chunks) else 0,
        )

    def _count(self, name: str, where: models.Filter) -> int:
        return int(self._client.count(name, count_filter=where, exact=True).count)

    def _document_point(self, key: str, document_id: str) -> models.Record | None:
        found = self._client.retrieve(
            self._layout.documents, ids=[document_point_id(key, document_id)], with_payload=True
        )
        if not found or payload_of(found[0]).get("collection") != key:
            return None
        return found[0]

    def _source_point(self, key: str, info: CollectionInfo, source: str) -> models.Record | None:
        """The point of ``info``'s document stored under ``source``: a lookup by id, since a
        document with a source has the id :func:`new_document_id` names."""
        return self._document_point(key, new_document_id(info.key, source))

    def _statistics(self, key: str) -> tuple[int, int]:
        """Σdl and the chunk count kept on the collection's point (what a write's sparse
        vectors take avgdl from)."""
        found = self._client.retrieve(
            self._layout.collections, ids=[key], with_payload=["length", "chunks"]
        )
        payload = payload_of(found[0]) if found else {}
        return int(payload.get("length", 0)), int(payload.get("chunks", 0))

    def _add_statistics(self, key: str, length: int, chunks: int) -> None:
        if length or chunks:
            stored_length, stored_chunks = self._statistics(key)
            self._client.set_payload(
                self._layout.collections,
                payload={"length": stored_length + length, "chunks": stored_chunks + chunks},
                points=[key],
            )


def payload_of(point: models.Record | models.ScoredPoint) -> dict[str, Any]:
    """A point's payload (every point this store writes has one)."""
    return point.payload or {}


def committed_point(point: models.Record | None) -> models.Record | None:
    """A document's ``point`` if a write has made its chunks live (what reads see), else None
    (no document, or its first write is in flight or died)."""
    return point if point is not None and payload_of(point).get("generation") else None


def owner_key(owner: str | None) -> str:
    """A keyword for the owner that tells the shared collections (None) from every owner."""
    return "shared" if owner is None else f"owner:{owner}"


def committed(key: str) -> models.Filter:
    """A collection's documents whose chunks a write has made live."""
    return models.Filter(
        must=[match("collection", key)],
        must_not=[models.IsEmptyCondition(is_empty=models.PayloadField(key="generation"))],
    )


def holding(live: models.Filter, field: str, entry: str) -> models.Filter:
    return models.Filter(must=[live, match(field, entry)])


def collection_info(payload: dict[str, Any]) -> CollectionInfo:
    return CollectionInfo(
        name=payload["name"],
        owner=payload["owner"],
        dimensions=int(payload["dimensions"]),
        embedding_model=payload["embedding_model"],
        metric=DistanceMetric(payload["metric"]),
        analyzer=payload["analyzer"],
    )


def document_record(info: CollectionInfo, payload: dict[str, Any]) -> DocumentRecord:
    return DocumentRecord(
        id=payload["id"],
        collection=info.name,
        source=payload["source"],
        title=payload["title"],
        tags=tuple(payload["tags"]),
        content_hash=payload["content_hash"],
        created_at=datetime.fromisoformat(payload["created_at"]),
        chunk_count=int(payload["chunk_count"]),
        metadata=dict(payload["metadata"]),
    )


def chunk_record(payload: dict[str, Any]) -> ChunkRecord:
    return ChunkRecord(
        id=payload["chunk_id"],
        document_id=payload["document_id"],
        index=int(payload["index"]),
        content=payload["content"],
        start_offset=int(payload["start_offset"]),
        end_offset=int(payload["end_offset"]),
        metadata=dict(payload["metadata"]),
    )
