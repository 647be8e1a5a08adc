"""A three-chunk ``policies`` collection with table-looked-up vectors, so retrieval orders
are known in advance (the answer and chat tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_plugin.embedding.base import Embedder
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput
from rag_plugin.stores.memory import MemoryStore

CHUNKS = {
    "Refunds are paid within 30 days.": [1.0, 0.0, 0.0],
    "Shipping takes five working days.": [0.8, 0.6, 0.0],
    "The office closes at five.": [0.0, 0.0, 1.0],
}


class TableEmbedder(Embedder):
    """Vectors looked up in a table, so the retrieval order is known in advance."""

    def __init__(self, table: Mapping[str, Sequence[float]]) -> None:
        super().__init__()
        self._table = table

    @property
    def model_name(self) -> str:
        return "table"

    @property
    def dimensions(self) -> int:
        return 3

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        return [list(self._table[text]) for text in texts]


def add_policies(store: MemoryStore) -> CollectionInfo:
    """The ``policies`` collection: one document (``policies.md``) of the :data:`CHUNKS`."""
    info = store.create_collection("policies", dimensions=3, embedding_model="table")
    inputs, start = [], 0
    for index, (text, vector) in enumerate(CHUNKS.items()):
        inputs.append(ChunkInput(index, text, start, start + len(text), vector))
        start += len(text) + 1
    store.upsert_document(info, DocumentInput(source="policies.md", title="Policies"), inputs)
    return info
