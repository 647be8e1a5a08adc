"""The Qdrant store's search legs and typo correction (the store itself: :mod:`.store`).

Every leg's query carries the collection, liveness and the caller's filters (:meth:`_scope`),
so Qdrant filters inside the search, before ranking; how the lexical scores come out exact:
:mod:`.lexical`.
"""

from __future__ import annotations

from collections.abc import Sequence

from qdrant_client import models

from rag_plugin.filters import FilterExpression, matches
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import bm25_idf
from rag_plugin.lexical.correction import correct_with
from rag_plugin.stores.base import (
    CollectionInfo,
    QueryCorrection,
    ScoredChunk,
    SearchContext,
)
from rag_plugin.stores.qdrant.filters import NOTHING, to_qdrant
from rag_plugin.stores.qdrant.layout import DENSE, SPARSE, live_chunks
from rag_plugin.stores.qdrant.lexical import (
    bm25_candidates,
    bm25_score,
    close_entries,
    fuzzy_scores,
    query_sparse,
    scroll_all,
    similarities_of,
)
from rag_plugin.stores.qdrant.space import QdrantSpace, chunk_record, payload_of
from rag_plugin.vectors import DistanceMetric, validate_embedding

__all__ = ["CHUNK_FIELDS", "QdrantLegs"]

CHUNK_FIELDS = [
    "chunk_id",
    "document_id",
    "index",
    "content",
    "start_offset",
    "end_offset",
    "metadata",
]
"""The payload a leg returns of each chunk (what a ``ChunkRecord`` holds)."""


class QdrantLegs(QdrantSpace):
    """The legs, as methods of the store."""

    def _dense(
        self,
        collection: CollectionInfo,
        vector: Sequence[float],
        n: int,
        context: SearchContext,
    ) -> list[ScoredChunk]:
        """Qdrant's HNSW with the collection, liveness and filter inside the query (exact in
        local mode)."""
        with self._using():
            info, key = self._resolve(collection)
            validate_embedding(vector, info.dimensions)
            if n == 0:
                return []
            scope = self._scope(info, key, context)
            found = self._client.query_points(
                self._chunk_collection(info),
                query=[float(x) for x in vector],
                using=DENSE,
                query_filter=scope,
                limit=n,
                with_payload=CHUNK_FIELDS,
            ).points
        scored = [
            ScoredChunk(chunk_record(payload_of(point)), _similarity(point.score, info.metric))
            for point in found
        ]
        return sorted(scored, key=lambda hit: (-hit.score, hit.chunk.id))

    def _bm25(
        self, collection: CollectionInfo, query: str, n: int, context: SearchContext
    ) -> list[ScoredChunk]:
        with self._using():
            info, key = self._resolve(collection)
            tokens = context.tokens(info.analyzer, query)
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
            scope = self._scope(info, key, context)
            average = self._statistics(key)[0] / total
            found = self._client.query_points(
                chunks,
                query=sparse,
                using=SPARSE,
                query_filter=scope,
                limit=bm25_candidates(n),
                with_payload=[*CHUNK_FIELDS, "tf", "dl"],
            ).points
        scored = []
        for point in found:
            payload = payload_of(point)
            score = bm25_score(tokens, payload["tf"], payload["dl"], average, idf)
            if score > 0.0:
                scored.append(ScoredChunk(chunk_record(payload), score))
        scored.sort(key=lambda hit: (-hit.score, hit.chunk.id))
        return scored[:n]

    def _fuzzy(
        self, collection: CollectionInfo, query: str, n: int, context: SearchContext
    ) -> list[ScoredChunk]:
        """Ties by chunk id."""
        with self._using():
            info, key = self._resolve(collection)
            words = context.fuzzy_words(info.analyzer, query)
            if n == 0 or not words:
                return []
            distinct = list(dict.fromkeys(words))
            near = close_entries(distinct, lambda keys: self._lexicon.entries(key, "word", keys))
            similarities = {word: similarities_of(word, near[word]) for word in distinct}
            close = sorted({word for found in similarities.values() for word in found})
            if not close:
                return []
            chunks = self._chunk_collection(info)
            scope = self._scope(info, key, context) if context.filtered else None
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
                    with_payload=CHUNK_FIELDS,
                )
            }
        return [ScoredChunk(records[chunk_id], score) for chunk_id, score in best.items()]

    def _correct_query(self, collection: CollectionInfo, query: str) -> QueryCorrection:
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

    def _scope(self, info: CollectionInfo, key: str, context: SearchContext) -> models.Filter:
        """The filter every leg's query carries: the collection's live chunks and, with a
        filter, those that match it (:mod:`.filters`); what Qdrant cannot express is
        evaluated once a search (the context keeps the ids)."""
        live = live_chunks(key)
        expression = context.expression
        if expression is None:
            return live

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
            ids = context.once(ask, matching)
            return models.Filter(must=[models.HasIdCondition(has_id=list(ids))]) if ids else NOTHING

        return models.Filter(must=[live, to_qdrant(expression, fallback)])


def _similarity(score: float, metric: DistanceMetric) -> float:
    """Qdrant's score as the store contract's similarity: cosine and dot as they are, the
    Euclidean distance as ``1 / (1 + d)``."""
    if metric is DistanceMetric.L2:
        return 1.0 / (1.0 + max(score, 0.0))
    return float(score)
