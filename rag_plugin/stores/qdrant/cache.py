"""An embedding cache kept in Qdrant (E7), so a Qdrant deployment holds all its RAG data there.

One point per (namespace, model, content hash) in the Qdrant collection ``{prefix}_embeddings``,
its vector in the payload: the cache is read by id, never searched, so it needs no vector
index and a vector of any size fits. Namespaces keep tenants' caches apart, as the PostgreSQL
cache's schemas do. Get one with :meth:`QdrantStore.embedding_cache
<rag_plugin.stores.qdrant.QdrantStore.embedding_cache>`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager

from qdrant_client import QdrantClient, models

from rag_plugin.stores.qdrant.layout import match

__all__ = ["QdrantEmbeddingCache"]

_CACHE = uuid.UUID("5b0c9a3e-61d2-4f7b-a8e4-2c9d7f1e6b35")


class QdrantEmbeddingCache:
    """Vectors by model and content hash in one Qdrant collection, within a namespace.

    ``using()`` holds the store's client (its lock, errors naming the server, the collection
    created on first use).
    """

    def __init__(
        self,
        using: Callable[[], AbstractContextManager[QdrantClient]],
        name: str,
        namespace: str,
    ) -> None:
        self._using = using
        self._name = name
        self._namespace = namespace

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """Return the cached vectors among ``hashes`` for ``model``; misses are left out."""
        ids = {self._point_id(model, digest): digest for digest in hashes}
        wanted = list(ids)
        found: dict[str, list[float]] = {}
        if not wanted:
            return found
        with self._using() as client:
            for start in range(0, len(wanted), 1024):
                for point in client.retrieve(
                    self._name, ids=wanted[start : start + 1024], with_payload=["vector"]
                ):
                    vector = (point.payload or {})["vector"]
                    found[ids[str(point.id)]] = [float(x) for x in vector]
        return found

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store ``vectors`` (hash → vector) for ``model``, replacing any previous entry."""
        points = [
            models.PointStruct(
                id=self._point_id(model, digest),
                vector={},
                payload={
                    "namespace": self._namespace,
                    "model": model,
                    "hash": digest,
                    "vector": [float(x) for x in vector],
                },
            )
            for digest, vector in vectors.items()
        ]
        with self._using() as client:
            for start in range(0, len(points), 256):
                client.upsert(self._name, points=points[start : start + 256])

    def __len__(self) -> int:
        with self._using() as client:
            counted = client.count(self._name, count_filter=self._mine(), exact=True)
        return int(counted.count)

    def clear(self) -> None:
        """Forget every vector cached in this namespace."""
        with self._using() as client:
            client.delete(self._name, points_selector=models.FilterSelector(filter=self._mine()))

    def _mine(self) -> models.Filter:
        return models.Filter(must=[match("namespace", self._namespace)])

    def _point_id(self, model: str, digest: str) -> str:
        return str(uuid.uuid5(_CACHE, json.dumps([self._namespace, model, digest])))
