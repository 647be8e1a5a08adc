"""A three-chunk ``policies`` collection with table-looked-up vectors, so retrieval orders
are known in advance (the answer and chat tests)."""

from __future__ import annotations

from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput
from rag_plugin.stores.memory import MemoryStore

CHUNKS = {
    "Refunds are paid within 30 days.": [1.0, 0.0, 0.0],
    "Shipping takes five working days.": [0.8, 0.6, 0.0],
    "The office closes at five.": [0.0, 0.0, 1.0],
}


def add_policies(store: MemoryStore) -> CollectionInfo:
    """The ``policies`` collection: one document (``policies.md``) of the :data:`CHUNKS`."""
    info = store.create_collection("policies", dimensions=3, embedding_model="table")
    inputs, start = [], 0
    for index, (text, vector) in enumerate(CHUNKS.items()):
        inputs.append(ChunkInput(index, text, start, start + len(text), vector))
        start += len(text) + 1
    store.upsert_document(info, DocumentInput(source="policies.md", title="Policies"), inputs)
    return info
