"""Where the Qdrant store keeps what: its Qdrant collections, point ids and payload keys.

Four kinds of point, in four kinds of Qdrant collection named ``{prefix}_...``:

- ``{prefix}_collections``: one point per collection of ours (no vector): name, owner,
  namespace, model, dimension, metric, analyzer and Σdl (BM25's total chunk length);
- ``{prefix}_documents``: one point per document (no vector): its record and the generation
  of chunks it stands for (``generation``; none yet while its first write is in flight);
- ``{prefix}_chunks_{dimensions}_{metric}``: every chunk of every collection with that vector
  size and metric (Qdrant's advice for multitenancy: one Qdrant collection, the tenant as a
  payload key with an ``is_tenant`` keyword index, filtered inside every query). A chunk point
  has the named dense vector ``dense``, the sparse vector ``bm25`` and the payload below;
- ``{prefix}_vocabulary``: one point per (collection, fuzzy word or analyzer term), with the
  entry's deletion keys (:mod:`rag_plugin.lexical.near_keys`) and, for words, its prefixes.

And, once an embedding cache is asked for, ``{prefix}_embeddings`` (:mod:`.cache`).

Chunk points are named by chunk id *and* generation, so a document's new chunks never
overwrite its old ones: a write puts the new generation in invisible (``live`` false), makes
it live, then deletes the old one (:mod:`rag_plugin.stores.qdrant.writes`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from qdrant_client import models

from rag_plugin.vectors import DistanceMetric

__all__ = [
    "CHUNK_INDEXES",
    "DENSE",
    "SPARSE",
    "Layout",
    "chunk_point_id",
    "collection_point_id",
    "document_point_id",
    "live_chunks",
    "match",
    "vocabulary_point_id",
]

DENSE = "dense"
SPARSE = "bm25"

_NAMESPACE = uuid.UUID("0f5d7e8a-3c41-4b6e-9d2a-7e1c5b3f8a64")

QDRANT_DISTANCES = {
    DistanceMetric.COSINE: models.Distance.COSINE,
    DistanceMetric.L2: models.Distance.EUCLID,
    DistanceMetric.INNER_PRODUCT: models.Distance.DOT,
}

# Payload keys every query filters on, each with a keyword index (``collection`` as the tenant).
CHUNK_INDEXES = ("collection", "document_id", "generation", "terms", "words", "fx")


def collection_point_id(namespace: str, owner: str | None, name: str) -> str:
    """The point id of a collection of ours, which is also the value of every one of its
    points' ``collection`` key: named by the namespace (the portal's tenant), owner and name."""
    return str(uuid.uuid5(_NAMESPACE, json.dumps(["collection", namespace, owner, name])))


def document_point_id(collection: str, document_id: str) -> str:
    """The point id of a document: its id within its collection (two namespaces may hold
    documents of one id)."""
    return str(uuid.uuid5(_NAMESPACE, json.dumps(["document", collection, document_id])))


def chunk_point_id(chunk_id: str, generation: str) -> str:
    """The point id of one generation of a chunk."""
    return str(uuid.uuid5(_NAMESPACE, json.dumps(["chunk", chunk_id, generation])))


def vocabulary_point_id(collection: str, kind: str, entry: str) -> str:
    """The point id of a vocabulary entry (``kind`` is ``word`` or ``term``)."""
    return str(uuid.uuid5(_NAMESPACE, json.dumps([collection, kind, entry])))


def match(key: str, value: Any) -> models.FieldCondition:
    """``key`` equals ``value`` (for a list payload: holds it)."""
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def live_chunks(key: str) -> models.Filter:
    """The chunk points of collection ``key`` that a write has made live (what legs see)."""
    return models.Filter(must=[match("collection", key), match("live", True)])


@dataclass(frozen=True, slots=True)
class Layout:
    """The names of one store's Qdrant collections."""

    prefix: str

    @property
    def collections(self) -> str:
        return f"{self.prefix}_collections"

    @property
    def documents(self) -> str:
        return f"{self.prefix}_documents"

    @property
    def vocabulary(self) -> str:
        return f"{self.prefix}_vocabulary"

    @property
    def embeddings(self) -> str:
        return f"{self.prefix}_embeddings"

    def chunks(self, dimensions: int, metric: DistanceMetric) -> str:
        """The Qdrant collection holding every chunk of this size and metric."""
        return f"{self.prefix}_chunks_{dimensions}_{metric.value}"
