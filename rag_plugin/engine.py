"""The search engine above the stores: strategies, fusion, typo correction and thresholds.

Written once for every :class:`~rag_plugin.stores.base.Store`; a store only answers the three
legs (dense, BM25, fuzzy) for one collection. Decisions this module makes:

- **Hybrid** takes ``max(2·top_k, 50)`` candidates from the dense and BM25 legs and
  ``2·top_k`` from the fuzzy leg (the seed fetched ``2·limit`` from every leg: pass
  ``candidates=2 * top_k`` for that; :func:`hybrid_candidates` says why) and fuses them by
  weighted RRF keyed on chunk ids. A leg whose weight is 0 is not run at all (a zero dense
  weight embeds nothing).
- **Scores**: ``SearchHit.score`` is the strategy's own score — cosine/L2/inner-product
  similarity, BM25, fuzzy, or the raw RRF sum. Hybrid hits also carry
  ``normalized_score = raw / (Σw / (k + 1))`` in [0, 1], and for hybrid the ``threshold``
  applies to that normalised score, so one threshold means the same thing whatever the
  weights and ``k``. For the other strategies it applies to ``score``.
- **Lexical query**: ``lexical_query``, when given, is what the lexical legs (BM25, fuzzy)
  search for instead of ``query`` — a retrieval profile's expanded query (L5) — while the
  dense leg embeds ``query``; the legs are fused exactly as without it.
- **Typo correction** (``correct_typos=True``) corrects the lexical legs' query against the
  collection's vocabulary and reruns the *lexical* legs (BM25, fuzzy) with it. The dense leg
  always embeds the original query: embeddings tolerate typos, and the corrected query is
  lowercased words without punctuation, which would lose casing and punctuation the model
  can use. With the semantic strategy no correction is made. ``corrected_query`` is set
  only when at least one word changed (it is the corrected *lexical* query, so with
  ``lexical_query`` the corrected expansion); otherwise the legs run on the uncorrected one.
- **Order**: scores descending; equal scores go by chunk id (hybrid: by the best rank in any
  leg first, as :meth:`RrfFusion.fuse` orders them). ``top_k=0`` returns no hits without
  touching the store; a negative ``top_k`` or an empty query raises ``InvalidInputError``.
- A query is always embedded with the collection's own model (E6): an embedder whose model
  name or dimension differs from the collection's raises :class:`ConfigurationError`.
- **Concurrent legs**: a store whose ``concurrent_legs`` attribute is true (the PostgreSQL
  store with a connection pool: the database does the work, so legs on separate connections
  overlap) gets its hybrid legs at once, the first in the calling thread and the others on a
  shared thread pool. Results are collected in leg order, so the fusion, and the error raised
  when a leg fails, are those of running them one after another. Other stores (the in-memory
  one computes in this process, under the GIL) run them in turn.
- **Explanation** (``explain=True``): the outcome also carries each leg's ranked list as it
  was fused and each returned hit's per-leg contributions (:mod:`rag_plugin.explain`); the
  hits are the same as without it, and a search that does not ask does none of that work.
"""

from __future__ import annotations

import contextvars
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait

from rag_plugin.embedding.base import Embedder
from rag_plugin.exceptions import ConfigurationError, InvalidInputError
from rag_plugin.explain import SearchExplanation, explain_fusion, explain_single
from rag_plugin.fusion import DEFAULT_RRF_K, HybridWeights, RrfFusion, SearchResult, rank_results
from rag_plugin.outcome import SearchHit, SearchOutcome
from rag_plugin.search import DEFAULT_STRATEGY, SearchStrategy
from rag_plugin.stores.base import (
    ChunkRecord,
    CollectionInfo,
    Correction,
    Filters,
    ScoredChunk,
    SearchContext,
    Store,
)

__all__ = [
    "MIN_HYBRID_CANDIDATES",
    "CollectionSearcher",
    "EmbedderResolver",
    "check_embedder",
    "hybrid_candidates",
]

EmbedderResolver = Callable[[CollectionInfo], Embedder]
"""Returns the embedder for a collection's model (see :class:`CollectionSearcher`)."""

MIN_HYBRID_CANDIDATES = 50
"""The dense and BM25 legs of a hybrid search hand at least this many chunks to the fusion."""

_LEXICAL = frozenset({SearchStrategy.BM25, SearchStrategy.FUZZY, SearchStrategy.HYBRID})

_Leg = Callable[[], Sequence[ScoredChunk]]
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _leg_executor() -> ThreadPoolExecutor:
    """The process's pool for concurrent legs, made on first use (legs never wait on legs)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=min(32, 2 * (os.cpu_count() or 1) + 4),
                thread_name_prefix="rag-leg",
            )
        return _executor


def _run_legs(legs: Sequence[_Leg], concurrent: bool) -> list[Sequence[ScoredChunk]]:
    """Each leg's hits, in leg order; concurrently when asked and there is more than one."""
    if not concurrent or len(legs) < 2:
        return [leg() for leg in legs]
    # Each leg runs in a copy of the caller's context: what it carries (the read-after
    # position of replicas.py, say) holds in the leg's thread too.
    futures: list[Future[Sequence[ScoredChunk]]] = [
        _leg_executor().submit(contextvars.copy_context().run, leg) for leg in legs[1:]
    ]
    try:
        first = legs[0]()
    finally:
        # Wait for every leg even when one failed, so none outlives the search.
        wait(futures)
    return [first, *(future.result() for future in futures)]


class CollectionSearcher:
    """Runs a search strategy over one collection of a store.

    ``embedder`` is either one :class:`Embedder` or a resolver that returns the embedder for
    a collection (for stores whose collections use different models). It is consulted only
    when a dense leg runs.

    ``leg_timer``, when given, is told each leg's strategy and its seconds (a dense leg's
    include embedding the query), e.g. to feed a latency metric; without it nothing is timed.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | EmbedderResolver,
        *,
        leg_timer: Callable[[SearchStrategy, float], None] | None = None,
    ) -> None:
        self.store = store
        self._embedder = embedder
        self._leg_timer = leg_timer

    def _timed(self, strategy: SearchStrategy, leg: _Leg) -> _Leg:
        """``leg``, reporting its time to the leg timer when there is one."""
        timer = self._leg_timer
        if timer is None:
            return leg

        def timed() -> Sequence[ScoredChunk]:
            started = time.perf_counter()
            try:
                return leg()
            finally:
                timer(strategy, time.perf_counter() - started)

        return timed

    def search(
        self,
        collection: CollectionInfo,
        query: str,
        *,
        strategy: SearchStrategy | str = DEFAULT_STRATEGY,
        top_k: int = 10,
        threshold: float = 0.0,
        correct_typos: bool = False,
        filters: Filters | None = None,
        weights: HybridWeights | None = None,
        rrf_k: float = DEFAULT_RRF_K,
        query_vector: Sequence[float] | None = None,
        lexical_query: str | None = None,
        candidates: int | None = None,
        explain: bool = False,
    ) -> SearchOutcome:
        """Return the ``top_k`` best chunks of ``collection`` for ``query`` by ``strategy``.

        ``candidates`` is how many chunks the dense and BM25 legs of a hybrid search hand to
        the fusion (default :func:`hybrid_candidates`: ``max(2 · top_k, 50)``): a deeper list
        lets a chunk that both legs rank 30th beat one that a single leg ranks 5th. The fuzzy
        leg hands ``min(candidates, 2 · top_k)``: it is the slow leg, and its deeper ranks are
        mostly ties among chunks that match the same words.

        ``query_vector``, when given, is the query's embedding for the dense leg (a LlamaIndex
        vector store query carries one), so the query is not embedded again.
        ``lexical_query``, when given, is what the BM25 and fuzzy legs search for (an
        expanded query); the dense leg still embeds ``query``.
        ``explain`` adds the outcome's :attr:`~SearchOutcome.explanation`.
        """
        chosen = SearchStrategy.parse(strategy) if isinstance(strategy, str) else strategy
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("The search query is empty; pass some text to search for.")
        if lexical_query is not None and (
            not isinstance(lexical_query, str) or not lexical_query.strip()
        ):
            raise InvalidInputError(
                "The lexical query is empty; pass some text or leave it out to search for "
                "the query itself."
            )
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
            raise InvalidInputError(f"top_k must be zero or a positive integer, got {top_k!r}.")
        if not math.isfinite(threshold):
            raise InvalidInputError(f"threshold must be a finite number, got {threshold!r}.")
        if candidates is not None and (
            isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1
        ):
            raise InvalidInputError(f"candidates must be a positive integer, got {candidates!r}.")
        weights = weights if weights is not None else HybridWeights()
        fusion = RrfFusion(k=rrf_k)  # validates k before any work is done
        if top_k == 0:
            return SearchOutcome((), chosen, query, explanation=_NOTHING if explain else None)

        lexical_query = query if lexical_query is None else lexical_query
        corrected = None
        corrections: tuple[Correction, ...] = ()
        if correct_typos and chosen in _LEXICAL:
            correction = self.store.correct_query(collection, lexical_query)
            if correction.corrections:
                lexical_query = corrected = correction.query
                corrections = correction.corrections

        explanation = None
        if chosen is SearchStrategy.HYBRID:
            hits, explanation = self._hybrid(
                collection,
                query,
                lexical_query,
                top_k,
                threshold,
                filters,
                weights,
                fusion,
                query_vector,
                candidates if candidates is not None else hybrid_candidates(top_k),
                explain,
            )
        else:
            single: dict[SearchStrategy, _Leg] = {
                SearchStrategy.SEMANTIC: lambda: self._dense(
                    collection, query, top_k, filters, query_vector
                ),
                SearchStrategy.BM25: lambda: self.store.bm25(
                    collection, lexical_query, top_k, filters
                ),
                SearchStrategy.FUZZY: lambda: self.store.fuzzy(
                    collection, lexical_query, top_k, filters
                ),
            }
            found = self._timed(chosen, single[chosen])()
            hits = _ranked(
                {hit.chunk.id: hit.chunk for hit in found},
                [SearchResult(hit.chunk.id, hit.score) for hit in found],
                threshold,
                top_k,
            )
            if explain:
                leg_query = query if chosen is SearchStrategy.SEMANTIC else lexical_query
                explanation = explain_single(chosen, leg_query, found)
        return SearchOutcome(tuple(hits), chosen, query, corrected, corrections, explanation)

    def embedder_for(self, collection: CollectionInfo) -> Embedder:
        """The embedder for ``collection``; raise if its model or dimension differs (E6)."""
        embedder = (
            self._embedder if isinstance(self._embedder, Embedder) else self._embedder(collection)
        )
        check_embedder(embedder, collection)
        return embedder

    def _dense(
        self,
        collection: CollectionInfo,
        query: str,
        n: int,
        filters: Filters | SearchContext | None,
        vector: Sequence[float] | None = None,
    ) -> list[ScoredChunk]:
        if vector is None:
            vector = self.embedder_for(collection).embed_query(query)
        return self.store.dense(collection, vector, n, filters)

    def _hybrid(
        self,
        collection: CollectionInfo,
        query: str,
        lexical_query: str,
        top_k: int,
        threshold: float,
        filters: Filters | None,
        weights: HybridWeights,
        fusion: RrfFusion,
        vector: Sequence[float] | None,
        n: int,
        explain: bool,
    ) -> tuple[list[SearchHit], SearchExplanation | None]:
        fuzzy_n = min(n, 2 * top_k)
        context = SearchContext.of(filters)  # the legs share what one of them learns
        runs: list[tuple[_Leg, float, SearchStrategy]] = []
        if weights.semantic > 0:
            runs.append(
                (
                    lambda: self._dense(collection, query, n, context, vector),
                    weights.semantic,
                    SearchStrategy.SEMANTIC,
                )
            )
        if weights.bm25 > 0:
            runs.append(
                (
                    lambda: self.store.bm25(collection, lexical_query, n, context),
                    weights.bm25,
                    SearchStrategy.BM25,
                )
            )
        if weights.fuzzy > 0:
            runs.append(
                (
                    lambda: self.store.fuzzy(collection, lexical_query, fuzzy_n, context),
                    weights.fuzzy,
                    SearchStrategy.FUZZY,
                )
            )
        concurrent = self.store.concurrent_legs
        found_by_leg = _run_legs([self._timed(leg, run) for run, _, leg in runs], concurrent)
        legs = [(found, w) for found, (_, w, _) in zip(found_by_leg, runs, strict=True)]
        chunks = {hit.chunk.id: hit.chunk for found, _ in legs for hit in found}
        fused = fusion.fuse([([hit.chunk.id for hit in found], w) for found, w in legs])
        ceiling = fusion.max_score(weights)
        # ``fuse`` already returns each id once, best first, with its own deterministic tie
        # rule (best rank in any leg, then id); rank_results' threshold and cut keep that order.
        kept = [(chunk_id, raw) for chunk_id, raw in fused if raw / ceiling >= threshold]
        hits = [SearchHit(chunks[i], raw, raw / ceiling) for i, raw in kept[:top_k]]
        if not explain:
            return hits, None
        explained = [
            (leg, query if leg is SearchStrategy.SEMANTIC else lexical_query, w, found)
            for found, (_, w, leg) in zip(found_by_leg, runs, strict=True)
        ]
        return hits, explain_fusion(fusion, explained, [hit.id for hit in hits])


_NOTHING = SearchExplanation(())
"""The explanation of a search that ran no leg (``top_k=0``)."""


def hybrid_candidates(top_k: int) -> int:
    """How many chunks the dense and BM25 legs of a hybrid search contribute by default:
    ``max(2 · top_k, 50)`` (the fuzzy leg keeps ``2 · top_k``).

    Chosen by bench/fusion_sweep.py and bench/quality.py (bench/RESULTS.md §1, round 3): for
    top_k 10 it lifts hybrid nDCG@10 on SciFact train and Vaswani by +0.003–0.005 and
    +0.012–0.016 over the former 20 per leg (``2 · top_k``, SPEC S2) for 1.12–1.13× the hybrid
    p95 latency at 100k chunks.
    """
    return max(2 * top_k, MIN_HYBRID_CANDIDATES)


def check_embedder(embedder: Embedder, collection: CollectionInfo) -> None:
    """Raise :class:`ConfigurationError` unless ``embedder`` is the collection's model (E6)."""
    if (embedder.model_name, embedder.dimensions) != (
        collection.embedding_model,
        collection.dimensions,
    ):
        raise ConfigurationError(
            f"Collection '{collection.name}' holds {collection.dimensions}-d vectors of the "
            f"model '{collection.embedding_model}', but the embedder is '{embedder.model_name}' "
            f"({embedder.dimensions}-d); use the collection's model."
        )


def _ranked(
    chunks: dict[str, ChunkRecord],
    results: Sequence[SearchResult],
    threshold: float,
    top_k: int,
) -> list[SearchHit]:
    return [
        SearchHit(chunks[result.id], result.score)
        for result in rank_results(results, threshold, top_k)
    ]
