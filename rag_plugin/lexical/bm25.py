"""BM25 (Okapi) exactly as the seed scores it, over an inverted index (SPEC L1, L2, L4).

``score(d, q) = Σ_{t ∈ q, repetitions counted} idf(t)·tf(k1+1) / (tf + k1(1 − b + b·dl/avgdl))``
with ``idf = ln((N − df + 0.5)/(df + 0.5) + 1)``. Each term's postings map a document slot to its
tf, so a query touches only the documents that hold one of its terms; numpy evaluates a term
over all its postings at once, with the very float operations of :func:`bm25_term_score`, in
query order, so scores equal that function's (and the PostgreSQL store's) bit for bit.

Unlike the seed, adding a document under an id that is already indexed replaces it: ``N`` and
the document frequencies never count a document twice.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Container, Sequence
from typing import Any, Self

import numpy as np

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.lexical.analyzers import Analyzer, resolve_analyzer
from rag_plugin.lexical.persistence import JsonFileIndex
from rag_plugin.lexical.slots import DocumentSlots, FloatArray, IntArray, top_by_score

__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "Bm25Index",
    "bm25_idf",
    "bm25_term_score",
    "bm25_term_scores",
    "validate_top_k",
]


DEFAULT_K1 = 1.2
DEFAULT_B = 0.75


def bm25_idf(doc_count: int, df: int) -> float:
    """The seed's idf, ``ln((N − df + 0.5)/(df + 0.5) + 1)``; 0 when ``df`` or ``N`` is 0."""
    if doc_count <= 0 or df <= 0:
        return 0.0
    return math.log((doc_count - df + 0.5) / (df + 0.5) + 1.0)


def bm25_term_score(
    tf: int,
    doc_len: int,
    avg_doc_len: float,
    idf: float,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
) -> float:
    """One query term's BM25 contribution to a document holding it ``tf`` times."""
    if tf <= 0 or avg_doc_len <= 0:
        return 0.0
    return idf * (tf * (k1 + 1.0)) / (tf + k1 * (1.0 - b + b * doc_len / avg_doc_len))


def bm25_term_scores(
    tfs: FloatArray | IntArray,
    doc_lens: FloatArray | IntArray,
    avg_doc_len: float,
    idf: float,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
) -> FloatArray:
    """:func:`bm25_term_score` of many postings at once: the same float operations in the
    same order, so each value is bit for bit the one the scalar function returns."""
    tf = np.asarray(tfs, dtype=np.float64)
    norm = tf + k1 * (1.0 - b + b * doc_lens / avg_doc_len)
    values: FloatArray = idf * (tf * (k1 + 1.0)) / norm
    return values


def validate_top_k(top_k: int) -> int:
    """``top_k`` if it is a non-negative integer; raise InvalidInputError otherwise."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise InvalidInputError(f"top_k must be zero or a positive integer, got {top_k!r}.")
    return top_k


def _validate_parameters(k1: float, b: float) -> None:
    if not (isinstance(k1, int | float) and math.isfinite(k1) and k1 >= 0):
        raise InvalidInputError(f"k1 must be a finite number >= 0, got {k1!r}.")
    if not (isinstance(b, int | float) and 0 <= b <= 1):
        raise InvalidInputError(f"b must be a number between 0 and 1, got {b!r}.")


class Bm25Index(JsonFileIndex):
    """An in-memory BM25 index over documents identified by id."""

    what = "BM25 index"  # in messages; files use the seed's layout

    def __init__(
        self, k1: float = DEFAULT_K1, b: float = DEFAULT_B, analyzer: str | Analyzer = "seed"
    ) -> None:
        _validate_parameters(k1, b)
        self.k1 = float(k1)
        self.b = float(b)
        self.analyzer = resolve_analyzer(analyzer)
        self.clear()

    # -- writing ---------------------------------------------------------------------

    def clear(self) -> None:
        """Forget every document."""
        self._slots = DocumentSlots()
        self._lengths: FloatArray = np.zeros(16, dtype=np.float64)
        self._doc_terms: dict[str, dict[str, int]] = {}
        self._postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, tuple[IntArray, FloatArray]] = {}
        self._total_length = 0

    def add_document(self, doc_id: str, content: str) -> None:
        """Index ``content`` under ``doc_id``, replacing what that id held before."""
        self._add_terms(doc_id, Counter(self.analyzer.tokens(content)))

    def _add_terms(self, doc_id: str, terms: Counter[str]) -> None:
        self.remove_document(doc_id)
        slot = self._slots.add(doc_id)
        if slot >= len(self._lengths):
            self._lengths = np.concatenate([self._lengths, np.zeros_like(self._lengths)])
        length = terms.total()
        self._lengths[slot] = length
        self._doc_terms[doc_id] = dict(terms)
        self._total_length += length
        for term, tf in terms.items():
            self._postings.setdefault(term, {})[slot] = tf
            self._arrays.pop(term, None)

    def remove_document(self, doc_id: str) -> bool:
        """Remove ``doc_id``; False if it was not indexed."""
        slot = self._slots.remove(doc_id)
        if slot is None:
            return False
        terms = self._doc_terms.pop(doc_id)
        self._lengths[slot] = 0.0
        self._total_length -= sum(terms.values())
        for term in terms:
            postings = self._postings[term]
            del postings[slot]
            if not postings:
                del self._postings[term]
            self._arrays.pop(term, None)
        return True

    # -- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._doc_terms)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_terms

    @property
    def doc_count(self) -> int:
        """N: the number of indexed documents."""
        return len(self._doc_terms)

    @property
    def avg_doc_length(self) -> float:
        """The mean number of terms per document; 0 when the index is empty."""
        return self._total_length / len(self._doc_terms) if self._doc_terms else 0.0

    def document_frequency(self, term: str) -> int:
        """How many documents hold the (already analyzed) ``term``."""
        return len(self._postings.get(term, ()))

    def idf(self, term: str) -> float:
        """The idf of the (already analyzed) ``term``; 0 for a term no document holds."""
        return bm25_idf(self.doc_count, self.document_frequency(term))

    def search(
        self, query: str, top_k: int, allowed_ids: Container[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``top_k`` best ``(id, score)`` pairs with score > 0, best first, ties by id.

        ``allowed_ids`` restricts the documents considered before ranking (a metadata filter).
        """
        return self.search_tokens(self.analyzer.tokens(query), top_k, allowed_ids)

    def search_tokens(
        self, tokens: Sequence[str], top_k: int, allowed_ids: Container[str] | None = None
    ) -> list[tuple[str, float]]:
        """:meth:`search` of a query already analysed into ``tokens`` (repetitions count)."""
        validate_top_k(top_k)
        if top_k == 0 or not tokens or not self._doc_terms:
            return []
        avg = self.avg_doc_length
        contributions: dict[str, tuple[IntArray, FloatArray] | None] = {}
        scores = np.zeros(self._slots.capacity, dtype=np.float64)
        touched: list[IntArray] = []
        # Term by term in query order, repetitions included, exactly as the seed sums.
        for token in tokens:
            if token in contributions:
                found = contributions[token]
            else:
                found = contributions[token] = self._contribution(token, avg)
                if found is not None:
                    touched.append(found[0])
            if found is not None:
                scores[found[0]] += found[1]
        if not touched:
            return []
        candidates = np.unique(np.concatenate(touched))
        return top_by_score(candidates, scores[candidates], self._slots.ids, top_k, allowed_ids)

    def _contribution(self, term: str, avg: float) -> tuple[IntArray, FloatArray] | None:
        """The term's postings slots and their score contributions (None if no doc holds it)."""
        postings = self._postings.get(term)
        if not postings:
            return None
        arrays = self._arrays.get(term)
        if arrays is None:
            slots = np.fromiter(postings.keys(), dtype=np.intp, count=len(postings))
            tfs = np.fromiter(postings.values(), dtype=np.float64, count=len(postings))
            arrays = self._arrays[term] = (slots, tfs)
        slots, tfs = arrays
        idf = bm25_idf(self.doc_count, len(postings))
        return slots, bm25_term_scores(tfs, self._lengths[slots], avg, idf, self.k1, self.b)

    # -- persistence -----------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The seed's file layout, plus the analyzer's name."""
        return {
            "documents": {
                doc_id: [term for term, tf in terms.items() for _ in range(tf)]
                for doc_id, terms in self._doc_terms.items()
            },
            "inverted_index": {
                term: sorted(str(self._slots.ids[slot]) for slot in postings)
                for term, postings in self._postings.items()
            },
            "document_frequencies": {term: len(p) for term, p in self._postings.items()},
            "doc_count": self.doc_count,
            "avg_doc_length": self.avg_doc_length,
            "k1": self.k1,
            "b": self.b,
            "analyzer": self.analyzer.name,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        """Rebuild an index from :meth:`to_json` output (or a seed file); raise ValueError."""
        documents = data.get("documents")
        if not isinstance(documents, dict):
            raise ValueError("'documents' must map ids to token lists")
        index = cls(
            k1=data.get("k1", DEFAULT_K1),
            b=data.get("b", DEFAULT_B),
            analyzer=str(data.get("analyzer", "seed")),
        )
        for doc_id, tokens in documents.items():
            if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
                raise ValueError(f"the tokens of document {doc_id!r} are not a list of strings")
            # Statistics are recomputed: the seed's stored doc_count can be inflated (quirk 8).
            index._add_terms(doc_id, Counter(tokens))
        return index
