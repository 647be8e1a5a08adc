"""The Qdrant store: every collection, document, chunk and word kept in Qdrant (SPEC V6).

For a user who keeps vectors in a Qdrant server or cluster (sharded and replicated across
machines) instead of PostgreSQL, and, with qdrant-client's local mode (``location=":memory:"``
or ``path=folder``), for tests and single-process use. All its state is in Qdrant, so any
number of app processes share one server. Where each thing lives: :mod:`.layout`; how the
lexical legs score exactly from Qdrant's candidates: :mod:`.lexical`.

**Writes without transactions.** Qdrant changes one request's points atomically, not several
requests'. A write of documents therefore goes in steps, each safe to repeat (the same point
ids and payloads):

1. each document's point gets a fresh ``pending`` generation (a new document's point has no
   ``generation`` yet, so it is not listed or counted);
2. its vocabulary points are upserted, then its chunk points of the pending generation, not
   yet ``live`` (every leg asks for ``live``);
3. one filtered request makes that generation's chunks live, and the document's point takes
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

Metadata filters become Qdrant conditions inside every leg's query, before ranking, with the
memory store's rules exactly (:mod:`.filters`); the few forms Qdrant cannot express exactly are
evaluated over the collection's chunk payloads, once per search, and join as the ids they keep.
"""

from __future__ import annotations

import copy
import os
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from rag_plugin.exceptions import (
    CollectionExistsError,
    CollectionNotFoundError,
    ConfigurationError,
    DocumentNotFoundError,
    InvalidInputError,
    StoreError,
)
from rag_plugin.filters import FilterExpression, as_expression, matches
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import bm25_idf
from rag_plugin.lexical.correction import correct_with
from rag_plugin.lexical.fuzzy import fuzzy_query_words
from rag_plugin.lexical.near_keys import entry_keys
from rag_plugin.stores.base import (
    ChunkInput,
    ChunkRecord,
    CollectionInfo,
    DocumentInput,
    DocumentRecord,
    Filters,
    QueryCorrection,
    ScoredChunk,
    Store,
    check_distinct_sources,
    check_same_model,
    new_document_id,
    settled_collection,
    validate_collection_name,
)
from rag_plugin.stores.prepared import PreparedDocument, prepare_document
from rag_plugin.stores.qdrant.filters import NOTHING, to_qdrant, typed_payload
from rag_plugin.stores.qdrant.layout import (
    CHUNK_INDEXES,
    DENSE,
    QDRANT_DISTANCES,
    SPARSE,
    Layout,
    chunk_point_id,
    collection_point_id,
    document_point_id,
    match,
    vocabulary_point_id,
)
from rag_plugin.stores.qdrant.lexical import (
    bm25_candidates,
    bm25_score,
    close_entries,
    fuzzy_scores,
    query_sparse,
    scroll_all,
    similarities_of,
    sparse_vector,
)
from rag_plugin.vectors import DistanceMetric, validate_embedding

__all__ = ["QdrantStore"]

_PREFIX_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
_CHUNK_FIELDS = [
    "chunk_id",
    "document_id",
    "index",
    "content",
    "start_offset",
    "end_offset",
    "metadata",
]


class QdrantStore(Store):
    """Collections kept in Qdrant: a server (``url=``) or qdrant-client's local mode.

    ``QdrantStore(url="http://localhost:6334", api_key_env="QDRANT_API_KEY",
    prefer_grpc=True)`` talks to a server (the seed's ``database.qdrant`` settings: the API key
    is read from the named environment variable, never passed in); ``location=":memory:"`` or
    ``path=folder`` run Qdrant in this process. ``namespace`` separates users of one Qdrant
    (the portal passes its tenant); ``prefix`` names the Qdrant collections.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key_env: str | None = None,
        prefer_grpc: bool = False,
        location: str | None = None,
        path: str | os.PathLike[str] | None = None,
        prefix: str = "rag",
        namespace: str = "",
        timeout: int | None = None,
    ) -> None:
        if sum(value is not None for value in (url, location, path)) != 1:
            raise ConfigurationError(
                "QdrantStore needs exactly one of url= (a Qdrant server), location=':memory:' "
                "or path= (Qdrant in this process)."
            )
        if not prefix or set(prefix) - _PREFIX_CHARACTERS or not prefix[0].isalpha():
            raise ConfigurationError(
                f"The Qdrant prefix must be lowercase letters, digits and '_', starting with a "
                f"letter; got {prefix!r}."
            )
        api_key = None
        if api_key_env:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise ConfigurationError(
                    f"The environment variable {api_key_env} (api_key_env, the Qdrant API key) "
                    "is not set."
                )
        self._where = url if url is not None else str(location if location is not None else path)
        self._local = url is None
        try:
            self._client = QdrantClient(
                url=url,
                api_key=api_key,
                prefer_grpc=prefer_grpc,
                location=location,
                path=None if path is None else str(path),
                timeout=timeout,
                # A server's version check runs in a thread that can only warn; the first
                # request says clearly when the server cannot be reached.
                check_compatibility=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ConfigurationError(f"Could not open Qdrant at {self._where}: {exc}") from exc
        self._layout = Layout(prefix)
        self._namespace = namespace
        # Local mode is not safe for threads; one lock also orders this process's writes.
        self._lock = threading.RLock()
        self._ready: set[str] = set()  # shared with for_namespace's stores

    def close(self) -> None:
        """Close the client (and, in local mode, release the folder); the stores
        :meth:`for_namespace` made share it, so they close with it."""
        self._client.close()

    @property
    def namespace(self) -> str:
        """The namespace this store's collections are in."""
        return self._namespace

    def for_namespace(self, namespace: str) -> QdrantStore:
        """A store of another namespace on the same client (one client per process serves
        every tenant; local mode can open its folder only once)."""
        sibling = copy.copy(self)
        sibling._namespace = namespace
        return sibling

    def delete_namespace(self) -> int:
        """Delete every collection of this namespace, whoever owns it (the portal calls it
        when a tenant is deleted); return how many collections there were."""
        with self._using():
            points = scroll_all(
                self._client.scroll,
                collection_name=self._layout.collections,
                scroll_filter=models.Filter(must=[match("namespace", self._namespace)]),
                with_payload=True,
            )
        for point in points:
            info = _info(_payload(point))
            self.delete_collection(info.name, owner=info.owner)
        return len(points)

    # -- collections -------------------------------------------------------------------

    def create_collection(
        self,
        name: str,
        *,
        dimensions: int,
        embedding_model: str,
        owner: str | None = None,
        metric: DistanceMetric = DistanceMetric.COSINE,
        analyzer: str = "seed",
    ) -> CollectionInfo:
        """Create a collection; raise ``CollectionExistsError`` if the owner has one."""
        info = settled_collection(
            CollectionInfo(name, owner, dimensions, embedding_model, metric, analyzer)
        )
        with self._using():
            if self._collection_point(owner, name) is not None:
                raise CollectionExistsError(name)
            self._put_collection(info)
        return info

    def get_collection(self, name: str, *, owner: str | None = None) -> CollectionInfo:
        """Return the owner's collection; raise ``CollectionNotFoundError`` if absent."""
        validate_collection_name(name)
        with self._using():
            point = self._collection_point(owner, name)
            if point is None:
                raise CollectionNotFoundError(name)
            return self._counted(_payload(point))

    def list_collections(self, *, owner: str | None = None) -> list[CollectionInfo]:
        """Return the owner's collections (``owner=None``: the shared ones), sorted by name."""
        with self._using():
            points = scroll_all(
                self._client.scroll,
                collection_name=self._layout.collections,
                scroll_filter=models.Filter(
                    must=[match("namespace", self._namespace), match("owner_key", _owner(owner))]
                ),
                with_payload=True,
            )
            found = [self._counted(_payload(point)) for point in points]
        return sorted(found, key=lambda info: info.name)

    def delete_collection(self, name: str, *, owner: str | None = None) -> int:
        """Delete the collection and everything in it; return how many documents it had."""
        validate_collection_name(name)
        with self._using():
            point = self._collection_point(owner, name)
            if point is None:
                raise CollectionNotFoundError(name)
            info = _info(_payload(point))
            key = str(point.id)
            documents = self._count(self._layout.documents, _committed(key))
            everything = models.FilterSelector(
                filter=models.Filter(must=[match("collection", key)])
            )
            # Its points first and its own point last: a crash in between leaves a collection
            # that a second delete finishes, never points of a collection nobody can reach.
            chunks = self._layout.chunks(info.dimensions, info.metric)
            if self._client.collection_exists(chunks):
                self._client.delete(chunks, points_selector=everything)
            self._client.delete(self._layout.vocabulary, points_selector=everything)
            self._client.delete(self._layout.documents, points_selector=everything)
            self._client.delete(
                self._layout.collections,
                points_selector=models.PointIdsList(points=[key]),
            )
        return documents

    # -- documents ---------------------------------------------------------------------

    def upsert_documents(
        self,
        collection: CollectionInfo,
        documents: Sequence[tuple[DocumentInput, Sequence[ChunkInput]]],
        *,
        create: bool = False,
    ) -> list[DocumentRecord]:
        """Store documents and their chunks, replacing those with the same source (see the
        module docstring for what happens on a crash)."""
        validate_collection_name(collection.name)
        planned = settled_collection(collection) if create else None
        check_distinct_sources(documents)
        with self._using():
            point = self._collection_point(collection.owner, collection.name)
            if point is None:
                if planned is None:
                    raise CollectionNotFoundError(collection.name)
                info = planned
            else:
                info = _info(_payload(point))
                if planned is not None:
                    check_same_model(info, planned)
            prepared = [prepare_document(info, doc, chunks) for doc, chunks in documents]
            if point is None:
                self._put_collection(info)
            key = collection_point_id(self._namespace, info.owner, info.name)
            return [self._write(info, key, item) for item in prepared]

    def delete_document(self, collection: CollectionInfo, document_id: str) -> None:
        """Delete a document with its chunks; raise ``DocumentNotFoundError`` if absent."""
        with self._using():
            info, key = self._resolve(collection)
            stored = self._document_point(key, document_id)
            if stored is None or _payload(stored).get("generation") is None:
                raise DocumentNotFoundError(document_id)
            length, chunks = self._remove_chunks(info, key, document_id, keep=None)
            self._client.delete(
                self._layout.documents,
                points_selector=models.PointIdsList(points=[document_point_id(key, document_id)]),
            )
            self._add_statistics(key, -length, -chunks)

    def get_document(self, collection: CollectionInfo, document_id: str) -> DocumentRecord:
        """Return one document; raise ``DocumentNotFoundError`` if absent."""
        with self._using():
            info, key = self._resolve(collection)
            stored = self._document_point(key, document_id)
        if stored is None or _payload(stored).get("generation") is None:
            raise DocumentNotFoundError(document_id)
        return _document_record(info, _payload(stored))

    def find_document(self, collection: CollectionInfo, *, source: str) -> DocumentRecord | None:
        """Return the document stored under a non-empty ``source``, or None."""
        if not source:
            return None
        with self._using():
            info, key = self._resolve(collection)
            found = self._source_point(key, info, source)
        if found is None or _payload(found).get("generation") is None:
            return None
        return _document_record(info, _payload(found))

    def list_documents(
        self, collection: CollectionInfo, *, limit: int = 100, offset: int = 0
    ) -> list[DocumentRecord]:
        """Return documents, newest first."""
        if limit < 0 or offset < 0:
            raise InvalidInputError(
                f"limit and offset must not be negative, got limit={limit}, offset={offset}."
            )
        if limit == 0:
            return []
        with self._using():
            info, key = self._resolve(collection)
            points, _ = self._client.scroll(
                self._layout.documents,
                scroll_filter=_committed(key),
                limit=offset + limit,
                order_by=models.OrderBy(key="seq", direction=models.Direction.DESC),
                with_payload=True,
            )
        return [_document_record(info, _payload(point)) for point in points[offset:]]

    def document_chunks(self, collection: CollectionInfo, document_id: str) -> list[ChunkRecord]:
        """Return a document's chunks in index order."""
        with self._using():
            info, key = self._resolve(collection)
            stored = self._document_point(key, document_id)
            if stored is None or _payload(stored).get("generation") is None:
                raise DocumentNotFoundError(document_id)
            points = scroll_all(
                self._client.scroll,
                collection_name=self._chunk_collection(info),
                scroll_filter=models.Filter(
                    must=[
                        match("collection", key),
                        match("document_id", document_id),
                        match("generation", _payload(stored)["generation"]),
                    ]
                ),
                with_payload=_CHUNK_FIELDS,
            )
        chunks = [_chunk_record(_payload(point)) for point in points]
        return sorted(chunks, key=lambda chunk: chunk.index)

    # -- search legs -------------------------------------------------------------------

    def dense(
        self,
        collection: CollectionInfo,
        vector: Sequence[float],
        n: int,
        filters: Filters | None = None,
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by vector similarity: Qdrant's HNSW with the collection, liveness
        and filter inside the query (exact in local mode)."""
        _check_n(n)
        with self._using():
            info, key = self._resolve(collection)
            validate_embedding(vector, info.dimensions)
            scope = self._scope(info, key, filters)
            if n == 0:
                return []
            found = self._client.query_points(
                self._chunk_collection(info),
                query=[float(x) for x in vector],
                using=DENSE,
                query_filter=scope,
                limit=n,
                with_payload=_CHUNK_FIELDS,
            ).points
        scored = [
            ScoredChunk(_chunk_record(_payload(point)), _similarity(point.score, info.metric))
            for point in found
        ]
        return sorted(scored, key=lambda hit: (-hit.score, hit.chunk.id))

    def bm25(
        self, collection: CollectionInfo, query: str, n: int, filters: Filters | None = None
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by BM25 over the whole collection; only scores > 0."""
        _check_n(n)
        with self._using():
            info, key = self._resolve(collection)
            tokens = get_analyzer(info.analyzer).tokens(query)
            if n == 0 or not tokens:
                return []
            live = models.Filter(must=[match("collection", key), match("live", True)])
            chunks = self._chunk_collection(info)
            total = self._count(chunks, live)
            idf = {
                term: bm25_idf(total, self._count(chunks, _holding(live, "terms", term)))
                for term in set(tokens)
            }
            sparse = query_sparse(tokens, idf)
            scope = self._scope(info, key, filters)
            if not sparse.indices:
                return []
            average = self._statistics(key)[0] / total
            found = self._client.query_points(
                chunks,
                query=sparse,
                using=SPARSE,
                query_filter=scope,
                limit=bm25_candidates(n),
                with_payload=[*_CHUNK_FIELDS, "tf", "dl"],
            ).points
        scored = []
        for point in found:
            score = bm25_score(tokens, _payload(point)["tf"], _payload(point)["dl"], average, idf)
            if score > 0.0:
                scored.append(ScoredChunk(_chunk_record(_payload(point)), score))
        scored.sort(key=lambda hit: (-hit.score, hit.chunk.id))
        return scored[:n]

    def fuzzy(
        self, collection: CollectionInfo, query: str, n: int, filters: Filters | None = None
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by the fuzzy word-match score; only scores > 0; ties by id."""
        _check_n(n)
        with self._using():
            info, key = self._resolve(collection)
            words = fuzzy_query_words(query, get_analyzer(info.analyzer))
            if n == 0 or not words:
                return []
            distinct = list(dict.fromkeys(words))
            near = close_entries(distinct, self._entries(key, "word"))
            similarities = {word: similarities_of(word, near[word]) for word in distinct}
            close = sorted({word for found in similarities.values() for word in found})
            scope = self._scope(info, key, filters)
            if not close:
                return []
            holding = models.Filter(
                must=[scope, models.FieldCondition(key="words", match=models.MatchAny(any=close))]
            )
            chunks = self._chunk_collection(info)
            points = scroll_all(
                self._client.scroll,
                collection_name=chunks,
                scroll_filter=holding,
                with_payload=["chunk_id", "words"],
            )
            scores = fuzzy_scores(
                query,
                get_analyzer(info.analyzer),
                [(_payload(p)["chunk_id"], _payload(p)["words"]) for p in points],
                similarities,
            )
            scores.sort(key=lambda pair: (-pair[1], pair[0]))
            best = dict(scores[:n])
            point_of = {_payload(p)["chunk_id"]: p.id for p in points}
            records = {
                _payload(record)["chunk_id"]: _chunk_record(_payload(record))
                for record in self._client.retrieve(
                    chunks, ids=[point_of[chunk_id] for chunk_id in best], with_payload=True
                )
            }
        return [ScoredChunk(records[chunk_id], score) for chunk_id, score in best.items()]

    def correct_query(self, collection: CollectionInfo, query: str) -> QueryCorrection:
        """Correct each query word to the closest word of the collection's vocabulary."""
        with self._using():
            info, key = self._resolve(collection)
            chunks = self._chunk_collection(info)
            live = models.Filter(must=[match("collection", key), match("live", True)])

            def closest(terms: Sequence[str]) -> dict[str, tuple[str, int] | None]:
                found: dict[str, tuple[str, int] | None] = {}
                near = close_entries([term.lower() for term in terms], self._entries(key, "term"))
                for term in terms:
                    close = near[term.lower()]
                    counted = [
                        (entry, distance, self._count(chunks, _holding(live, "terms", entry)))
                        for entry, distance in close
                    ]
                    held = [item for item in counted if item[2] > 0]
                    best = min(held, key=lambda item: (item[1], -item[2], item[0]), default=None)
                    found[term] = None if best is None else (best[0], best[1])
                return found

            def words_starting_with(prefixes: Sequence[str]) -> list[tuple[str, int]]:
                found: list[tuple[str, int]] = []
                for prefix in prefixes:
                    entries = sorted(self._entries(key, "word", field="prefixes")([prefix]))
                    for entry in entries:
                        count = self._count(chunks, _holding(live, "words", entry))
                        if count:
                            found.append((entry, count))
                return found

            return correct_with(get_analyzer(info.analyzer), query, closest, words_starting_with)

    # -- writing -----------------------------------------------------------------------

    def _write(self, info: CollectionInfo, key: str, prepared: PreparedDocument) -> DocumentRecord:
        """Store one prepared document in the steps of the module docstring."""
        document = prepared.document
        existing = self._source_point(key, info, document.source) if document.source else None
        document_id = (
            str(_payload(existing)["id"])
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
                            "pending": generation,
                        },
                    )
                ],
            )
        else:
            self._client.set_payload(
                documents,
                payload={"pending": generation},
                points=[document_point_id(key, document_id)],
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
            chunk_id = f"{document_id}_{chunk.index}"
            metadata = {**prepared.metadata, **item.metadata, **fields, "tags": prepared.tags}
            points.append(
                models.PointStruct(
                    id=chunk_point_id(chunk_id, generation),
                    vector={
                        DENSE: [float(x) for x in chunk.embedding],
                        SPARSE: sparse_vector(dict(item.term_frequencies), item.length, average),
                    },
                    payload={
                        "collection": key,
                        "document_id": document_id,
                        "generation": generation,
                        "live": False,
                        "chunk_id": chunk_id,
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
                "pending": None,
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
        points = [_entry_point(key, *wanted[i]) for i in ids if i not in stored]
        for start in range(0, len(points), 512):
            self._client.upsert(self._layout.vocabulary, points=points[start : start + 512])

    def _remove_chunks(
        self, info: CollectionInfo, key: str, document_id: str, *, keep: str | None
    ) -> tuple[int, int]:
        """Delete the document's chunks not of generation ``keep`` (all with None) and the
        vocabulary entries no live chunk holds any more; return the live chunks' Σdl and
        count removed."""
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
        live = models.Filter(must=[match("collection", key), match("live", True)])
        unheld: list[models.ExtendedPointId] = []
        for kind, field in (("word", "words"), ("term", "terms")):
            entries = {entry for point in gone for entry in _payload(point)[field]}
            for entry in sorted(entries):
                if not self._count(chunks, _holding(live, field, entry)):
                    unheld.append(vocabulary_point_id(key, kind, entry))
        if unheld:
            self._client.delete(
                self._layout.vocabulary, points_selector=models.PointIdsList(points=unheld)
            )
        live_gone = [point for point in gone if _payload(point)["live"]]
        return sum(int(_payload(point)["dl"]) for point in live_gone), len(live_gone)

    # -- helpers -----------------------------------------------------------------------

    @contextmanager
    def _using(self) -> Iterator[None]:
        """Hold the lock, create the store's Qdrant collections on first use, and turn a
        failure to reach Qdrant into an error naming where it was looked for."""
        with self._lock:
            try:
                self._ensure_base()
                yield
            except (ResponseHandlingException, ConnectionError, OSError) as exc:
                raise ConfigurationError(
                    f"Qdrant at {self._where} (the Qdrant url setting) cannot be reached: {exc}"
                ) from exc
            except UnexpectedResponse as exc:
                raise StoreError(f"Qdrant at {self._where} refused a request: {exc}") from exc

    def _ensure_base(self) -> None:
        for name in (self._layout.collections, self._layout.documents, self._layout.vocabulary):
            if name in self._ready:
                continue
            if not self._client.collection_exists(name):
                self._client.create_collection(name, vectors_config={})
                if name == self._layout.documents:
                    self._index(name, "seq", models.PayloadSchemaType.INTEGER)
                for field in ("collection", "source", "kind", "keys", "prefixes", "owner_key"):
                    self._index(name, field, models.PayloadSchemaType.KEYWORD)
            self._ready.add(name)

    def _ensure_chunks(self, info: CollectionInfo) -> str:
        """The Qdrant collection for ``info``'s chunks, created when it is the first of its
        dimension and metric."""
        name = self._chunk_collection(info)
        if name not in self._ready:
            if not self._client.collection_exists(name):
                self._client.create_collection(
                    name,
                    vectors_config={
                        DENSE: models.VectorParams(
                            size=info.dimensions, distance=QDRANT_DISTANCES[info.metric]
                        )
                    },
                    sparse_vectors_config={SPARSE: models.SparseVectorParams()},
                )
                for field in CHUNK_INDEXES:
                    self._index(name, field, models.PayloadSchemaType.KEYWORD)
                self._index(name, "live", models.PayloadSchemaType.BOOL)
            self._ready.add(name)
        return name

    def _index(self, name: str, field: str, schema: models.PayloadSchemaType) -> None:
        """A payload index (local mode has none: it scans); ``collection`` is the tenant."""
        if self._local:
            return
        if field == "collection":
            tenant = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
            self._client.create_payload_index(name, field, field_schema=tenant)
        else:
            self._client.create_payload_index(name, field, field_schema=schema)

    def _chunk_collection(self, info: CollectionInfo) -> str:
        return self._layout.chunks(info.dimensions, info.metric)

    def _put_collection(self, info: CollectionInfo) -> None:
        key = collection_point_id(self._namespace, info.owner, info.name)
        self._ensure_chunks(info)
        self._client.upsert(
            self._layout.collections,
            points=[
                models.PointStruct(
                    id=key,
                    vector={},
                    payload={
                        "namespace": self._namespace,
                        "owner": info.owner,
                        "owner_key": _owner(info.owner),
                        "name": info.name,
                        "dimensions": info.dimensions,
                        "embedding_model": info.embedding_model,
                        "metric": info.metric.value,
                        "analyzer": info.analyzer,
                        "length": 0,
                        "chunks": 0,
                    },
                )
            ],
        )

    def _collection_point(self, owner: str | None, name: str) -> models.Record | None:
        found = self._client.retrieve(
            self._layout.collections,
            ids=[collection_point_id(self._namespace, owner, name)],
            with_payload=True,
        )
        return found[0] if found else None

    def _resolve(self, collection: CollectionInfo) -> tuple[CollectionInfo, str]:
        validate_collection_name(collection.name)
        point = self._collection_point(collection.owner, collection.name)
        if point is None:
            raise CollectionNotFoundError(collection.name)
        return _info(_payload(point)), str(point.id)

    def _counted(self, payload: dict[str, Any]) -> CollectionInfo:
        info = _info(payload)
        key = collection_point_id(self._namespace, info.owner, info.name)
        chunks = self._chunk_collection(info)
        live = models.Filter(must=[match("collection", key), match("live", True)])
        return replace(
            info,
            document_count=self._count(self._layout.documents, _committed(key)),
            chunk_count=self._count(chunks, live) if self._client.collection_exists(chunks) else 0,
        )

    def _count(self, name: str, where: models.Filter) -> int:
        return int(self._client.count(name, count_filter=where, exact=True).count)

    def _document_point(self, key: str, document_id: str) -> models.Record | None:
        found = self._client.retrieve(
            self._layout.documents, ids=[document_point_id(key, document_id)], with_payload=True
        )
        if not found or _payload(found[0]).get("collection") != key:
            return None
        return found[0]

    def _source_point(self, key: str, info: CollectionInfo, source: str) -> models.Record | None:
        """The point of ``info``'s document stored under ``source``: a lookup by id, since a
        document with a source has the id :func:`new_document_id` names."""
        return self._document_point(key, new_document_id(info.key, source))

    def _statistics(self, key: str) -> tuple[int, int]:
        """Σdl and the chunk count kept on the collection's point (what a write's sparse
        vectors take avgdl from)."""
        found = self._client.retrieve(
            self._layout.collections, ids=[key], with_payload=["length", "chunks"]
        )
        payload = _payload(found[0]) if found else {}
        return int(payload.get("length", 0)), int(payload.get("chunks", 0))

    def _add_statistics(self, key: str, length: int, chunks: int) -> None:
        if length or chunks:
            stored_length, stored_chunks = self._statistics(key)
            self._client.set_payload(
                self._layout.collections,
                payload={"length": stored_length + length, "chunks": stored_chunks + chunks},
                points=[key],
            )

    def _entries(self, key: str, kind: str, field: str = "keys") -> Any:
        """A lookup: the ``kind`` entries of the collection under any of the given keys."""

        def lookup(keys: list[str]) -> list[str]:
            points = scroll_all(
                self._client.scroll,
                collection_name=self._layout.vocabulary,
                scroll_filter=models.Filter(
                    must=[
                        match("collection", key),
                        match("kind", kind),
                        models.FieldCondition(key=field, match=models.MatchAny(any=keys)),
                    ]
                ),
                with_payload=["entry"],
            )
            return [str(_payload(point)["entry"]) for point in points]

        return lookup

    def _scope(self, info: CollectionInfo, key: str, filters: Filters | None) -> models.Filter:
        """The filter every leg's query carries: the collection's live chunks and, with
        ``filters``, those that match them (:mod:`.filters`)."""
        live = models.Filter(must=[match("collection", key), match("live", True)])
        expression = as_expression(filters)
        if expression is None:
            return live
        shared = getattr(filters, "shared", None)

        def fallback(part: FilterExpression, among: models.Filter | None) -> models.Filter:
            def matching() -> list[str]:
                points = scroll_all(
                    self._client.scroll,
                    collection_name=self._chunk_collection(info),
                    scroll_filter=live if among is None else models.Filter(must=[live, among]),
                    with_payload=["metadata"],
                )
                return [str(p.id) for p in points if matches(part, _payload(p)["metadata"])]

            ask = ("qdrant_ids", key, part, among is None)
            ids = matching() if shared is None else shared.once(ask, matching)
            return models.Filter(must=[models.HasIdCondition(has_id=list(ids))]) if ids else NOTHING

        return models.Filter(must=[live, to_qdrant(expression, fallback)])


def _payload(point: models.Record | models.ScoredPoint) -> dict[str, Any]:
    """A point's payload (every point this store writes has one)."""
    return point.payload or {}


def _owner(owner: str | None) -> str:
    """A keyword for the owner that tells the shared collections (None) from every owner."""
    return "shared" if owner is None else f"owner:{owner}"


def _committed(key: str) -> models.Filter:
    """A collection's documents whose chunks a write has made live."""
    return models.Filter(
        must=[match("collection", key)],
        must_not=[models.IsEmptyCondition(is_empty=models.PayloadField(key="generation"))],
    )


def _holding(live: models.Filter, field: str, entry: str) -> models.Filter:
    return models.Filter(must=[live, match(field, entry)])


def _entry_point(key: str, kind: str, entry: str) -> models.PointStruct:
    payload: dict[str, Any] = {
        "collection": key,
        "kind": kind,
        "entry": entry,
        "keys": sorted(entry_keys(entry)),
    }
    if kind == "word":
        payload["prefixes"] = [entry[:end] for end in range(1, len(entry) + 1)]
    return models.PointStruct(id=vocabulary_point_id(key, kind, entry), vector={}, payload=payload)


def _info(payload: dict[str, Any]) -> CollectionInfo:
    return CollectionInfo(
        name=payload["name"],
        owner=payload["owner"],
        dimensions=int(payload["dimensions"]),
        embedding_model=payload["embedding_model"],
        metric=DistanceMetric(payload["metric"]),
        analyzer=payload["analyzer"],
    )


def _document_record(info: CollectionInfo, payload: dict[str, Any]) -> DocumentRecord:
    return DocumentRecord(
        id=payload["id"],
        collection=info.name,
        source=payload["source"],
        title=payload["title"],
        tags=tuple(payload["tags"]),
        content_hash=payload["content_hash"],
        created_at=datetime.fromisoformat(payload["created_at"]),
        chunk_count=int(payload["chunk_count"]),
        metadata=dict(payload["metadata"]),
    )


def _chunk_record(payload: dict[str, Any]) -> ChunkRecord:
    return ChunkRecord(
        id=payload["chunk_id"],
        document_id=payload["document_id"],
        index=int(payload["index"]),
        content=payload["content"],
        start_offset=int(payload["start_offset"]),
        end_offset=int(payload["end_offset"]),
        metadata=dict(payload["metadata"]),
    )


def _similarity(score: float, metric: DistanceMetric) -> float:
    """Qdrant's score as the store contract's similarity: cosine and dot as they are, the
    Euclidean distance as ``1 / (1 + d)``."""
    if metric is DistanceMetric.L2:
        return 1.0 / (1.0 + max(score, 0.0))
    return float(score)


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InvalidInputError(f"n must be zero or a positive integer, got {n!r}.")
