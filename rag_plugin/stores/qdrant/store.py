"""The Qdrant store: every collection, document, chunk and word kept in Qdrant (SPEC V6).

For a user who keeps vectors in a Qdrant server or cluster (sharded and replicated across
machines) instead of PostgreSQL, and, with qdrant-client's local mode (``location=":memory:"``
or ``path=folder``), for tests and single-process use. All its state is in Qdrant, so any
number of app processes share one server. Where each thing lives: :mod:`.layout`; how the
lexical legs score exactly from Qdrant's candidates: :mod:`.lexical`; how a write stays
repairable without transactions: :mod:`.writes`; the connection and shared lookups:
:mod:`.space`; where the lexical legs look words up (Qdrant, or a mirror in local mode):
:mod:`.lexicon`; the embedding cache: :mod:`.cache`.

Metadata filters become Qdrant conditions inside every leg's query, before ranking, with the
memory store's rules exactly (:mod:`.filters`); the few forms Qdrant cannot express exactly are
evaluated over the collection's chunk payloads, once per search, and join as the ids they keep.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from qdrant_client import models

from rag_plugin.exceptions import (
    CollectionExistsError,
    CollectionNotFoundError,
    DocumentNotFoundError,
    InvalidInputError,
)
from rag_plugin.filters import FilterExpression, as_expression, matches
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import bm25_idf
from rag_plugin.lexical.correction import correct_with
from rag_plugin.lexical.fuzzy import fuzzy_query_words
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
    check_leg_size,
    check_same_model,
    settled_collection,
    validate_collection_name,
)
from rag_plugin.stores.prepared import prepare_document
from rag_plugin.stores.qdrant.cache import QdrantEmbeddingCache
from rag_plugin.stores.qdrant.filters import NOTHING, to_qdrant
from rag_plugin.stores.qdrant.layout import (
    DENSE,
    SPARSE,
    collection_point_id,
    document_point_id,
    match,
)
from rag_plugin.stores.qdrant.lexical import (
    bm25_candidates,
    bm25_score,
    close_entries,
    fuzzy_scores,
    query_sparse,
    scroll_all,
    similarities_of,
)
from rag_plugin.stores.qdrant.space import (
    chunk_record,
    collection_info,
    committed,
    committed_point,
    document_record,
    owner_key,
    payload_of,
)
from rag_plugin.stores.qdrant.writes import QdrantWrites
from rag_plugin.vectors import DistanceMetric, validate_embedding

__all__ = ["QdrantStore"]


_CHUNK_FIELDS = [
    "chunk_id",
    "document_id",
    "index",
    "content",
    "start_offset",
    "end_offset",
    "metadata",
]


class QdrantStore(QdrantWrites, Store):
    """Collections kept in Qdrant: a server (``url=``) or qdrant-client's local mode.

    ``QdrantStore(url="http://localhost:6334", api_key_env="QDRANT_API_KEY",
    prefer_grpc=True)`` talks to a server (the seed's ``database.qdrant`` settings: the API key
    is read from the named environment variable, never passed in); ``location=":memory:"`` or
    ``path=folder`` run Qdrant in this process. ``namespace`` separates users of one Qdrant
    (the portal passes its tenant); ``prefix`` names the Qdrant collections. In local mode
    the lexical legs read words from an in-process mirror of Qdrant's points
    (:mod:`.lexicon`); ``mirror=False`` makes them ask Qdrant, as they do a server.
    """

    def for_namespace(self, namespace: str) -> QdrantStore:
        """A store of another namespace on the same client (one client per process serves
        every tenant; local mode can open its folder only once)."""
        sibling = copy.copy(self)
        sibling._namespace = namespace
        return sibling

    def embedding_cache(self) -> QdrantEmbeddingCache:
        """An embedding cache (E7) in this Qdrant and namespace, for an embedder's
        ``cache=``: with it, everything the engine keeps is in Qdrant."""
        name = self._layout.embeddings
        return QdrantEmbeddingCache(lambda: self._plain(name), name, self._namespace)

    def delete_namespace(self) -> int:
        """Delete every collection of this namespace, whoever owns it, and its embedding
        cache (the portal calls it when a tenant is deleted); return how many collections
        there were."""
        with self._using():
            points = scroll_all(
                self._client.scroll,
                collection_name=self._layout.collections,
                scroll_filter=models.Filter(must=[match("namespace", self._namespace)]),
                with_payload=True,
            )
        for point in points:
            info = collection_info(payload_of(point))
            self.delete_collection(info.name, owner=info.owner)
        cache = self._layout.embeddings
        with self._plain(cache) as client:
            mine = models.Filter(must=[match("namespace", self._namespace)])
            client.delete(cache, points_selector=models.FilterSelector(filter=mine))
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
            return self._counted(payload_of(point))

    def list_collections(self, *, owner: str | None = None) -> list[CollectionInfo]:
        """Return the owner's collections (``owner=None``: the shared ones), sorted by name."""
        with self._using():
            points = scroll_all(
                self._client.scroll,
                collection_name=self._layout.collections,
                scroll_filter=models.Filter(
                    must=[match("namespace", self._namespace), match("owner_key", owner_key(owner))]
                ),
                with_payload=True,
            )
            found = [self._counted(payload_of(point)) for point in points]
        return sorted(found, key=lambda info: info.name)

    def delete_collection(self, name: str, *, owner: str | None = None) -> int:
        """Delete the collection and everything in it; return how many documents it had."""
        validate_collection_name(name)
        with self._using():
            point = self._collection_point(owner, name)
            if point is None:
                raise CollectionNotFoundError(name)
            info = collection_info(payload_of(point))
            key = str(point.id)
            self._lexicon.forget(key)
            documents = self._count(self._layout.documents, committed(key))
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
                info = collection_info(payload_of(point))
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
            stored = committed_point(self._document_point(key, document_id))
            if stored is None:
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
            stored = committed_point(self._document_point(key, document_id))
        if stored is None:
            raise DocumentNotFoundError(document_id)
        return document_record(info, payload_of(stored))

    def find_document(self, collection: CollectionInfo, *, source: str) -> DocumentRecord | None:
        """Return the document stored under a non-empty ``source``, or None."""
        if not source:
            return None
        with self._using():
            info, key = self._resolve(collection)
            found = committed_point(self._source_point(key, info, source))
        if found is None:
            return None
        return document_record(info, payload_of(found))

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
                scroll_filter=committed(key),
                limit=offset + limit,
                order_by=models.OrderBy(key="seq", direction=models.Direction.DESC),
                with_payload=True,
            )
        return [document_record(info, payload_of(point)) for point in points[offset:]]

    def document_chunks(self, collection: CollectionInfo, document_id: str) -> list[ChunkRecord]:
        """Return a document's chunks in index order."""
        with self._using():
            info, key = self._resolve(collection)
            stored = committed_point(self._document_point(key, document_id))
            if stored is None:
                raise DocumentNotFoundError(document_id)
            points = scroll_all(
                self._client.scroll,
                collection_name=self._chunk_collection(info),
                scroll_filter=models.Filter(
                    must=[
                        match("collection", key),
                        match("document_id", document_id),
                        match("generation", payload_of(stored)["generation"]),
                    ]
                ),
                with_payload=_CHUNK_FIELDS,
            )
        chunks = [chunk_record(payload_of(point)) for point in points]
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
        check_leg_size(n)
        with self._using():
            info, key = self._resolve(collection)
            validate_embedding(vector, info.dimensions)
            if n == 0:
                return []
            scope = self._scope(info, key, filters)
            found = self._client.query_points(
                self._chunk_collection(info),
                query=[float(x) for x in vector],
                using=DENSE,
                query_filter=scope,
                limit=n,
                with_payload=_CHUNK_FIELDS,
            ).points
        scored = [
            ScoredChunk(chunk_record(payload_of(point)), _similarity(point.score, info.metric))
            for point in found
        ]
        return sorted(scored, key=lambda hit: (-hit.score, hit.chunk.id))

    def bm25(
        self, collection: CollectionInfo, query: str, n: int, filters: Filters | None = None
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by BM25 over the whole collection; only scores > 0."""
        check_leg_size(n)
        with self._using():
            info, key = self._resolve(collection)
            tokens = get_analyzer(info.analyzer).tokens(query)
            if n == 0 or not tokens:
                return []
            chunks = self._chunk_collection(info)
            total = self._lexicon.live_count(chunks, key)
            idf = {
                term: bm25_idf(total, self._lexicon.holders(chunks, key, "terms", term))
                for term in set(tokens)
            }
            sparse = query_sparse(tokens, idf)
            if not sparse.indices:
                return []
            scope = self._scope(info, key, filters)
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
            payload = payload_of(point)
            score = bm25_score(tokens, payload["tf"], payload["dl"], average, idf)
            if score > 0.0:
                scored.append(ScoredChunk(chunk_record(payload), score))
        scored.sort(key=lambda hit: (-hit.score, hit.chunk.id))
        return scored[:n]

    def fuzzy(
        self, collection: CollectionInfo, query: str, n: int, filters: Filters | None = None
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by the fuzzy word-match score; only scores > 0; ties by id."""
        check_leg_size(n)
        with self._using():
            info, key = self._resolve(collection)
            words = fuzzy_query_words(query, get_analyzer(info.analyzer))
            if n == 0 or not words:
                return []
            distinct = list(dict.fromkeys(words))
            near = close_entries(distinct, lambda keys: self._lexicon.entries(key, "word", keys))
            similarities = {word: similarities_of(word, near[word]) for word in distinct}
            close = sorted({word for found in similarities.values() for word in found})
            if not close:
                return []
            chunks = self._chunk_collection(info)
            scope = None if as_expression(filters) is None else self._scope(info, key, filters)
            holders = self._lexicon.word_holders(chunks, key, close, scope)
            scores = fuzzy_scores(
                words, [(holder.chunk_id, holder.words) for holder in holders], similarities
            )
            scores.sort(key=lambda pair: (-pair[1], pair[0]))
            best = dict(scores[:n])
            point_of = {holder.chunk_id: holder.point for holder in holders}
            records = {
                payload_of(record)["chunk_id"]: chunk_record(payload_of(record))
                for record in self._client.retrieve(
                    chunks,
                    ids=[point_of[chunk_id] for chunk_id in best],
                    with_payload=_CHUNK_FIELDS,
                )
            }
        return [ScoredChunk(records[chunk_id], score) for chunk_id, score in best.items()]

    def correct_query(self, collection: CollectionInfo, query: str) -> QueryCorrection:
        """Correct each query word to the closest word of the collection's vocabulary."""
        with self._using():
            info, key = self._resolve(collection)
            chunks = self._chunk_collection(info)
            lexicon = self._lexicon

            def closest(terms: Sequence[str]) -> dict[str, tuple[str, int] | None]:
                found: dict[str, tuple[str, int] | None] = {}
                near = close_entries(
                    [term.lower() for term in terms],
                    lambda keys: lexicon.entries(key, "term", keys),
                )
                for term in terms:
                    close = near[term.lower()]
                    counted = [
                        (entry, distance, lexicon.holders(chunks, key, "terms", entry))
                        for entry, distance in close
                    ]
                    held = [item for item in counted if item[2] > 0]
                    best = min(held, key=lambda item: (item[1], -item[2], item[0]), default=None)
                    found[term] = None if best is None else (best[0], best[1])
                return found

            def words_starting_with(prefixes: Sequence[str]) -> list[tuple[str, int]]:
                found: list[tuple[str, int]] = []
                for prefix in prefixes:
                    for entry in lexicon.entries(key, "word", [prefix], field="prefixes"):
                        count = lexicon.holders(chunks, key, "words", entry)
                        if count:
                            found.append((entry, count))
                return found

            return correct_with(get_analyzer(info.analyzer), query, closest, words_starting_with)

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
                return [str(p.id) for p in points if matches(part, payload_of(p)["metadata"])]

            ask = ("qdrant_ids", key, part, among is None)
            ids = matching() if shared is None else shared.once(ask, matching)
            return models.Filter(must=[models.HasIdCondition(has_id=list(ids))]) if ids else NOTHING

        return models.Filter(must=[live, to_qdrant(expression, fallback)])


def _similarity(score: float, metric: DistanceMetric) -> float:
    """Qdrant's score as the store contract's similarity: cosine and dot as they are, the
    Euclidean distance as ``1 / (1 + d)``."""
    if metric is DistanceMetric.L2:
        return 1.0 / (1.0 + max(score, 0.0))
    return float(score)
