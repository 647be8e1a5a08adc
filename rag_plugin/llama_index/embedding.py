"""LlamaIndex adapter (E8): any :class:`~rag_plugin.embedding.Embedder` as a ``BaseEmbedding``."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from pydantic import PrivateAttr

from rag_plugin.embedding.base import Embedder

__all__ = ["RagEmbedding"]

# LlamaIndex cuts texts into batches of embed_batch_size before calling us; our embedder
# batches for the model itself, so the largest allowed value lets dedup and the cache see
# as many texts at once as possible.
_LLAMA_INDEX_MAX_BATCH = 2048


class RagEmbedding(BaseEmbedding):
    """Delegates every LlamaIndex embedding call to a wrapped embedder; adds no logic.

    Dedup, caching, batching and L2 normalisation are the embedder's. ``model_name`` is read
    from the embedder, which for :class:`~rag_plugin.embedding.FastEmbedEmbedder` loads the model.
    """

    _embedder: Embedder = PrivateAttr()

    def __init__(
        self, embedder: Embedder, *, embed_batch_size: int = _LLAMA_INDEX_MAX_BATCH, **kwargs: Any
    ) -> None:
        super().__init__(
            model_name=embedder.model_name, embed_batch_size=embed_batch_size, **kwargs
        )
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serialises this component under."""
        return "RagEmbedding"

    @property
    def embedder(self) -> Embedder:
        """The wrapped embedder."""
        return self._embedder

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._embedder.embed_query(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._embedder.embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._embedder.embed(texts)

    # The embedders are synchronous and CPU- or network-bound: run them off the event loop.
    async def _aget_query_embedding(self, query: str) -> Embedding:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)
