"""An embedder whose vectors are looked up in a table, so dense rankings are known in advance
(the engine, retrieval, answer and chat tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_plugin.embedding.base import Embedder


class TableEmbedder(Embedder):
    """Vectors from ``table`` (three dimensions); every text it embeds is kept in :attr:`seen`."""

    def __init__(self, table: Mapping[str, Sequence[float]], model: str = "table") -> None:
        super().__init__()
        self._table = table
        self._model = model
        self.seen: list[str] = []

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def dimensions(self) -> int:
        return 3

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return [list(self._table[text]) for text in texts]
