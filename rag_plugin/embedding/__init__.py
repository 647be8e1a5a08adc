"""Embedding backends behind one contract: dedup, cache, batching and L2 normalisation."""

from rag_plugin.embedding.base import DEFAULT_BATCH_SIZE, Embedder, EmbedderStats
from rag_plugin.embedding.cache import (
    EmbeddingCache,
    InMemoryEmbeddingCache,
    SqliteEmbeddingCache,
)
from rag_plugin.embedding.dedup import DedupPlan, content_hash_hex, normalize_for_dedup
from rag_plugin.embedding.e5_backend import E5_MODEL, E5Embedder
from rag_plugin.embedding.fastembed_backend import (
    DEFAULT_MODEL,
    FastEmbedEmbedder,
    clear_loaded_models,
    model_load_count,
)
from rag_plugin.embedding.http import HttpEmbedder
from rag_plugin.embedding.model_files import BUNDLED_MODEL, BUNDLED_MODEL_DIMENSIONS

__all__ = [
    "BUNDLED_MODEL",
    "BUNDLED_MODEL_DIMENSIONS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MODEL",
    "E5_MODEL",
    "DedupPlan",
    "E5Embedder",
    "Embedder",
    "EmbedderStats",
    "EmbeddingCache",
    "FastEmbedEmbedder",
    "HttpEmbedder",
    "InMemoryEmbeddingCache",
    "SqliteEmbeddingCache",
    "clear_loaded_models",
    "content_hash_hex",
    "model_load_count",
    "normalize_for_dedup",
]
