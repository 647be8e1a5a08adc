"""How the Qdrant store writes a document, with no multi-point transactions.

Qdrant changes one request's points atomically, not several
requests'. A write of documents therefore goes in steps, each safe to repeat (the same point
ids and payloads):

1. a new document's point is put in without a ``generation`` (so it is neither listed nor
   counted, and the next write of its source finds it and repairs it);
2. its vocabulary points are upserted, then its chunk points of a fresh generation, not yet
   ``live`` (every leg asks for ``live``);
3. one request makes that generation's chunks live, and the document's point takes
   the new record and ``generation``;
4. the document's chunks of every other generation are deleted, then the vocabulary entries
   no live chunk holds any more.

A crash before step 3 leaves the old document searchable and invisible new chunks; after it,
old chunks beside the new until step 4. Either way the next write of the same source (or a
delete of the document) removes every chunk not of its generation, so it repairs the
document. Between steps 3 and 4 a search may see a replaced document's old and new chunks.
A write of several documents is not all-or-nothing across them once step 1 has begun; it
validates everything first, so bad input changes nothing.

Σdl (for BM25's avgdl) is kept on the collection's point and updated after each write by
this process; writers in several processes at once can lose an update, which only shifts the
avgdl the next writes use (never which chunks are found).
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

from qdrant_client import models

from rag_plugin.stores.base import (
    CollectionInfo,
    DocumentRecord,
    chunk_id,
    new_document_id,
)
from rag_plugin.stores.prepared import PreparedDocument
from rag_plugin.stores.qdrant.filters import typed_payload
from rag_plugin.stores.qdrant.layout import (
    DENSE,
    SPARSE,
    chunk_point_id,
    document_point_id,
    live_chunks,
    match,
    vocabulary_point_id,
)
from rag_plugin.stores.qdrant.lexical import (
    entry_lookups,
    scroll_all,
    sparse_vector,
)
from rag_plugin.stores.qdrant.space import (
    QdrantSpace,
    holding,
    payload_of,
)

__all__ = ["QdrantWrites", "entry_point"]


class QdrantWrites(QdrantSpace):
    """The write protocol of the module docstring, as methods of the store."""

    # -- writing -----------------------------------------------------------------------

    def _write(self, info: CollectionInfo, key: str, prepared: PreparedDocument) -> DocumentRecord:
        """Store one prepared document in the steps of the module docstring."""
        self._lexicon.forget(key)
        document = prepared.document
        existing = self._source_point(key, info, document.source) if document.source else None
        document_id = (
            str(payload_of(existing)["id"])
            if existing is not None
            else new_document_id(info.key, document.source)
        )
        generation = uuid.uuid4().hex
        documents = self._layout.documents
        if existing is None:
            self._client.upsert(
                documents,
                points=[
                    models.PointStruct(
                        id=document_point_id(key, document_id),
                        vector={},
                        payload={
                            "collection": key,
                            "id": document_id,
                            "source": document.source,
                            "generation": None,
                        },
                    )
                ],
            )
        self._add_vocabulary(key, prepared)
        created_at = datetime.now(UTC)
        added_length = sum(chunk.length for chunk in prepared.chunks)
        stored_length, stored_chunks = self._statistics(key)
        count = stored_chunks + len(prepared.chunks)
        average = (stored_length + added_length) / count if count else 0.0
        fields = {
            "title": document.title,
            "source": document.source,
            "created_at": created_at.isoformat(),
        }
        points = []
        for item in prepared.chunks:
            chunk = item.chunk
            stored_id = chunk_id(document_id, chunk.index)
            metadata = {**prepared.metadata, **item.metadata, **fields, "tags": prepared.tags}
            points.append(
                models.PointStruct(
                    id=chunk_point_id(stored_id, generation),
                    vector={
                        DENSE: [float(x) for x in chunk.embedding],
                        SPARSE: sparse_vector(dict(item.term_frequencies), item.length, average),
                    },
                    payload={
                        "collection": key,
                        "document_id": document_id,
                        "generation": generation,
                        "live": False,
                        "chunk_id": stored_id,
                        "index": chunk.index,
                        "content": chunk.content,
                        "start_offset": chunk.start_offset,
                        "end_offset": chunk.end_offset,
                        "metadata": metadata,
                        "tf": dict(item.term_frequencies),
                        "dl": item.length,
                        "terms": sorted(item.term_frequencies),
                        "words": item.words,
                        **typed_payload(metadata),
                    },
                )
            )
        chunks = self._ensure_chunks(info)
        for start in range(0, len(points), 256):
            self._client.upsert(chunks, points=points[start : start + 256])
        # One request: Qdrant applies it to every listed point or to none.
        self._client.set_payload(
            chunks, payload={"live": True}, points=[point.id for point in points]
        )
        record = DocumentRecord(
            id=document_id,
            collection=info.name,
            source=document.source,
            title=document.title,
            tags=tuple(prepared.tags),
            content_hash=document.content_hash,
            created_at=created_at,
            chunk_count=len(prepared.chunks),
            metadata=prepared.metadata,
        )
        self._client.set_payload(
            documents,
            payload={
                "title": record.title,
                "tags": list(record.tags),
                "metadata": record.metadata,
                "content_hash": record.content_hash,
                "created_at": created_at.isoformat(),
                "chunk_count": record.chunk_count,
                "seq": time.time_ns(),
                "generation": generation,
            },
            points=[document_point_id(key, document_id)],
        )
        # A crashed write's chunks were never live, so their length was never counted.
        removed = (0, 0)
        if existing is not None:
            removed = self._remove_chunks(info, key, document_id, keep=generation)
        self._add_statistics(key, added_length - removed[0], len(points) - removed[1])
        return record

    def _add_vocabulary(self, key: str, prepared: PreparedDocument) -> None:
        """Upsert the document's words and terms the vocabulary does not hold yet (a lookup
        by id; an entry's deletion keys never change, so a stored one is left as it is)."""
        wanted = {
            vocabulary_point_id(key, kind, entry): (kind, entry)
            for kind, entries in (
                ("word", {word for chunk in prepared.chunks for word in chunk.words}),
                ("term", {term for chunk in prepared.chunks for term in chunk.term_frequencies}),
            )
            for entry in entries
        }
        ids = sorted(wanted)
        stored = {
            str(point.id)
            for start in range(0, len(ids), 1024)
            for point in self._client.retrieve(
                self._layout.vocabulary, ids=ids[start : start + 1024], with_payload=False
            )
        }
        points = [entry_point(key, *wanted[i]) for i in ids if i not in stored]
        for start in range(0, len(points), 512):
            self._client.upsert(self._layout.vocabulary, points=points[start : start + 512])

    def _remove_chunks(
        self, info: CollectionInfo, key: str, document_id: str, *, keep: str | None
    ) -> tuple[int, int]:
        """Delete the document's chunks not of generation ``keep`` (all with None) and the
        vocabulary entries no live chunk holds any more; return the live chunks' Σdl and
        count removed."""
        self._lexicon.forget(key)
        chunks = self._chunk_collection(info)
        if not self._client.collection_exists(chunks):
            return 0, 0
        must: list[models.Condition] = [match("collection", key), match("document_id", document_id)]
        stale = models.Filter(
            must=must, must_not=[match("generation", keep)] if keep is not None else None
        )
        gone = scroll_all(
            self._client.scroll,
            collection_name=chunks,
            scroll_filter=stale,
            with_payload=["dl", "live", "terms", "words"],
        )
        if not gone:
            return 0, 0
        self._client.delete(chunks, points_selector=models.FilterSelector(filter=stale))
        live = live_chunks(key)
        unheld: list[models.ExtendedPointId] = []
        for kind, field in (("word", "words"), ("term", "terms")):
            entries = {entry for point in gone for entry in payload_of(point)[field]}
            for entry in sorted(entries):
                if not self._count(chunks, holding(live, field, entry)):
                    unheld.append(vocabulary_point_id(key, kind, entry))
        if unheld:
            self._client.delete(
                self._layout.vocabulary, points_selector=models.PointIdsList(points=unheld)
            )
        live_gone = [point for point in gone if payload_of(point)["live"]]
        return sum(int(payload_of(point)["dl"]) for point in live_gone), len(live_gone)


def entry_point(key: str, kind: str, entry: str) -> models.PointStruct:
    payload: dict[str, Any] = {"collection": key, "kind": kind, "entry": entry}
    payload.update(entry_lookups(kind, entry))
    return models.PointStruct(id=vocabulary_point_id(key, kind, entry), vector={}, payload=payload)
