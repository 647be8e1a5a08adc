"""The Qdrant store (``pip install "rag-plugin[qdrant]"``): see :mod:`.store`."""

from rag_plugin.stores.qdrant.cache import QdrantEmbeddingCache
from rag_plugin.stores.qdrant.store import QdrantStore

__all__ = ["QdrantEmbeddingCache", "QdrantStore"]
