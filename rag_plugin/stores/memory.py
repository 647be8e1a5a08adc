"""The in-memory store: exact search over numpy matrices, optionally saved to a folder.

For pipelines without a database. Each collection (a
:class:`~rag_plugin.stores.memory_collection.MemoryCollection`) keeps its chunk vectors in
one matrix, searched exactly, and its own BM25 and fuzzy indexes built with the collection's
analyzer. ``MemoryStore(path=folder)`` loads ``folder/memory_store.json`` on construction (a
missing file gives an empty store; an unreadable one too, with a logged warning) and writes
it after every change — or only on :meth:`MemoryStore.save` with ``autosave=False``, which
suits bulk loads (each save rewrites the whole file).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag_plugin.exceptions import (
    CollectionExistsError,
    CollectionNotFoundError,
    DocumentNotFoundError,
    InvalidInputError,
    StoreError,
)
from rag_plugin.stores.base import (
    ChunkInput,
    ChunkRecord,
    CollectionInfo,
    CollectionKey,
    DocumentInput,
    DocumentRecord,
    QueryCorrection,
    ScoredChunk,
    SearchContext,
    Store,
    check_same_model,
    chunk_id,
    new_document_id,
)
from rag_plugin.stores.memory_collection import MemoryCollection, Vector, to_vector
from rag_plugin.stores.usage import Usage, WriteLimits, check_usage

__all__ = ["FILE_NAME", "MemoryStore"]

logger = logging.getLogger(__name__)

FILE_NAME = "memory_store.json"
_FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class _Checked:
    """A document to store, with its vectors and metadata validated and copied."""

    document: DocumentInput
    chunks: Sequence[ChunkInput]
    vectors: list[Vector]
    metadata: dict[str, Any]
    chunk_metadata: list[dict[str, Any]]

    @classmethod
    def of(
        cls, target: MemoryCollection, document: DocumentInput, chunks: Sequence[ChunkInput]
    ) -> _Checked:
        """Validate one document for ``target``; raises before anything changes."""
        vectors = [to_vector(chunk.embedding, target.info.dimensions) for chunk in chunks]
        indexes = [chunk.index for chunk in chunks]
        if len(set(indexes)) != len(indexes):
            raise InvalidInputError(f"Chunk indexes must be unique, got {sorted(indexes)}.")
        return cls(
            document=document,
            chunks=chunks,
            vectors=vectors,
            metadata=_json_copy(document.metadata, "document metadata"),
            chunk_metadata=[_json_copy(chunk.metadata, "chunk metadata") for chunk in chunks],
        )


class MemoryStore(Store):
    """Collections held in process memory, searched exactly; optionally saved to a folder."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, autosave: bool = True
    ) -> None:
        # Re-entrant, so a subclass may call public methods from inside an overridden one.
        self._lock = threading.RLock()
        self._collections: dict[tuple[str | None, str], MemoryCollection] = {}
        self._sequence = 0
        self._path = Path(path) if path is not None else None
        self._autosave = autosave and self._path is not None
        if self._path is not None:
            self._load(self._path / FILE_NAME)

    @property
    def path(self) -> Path | None:
        """The folder this store is saved to, or ``None`` in memory mode."""
        return self._path

    # -- collections -------------------------------------------------------------------

    def _create_collection(self, collection: CollectionInfo) -> CollectionInfo:
        key = (collection.owner, collection.name)
        with self._lock:
            if key in self._collections:
                raise CollectionExistsError(collection.name)
            created = self._collections[key] = MemoryCollection.empty(collection)
            self._changed()
            return created.counted()

    def _get_collection(self, key: CollectionKey) -> CollectionInfo:
        with self._lock:
            return self._get(key.owner, key.name).counted()

    def list_collections(self, *, owner: str | None = None) -> list[CollectionInfo]:
        """Return the owner's collections (``owner=None``: the shared ones), sorted by name."""
        with self._lock:
            found = [c.counted() for (o, _), c in self._collections.items() if o == owner]
        return sorted(found, key=lambda info: info.name)

    def _delete_collection(self, key: CollectionKey) -> int:
        with self._lock:
            count = self._get(key.owner, key.name).counted().document_count
            del self._collections[(key.owner, key.name)]
            self._changed()
            return count

    # -- documents ---------------------------------------------------------------------

    def _upsert_documents(
        self,
        collection: CollectionInfo,
        documents: Sequence[tuple[DocumentInput, Sequence[ChunkInput]]],
        *,
        create: bool,
        limits: WriteLimits | None,
    ) -> list[DocumentRecord]:
        """Everything is validated before the first change, so one bad chunk changes nothing;
        a collection made by ``create=True`` is added only once every document is in it."""
        with self._lock:
            key = (collection.owner, collection.name)
            planned = MemoryCollection.empty(collection) if create else None
            target = self._collections.get(key)
            if target is None:
                if planned is None:
                    raise CollectionNotFoundError(collection.name)
                target = planned
            elif planned is not None:
                check_same_model(target.info, collection)
            checked = [_Checked.of(target, document, chunks) for document, chunks in documents]
            if limits is not None and limits.any:
                self._check_limits(target, checked, limits)
            created_at = datetime.now(UTC)
            records = [self._put(target, created_at, item) for item in checked]
            if target is planned:
                self._collections[key] = target
            self._changed()
            return records

    def usage(self, *, owner: str | None = None, everyone: bool = False) -> Usage:
        """What the owner's collections hold, or all of them."""
        with self._lock:
            return self._usage(owner, everyone)

    def _usage(self, owner: str | None, everyone: bool) -> Usage:
        held = [c.usage() for (o, _), c in self._collections.items() if everyone or o == owner]
        return sum(held, Usage())

    def _check_limits(
        self, target: MemoryCollection, checked: Sequence[_Checked], limits: WriteLimits
    ) -> None:
        """Raise before any change if the write would pass a limit (the store's lock makes
        the check and the write one step)."""
        added = Usage()
        for item in checked:
            texts = [chunk.content for chunk in item.chunks]
            added += Usage(1, len(texts), sum(len(text.encode()) for text in texts))
            added -= target.document_usage(target.document_for_source(item.document.source))
        owner = target.info.owner
        for name, wanted, everyone in (
            (limits.owner_name, limits.owner, False),
            (limits.store_name, limits.store, True),
        ):
            if wanted.any:
                check_usage(name, wanted, self._usage(owner, everyone) + added, added)

    def _put(
        self, target: MemoryCollection, created_at: datetime, checked: _Checked
    ) -> DocumentRecord:
        """Store one checked document, replacing the one with its source."""
        document, chunks = checked.document, checked.chunks
        tags = [str(tag) for tag in document.tags]
        doc_metadata = checked.metadata
        existing = target.document_for_source(document.source)
        if existing is not None:
            target.remove_document(existing)
        document_id = existing or new_document_id(target.info.key, document.source)
        record = DocumentRecord(
            id=document_id,
            collection=target.info.name,
            source=document.source,
            title=document.title,
            tags=tuple(tags),
            content_hash=document.content_hash,
            created_at=created_at,
            chunk_count=len(chunks),
            metadata=doc_metadata,
        )
        # The store's own keys come last, so a filter on source or title always means the
        # document's, whatever a chunk's metadata says.
        fields = {
            "title": document.title,
            "source": document.source,
            "created_at": created_at.isoformat(),
        }
        stored = [
            (
                ChunkRecord(
                    id=chunk_id(document_id, chunk.index),
                    document_id=document_id,
                    index=chunk.index,
                    content=chunk.content,
                    start_offset=chunk.start_offset,
                    end_offset=chunk.end_offset,
                    metadata={**doc_metadata, **metadata, **fields, "tags": list(tags)},
                ),
                vector,
            )
            for chunk, vector, metadata in zip(
                chunks, checked.vectors, checked.chunk_metadata, strict=True
            )
        ]
        self._sequence += 1
        target.add_document(record, stored, self._sequence)
        return record

    def _delete_document(self, collection: CollectionInfo, document_id: str) -> None:
        with self._lock:
            if not self._resolve(collection).remove_document(document_id):
                raise DocumentNotFoundError(document_id)
            self._changed()

    def _get_document(self, collection: CollectionInfo, document_id: str) -> DocumentRecord:
        with self._lock:
            found = self._resolve(collection).document(document_id)
        if found is None:
            raise DocumentNotFoundError(document_id)
        return found

    def _find_document(self, collection: CollectionInfo, source: str) -> DocumentRecord | None:
        with self._lock:
            stored = self._resolve(collection)
            document_id = stored.document_for_source(source)
            return stored.document(document_id) if document_id is not None else None

    def _list_documents(
        self, collection: CollectionInfo, limit: int, offset: int
    ) -> list[DocumentRecord]:
        with self._lock:
            documents = self._resolve(collection).documents_newest_first()
        return documents[offset : offset + limit]

    def _document_chunks(self, collection: CollectionInfo, document_id: str) -> list[ChunkRecord]:
        with self._lock:
            found = self._resolve(collection).chunks_of(document_id)
        if found is None:
            raise DocumentNotFoundError(document_id)
        return found

    # -- search legs -------------------------------------------------------------------

    def _dense(
        self,
        collection: CollectionInfo,
        vector: Sequence[float],
        n: int,
        context: SearchContext,
    ) -> list[ScoredChunk]:
        """Exact: every chunk's similarity from the collection's matrix."""
        with self._lock:
            target = self._resolve(collection)
            return target.dense(to_vector(vector, target.info.dimensions), n, context)

    def _bm25(
        self, collection: CollectionInfo, query: str, n: int, context: SearchContext
    ) -> list[ScoredChunk]:
        with self._lock:
            return self._resolve(collection).bm25(query, n, context)

    def _fuzzy(
        self, collection: CollectionInfo, query: str, n: int, context: SearchContext
    ) -> list[ScoredChunk]:
        with self._lock:
            return self._resolve(collection).fuzzy(query, n, context)

    def _correct_query(self, collection: CollectionInfo, query: str) -> QueryCorrection:
        with self._lock:
            return self._resolve(collection).correct_query(query)

    # -- persistence -------------------------------------------------------------------

    def save(self) -> None:
        """Write every collection to ``path/memory_store.json``, atomically."""
        if self._path is None:
            raise InvalidInputError("This MemoryStore has no path; pass path=... to save it.")
        with self._lock:
            payload = {
                "version": _FORMAT_VERSION,
                "collections": [c.to_json() for c in self._collections.values()],
            }
            try:
                self._path.mkdir(parents=True, exist_ok=True)
                # Write a sibling file and rename it over the old one, so a crash never
                # leaves half a file behind.
                fd, temp = tempfile.mkstemp(dir=self._path, prefix=".memory_store.")
                try:
                    with os.fdopen(fd, "w", encoding="utf-8") as handle:
                        json.dump(payload, handle)
                    os.replace(temp, self._path / FILE_NAME)
                except BaseException:
                    Path(temp).unlink(missing_ok=True)
                    raise
            except OSError as exc:
                raise StoreError(f"Could not save the memory store to {self._path}: {exc}") from exc

    def _load(self, file: Path) -> None:
        if not file.exists():
            return
        try:
            payload = json.loads(file.read_text(encoding="utf-8"))
            if payload.get("version") != _FORMAT_VERSION:
                raise ValueError(f"unknown format version {payload.get('version')!r}")
            loaded: dict[tuple[str | None, str], MemoryCollection] = {}
            sequence = 0
            for raw in payload["collections"]:
                collection, sequence = MemoryCollection.from_json(raw, sequence)
                loaded[(collection.info.owner, collection.info.name)] = collection
        except Exception as exc:  # whatever is wrong with the file, start empty (SPEC L4)
            logger.warning(
                "Ignoring unreadable memory store file %s (%s); starting empty", file, exc
            )
            return
        self._collections = loaded
        self._sequence = sequence

    # -- helpers -----------------------------------------------------------------------

    def _changed(self) -> None:
        if self._autosave:
            self.save()

    def _get(self, owner: str | None, name: str) -> MemoryCollection:
        found = self._collections.get((owner, name))
        if found is None:
            raise CollectionNotFoundError(name)
        return found

    def _resolve(self, collection: CollectionInfo) -> MemoryCollection:
        return self._get(collection.owner, collection.name)


def _json_copy(value: Any, what: str) -> dict[str, Any]:
    # A JSON round trip both proves the value can be saved (the database store needs that
    # too) and detaches it from the caller's objects.
    try:
        copied: dict[str, Any] = json.loads(json.dumps(dict(value), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"The {what} must be JSON-serialisable: {exc}.") from None
    return copied
