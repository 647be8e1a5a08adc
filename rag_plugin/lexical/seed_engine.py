"""The seed's in-memory lexical engine (SPEC S2, S3, L4), kept for code written against it.

:class:`SearchEngine` keeps a BM25 and a fuzzy index side by side, the way the seed server's
engine did, and saves them as ``bm25_index.json`` and ``fuzzy_index.json`` (L4). Its hybrid
search fuses a semantic ranking the caller passes in with the two lexical legs, each asked for
``2·top_k`` candidates, through the product's one fusion (:meth:`RrfFusion.fuse
<rag_plugin.fusion.RrfFusion.fuse>`, same tie rule) with the seed's weights and ``k``
(``SEED_WEIGHTS``, ``SEED_RRF_K``) unless told otherwise. The product searches stores through
:class:`~rag_plugin.engine.CollectionSearcher`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Self

from rag_plugin.exceptions import StoreError
from rag_plugin.fusion import SEED_RRF_K, SEED_WEIGHTS, HybridWeights, RrfFusion
from rag_plugin.lexical.analyzers import Analyzer, resolve_analyzer
from rag_plugin.lexical.bm25 import DEFAULT_B, DEFAULT_K1, Bm25Index, validate_top_k
from rag_plugin.lexical.correction import Correction
from rag_plugin.lexical.fuzzy import DEFAULT_MAX_DISTANCE, FuzzyIndex

__all__ = ["BM25_INDEX_FILE", "FUZZY_INDEX_FILE", "CorrectedSearch", "SearchEngine"]

logger = logging.getLogger(__name__)

BM25_INDEX_FILE = "bm25_index.json"
FUZZY_INDEX_FILE = "fuzzy_index.json"


class CorrectedSearch(NamedTuple):
    """Results of a typo-corrected search, with the query actually run and what changed."""

    results: list[tuple[str, float]]
    corrected_query: str
    corrections: tuple[Correction, ...]


def _ids(ranking: Sequence[str] | Sequence[tuple[str, float]]) -> list[str]:
    return [item if isinstance(item, str) else item[0] for item in ranking]


class SearchEngine:
    """The seed's in-memory lexical engine: BM25 and fuzzy over the same documents (module
    docstring)."""

    def __init__(
        self,
        analyzer: str | Analyzer = "seed",
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        max_distance: int = DEFAULT_MAX_DISTANCE,
        rrf_k: float = SEED_RRF_K,
    ) -> None:
        chosen = resolve_analyzer(analyzer)
        self.bm25 = Bm25Index(k1=k1, b=b, analyzer=chosen)
        self.fuzzy = FuzzyIndex(max_distance=max_distance, analyzer=chosen)
        self.fusion = RrfFusion(k=rrf_k)

    @property
    def analyzer(self) -> Analyzer:
        """The analyzer both indexes use."""
        return self.bm25.analyzer

    def index_document(self, doc_id: str, content: str) -> None:
        """Index ``content`` under ``doc_id`` in both legs, replacing what the id held."""
        self.bm25.add_document(doc_id, content)
        self.fuzzy.add_document(doc_id, content)

    def remove_document(self, doc_id: str) -> bool:
        """Remove ``doc_id`` from both legs; False if it was not indexed."""
        removed = self.bm25.remove_document(doc_id)
        return self.fuzzy.remove_document(doc_id) or removed

    def clear(self) -> None:
        """Forget every document."""
        self.bm25.clear()
        self.fuzzy.clear()

    def __len__(self) -> int:
        return len(self.bm25)

    @property
    def is_empty(self) -> bool:
        """True when no document is indexed."""
        return len(self.bm25) == 0

    def search_bm25(self, query: str, top_k: int) -> list[tuple[str, float]]:
        """The ``top_k`` best documents by BM25."""
        return self.bm25.search(query, top_k)

    def search_fuzzy(self, query: str, top_k: int) -> list[tuple[str, float]]:
        """The ``top_k`` best documents by fuzzy word similarity."""
        return self.fuzzy.search(query, top_k)

    def search_hybrid(
        self,
        query: str,
        semantic: Sequence[str] | Sequence[tuple[str, float]],
        weights: HybridWeights | None = None,
        top_k: int = 10,
    ) -> list[tuple[str, float]]:
        """Fuse ``semantic`` (best first) with the BM25 and fuzzy rankings; raw RRF scores."""
        validate_top_k(top_k)
        weights = weights if weights is not None else SEED_WEIGHTS
        if top_k == 0:
            return []
        fused = self.fusion.fuse(
            [
                (_ids(semantic), weights.semantic),
                (_ids(self.bm25.search(query, 2 * top_k)), weights.bm25),
                (_ids(self.fuzzy.search(query, 2 * top_k)), weights.fuzzy),
            ]
        )
        return fused[:top_k]

    def search_bm25_with_correction(self, query: str, top_k: int) -> CorrectedSearch:
        """Correct the query's typos against the vocabulary, then search BM25 with it."""
        correction = self.fuzzy.correct_query(query)
        results = self.search_bm25(correction.query, top_k)
        return CorrectedSearch(results, correction.query, correction.corrections)

    def search_hybrid_with_correction(
        self,
        query: str,
        semantic: Sequence[str] | Sequence[tuple[str, float]],
        weights: HybridWeights | None = None,
        top_k: int = 10,
    ) -> CorrectedSearch:
        """Correct the query's typos, then run :meth:`search_hybrid` with it."""
        correction = self.fuzzy.correct_query(query)
        results = self.search_hybrid(correction.query, semantic, weights, top_k)
        return CorrectedSearch(results, correction.query, correction.corrections)

    # -- persistence -----------------------------------------------------------------

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write ``bm25_index.json`` and ``fuzzy_index.json`` into ``directory`` (created)."""
        folder = Path(directory)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"Failed to create the index directory {folder}: {exc}") from exc
        self.bm25.save(folder / BM25_INDEX_FILE)
        self.fuzzy.save(folder / FUZZY_INDEX_FILE)

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Self:
        """Read an engine saved by :meth:`save`; raise StoreError if either file fails."""
        folder = Path(directory)
        bm25 = Bm25Index.load(folder / BM25_INDEX_FILE)
        fuzzy = FuzzyIndex.load(folder / FUZZY_INDEX_FILE)
        if bm25.analyzer.name != fuzzy.analyzer.name:
            raise StoreError(
                f"The indexes in {folder} use different analyzers "
                f"('{bm25.analyzer.name}' and '{fuzzy.analyzer.name}'); save them again."
            )
        engine = cls(analyzer=bm25.analyzer, k1=bm25.k1, b=bm25.b, max_distance=fuzzy.max_distance)
        engine.bm25, engine.fuzzy = bm25, fuzzy
        return engine

    @classmethod
    def load_or_new(
        cls,
        directory: str | os.PathLike[str],
        analyzer: str | Analyzer = "seed",
    ) -> Self:
        """The engine saved in ``directory``, or a new empty one if it is missing or broken."""
        if not Path(directory).is_dir():
            return cls(analyzer=analyzer)
        try:
            return cls.load(directory)
        except StoreError as exc:
            logger.warning("Starting with an empty search engine: %s", exc)
            return cls(analyzer=analyzer)
