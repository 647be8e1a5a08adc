"""Embedding backends behind one contract: dedup, cache, batching and L2 normalisation."""

from rag_plugin.embedding.base import DEFAULT_BATCH_SIZE, Embedder, EmbedderStats
from rag_plugin.embedding.cache import EmbeddingCache, InMemoryEmbeddingCache
from rag_plugin.embedding.dedup import DedupPlan, content_hash_hex, normalize_for_dedup

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DedupPlan",
    "Embedder",
    "EmbedderStats",
    "EmbeddingCache",
    "InMemoryEmbeddingCache",
    "content_hash_hex",
    "normalize_for_dedup",
]
