"""Typo-tolerant matching: Levenshtein word similarity and query correction (SPEC L3, L4).

The per-document score is the seed's: for each whitespace-separated query word take the best
``1 − d/max(byte lengths)`` over the document's whitespace words (2 bytes or longer) within
``max_distance`` edits, then ``score = (Σ best / |words|) · (matched / |words|)``, where a query
word counts as matched when its best similarity is above 0. Search finds the close words with
rapidfuzz among the corpus's distinct words of a reachable length (an edit changes the length
by at most one), reaches documents through a word → documents index, and adds up per-document
similarities in numpy arrays, in query order, so scores equal :func:`fuzzy_score`'s bit for bit.

Deliberate differences from the seed: a document's text is lowercased before scoring (the seed
lowercased it when indexing, so scores through the index are the same); correction considers
every vocabulary term within ``max_distance`` edits (the seed also skipped terms whose *byte*
length differed by more, which lost non-ASCII matches), breaks ties by the higher document
frequency and then alphabetically (the seed took whatever its hash set gave first), and the
vocabulary forgets terms of removed documents. With a language analyzer (SPEC L6), search
leaves the analyzer's stopwords out of the query words, as BM25 does: a stopword matches
nearly every document exactly, so it only flattens the ranking and makes the search read
the longest posting lists; the seed analyzer has none and scores exactly as the seed did.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Container, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Self

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.lexical.analyzers import Analyzer, resolve_analyzer, text_words
from rag_plugin.lexical.bm25 import validate_top_k
from rag_plugin.lexical.correction import QueryCorrection, correct_with
from rag_plugin.lexical.persistence import JsonFileIndex
from rag_plugin.lexical.slots import DocumentSlots, FloatArray, IntArray, top_by_score

__all__ = [
    "DEFAULT_MAX_DISTANCE",
    "FuzzyIndex",
    "correct_word_against",
    "fuzzy_query_words",
    "fuzzy_score",
    "levenshtein",
    "word_similarity",
]


DEFAULT_MAX_DISTANCE = 2


def levenshtein(a: str, b: str) -> int:
    """The edit distance between ``a`` and ``b``, counted in characters."""
    return int(Levenshtein.distance(a, b))


def word_similarity(query_word: str, word: str, distance: int) -> float:
    """The seed's similarity of two words ``distance`` edits apart: ``1 − d/max(byte lengths)``."""
    longest = max(len(query_word.encode()), len(word.encode()))
    return 1.0 - distance / longest if longest else 1.0


def _validate_max_distance(max_distance: int) -> int:
    if isinstance(max_distance, bool) or not isinstance(max_distance, int) or max_distance < 0:
        raise InvalidInputError(
            f"max_distance must be zero or a positive integer, got {max_distance!r}."
        )
    return max_distance


def _text_words(text: str) -> list[str]:
    """A document's scoring words: its :func:`text_words` of 2 bytes or more."""
    return [word for word in text_words(text) if len(word.encode()) >= 2]


def fuzzy_query_words(query: str, analyzer: Analyzer) -> list[str]:
    """The words a fuzzy search scores: ``query``'s :func:`text_words`, minus the analyzer's
    stopwords (none for ``seed``), in order, repetitions kept."""
    return [word for word in text_words(query) if word not in analyzer.stopwords]


def _combine(bests: Iterable[float], word_count: int) -> float:
    """``(Σ best / n) · (matched / n)`` over the query words' best similarities, in query order."""
    total, matched = 0.0, 0
    for best in bests:
        if best > 0.0:
            total += best
            matched += 1
    return (total / word_count) * (matched / word_count)


def fuzzy_score(query: str, text: str, max_distance: int = DEFAULT_MAX_DISTANCE) -> float:
    """The seed's fuzzy score of ``text`` for ``query`` (0 when nothing is close)."""
    query_words = text_words(query)
    words = _text_words(text)
    if not query_words or not words:
        return 0.0
    bests: list[float] = []
    for query_word in query_words:
        best = 0.0
        for word in words:
            distance = Levenshtein.distance(query_word, word, score_cutoff=max_distance)
            if distance <= max_distance:
                best = max(best, word_similarity(query_word, word, distance))
        bests.append(best)
    return _combine(bests, len(query_words))


def _matches(word: str, choices: Sequence[str], max_distance: int) -> list[tuple[str, int]]:
    """Every choice within ``max_distance`` edits of ``word``, with its distance."""
    if not choices:
        return []
    # cdist runs the bit-parallel Levenshtein over all choices in C; farther ones come back as
    # max_distance + 1.
    row = process.cdist(
        [word], choices, scorer=Levenshtein.distance, score_cutoff=max_distance, dtype=np.int32
    )[0]
    return [(choices[i], int(row[i])) for i in np.flatnonzero(row <= max_distance).tolist()]


def _pick(
    matches: Iterable[tuple[str, int]], frequency: Mapping[str, int] | None
) -> tuple[str, int] | None:
    counts: Mapping[str, int] = frequency if frequency is not None else {}
    return min(
        matches, key=lambda match: (match[1], -counts.get(match[0], 0), match[0]), default=None
    )


def correct_word_against(
    word: str,
    vocabulary: Iterable[str],
    max_distance: int = DEFAULT_MAX_DISTANCE,
    frequency: Mapping[str, int] | None = None,
) -> tuple[str, int] | None:
    """The vocabulary word closest to ``word`` (lowercased) and its distance, or None.

    Ties on distance go to the word with the higher ``frequency`` (document frequency in our
    stores; missing counts as 0), then to the alphabetically first. A word that is in the
    vocabulary comes back unchanged with distance 0.
    """
    _validate_max_distance(max_distance)
    lowered = word.lower()
    choices = vocabulary if isinstance(vocabulary, Sequence) else list(vocabulary)
    return _pick(_matches(lowered, choices, max_distance), frequency)


def _by_length(words: Iterable[str]) -> dict[int, list[str]]:
    buckets: dict[int, list[str]] = {}
    for word in words:
        buckets.setdefault(len(word), []).append(word)
    return buckets


def _near(buckets: Mapping[int, list[str]], word: str, max_distance: int) -> list[tuple[str, int]]:
    """Every bucketed word within ``max_distance`` edits of ``word``, with its distance."""
    # Each edit changes the length by at most one character, so only nearby buckets can match.
    found: list[tuple[str, int]] = []
    for length in range(len(word) - max_distance, len(word) + max_distance + 1):
        found.extend(_matches(word, buckets.get(length, ()), max_distance))
    return found


class FuzzyIndex(JsonFileIndex):
    """An in-memory fuzzy index: documents' words for scoring, analyzer terms for correction.

    Corrections read as documents' words: see :mod:`rag_plugin.lexical.correction`.
    """

    what = "fuzzy index"  # in messages; files use the seed's layout

    def __init__(
        self, max_distance: int = DEFAULT_MAX_DISTANCE, analyzer: str | Analyzer = "seed"
    ) -> None:
        self.max_distance = _validate_max_distance(max_distance)
        self.analyzer = resolve_analyzer(analyzer)
        self.clear()

    # -- writing ---------------------------------------------------------------------

    def clear(self) -> None:
        """Forget every document and the whole vocabulary."""
        self._documents: dict[str, str] = {}
        self._slots = DocumentSlots()
        self._word_docs: dict[str, set[int]] = {}
        self._word_arrays: dict[str, IntArray] = {}
        self._term_df: Counter[str] = Counter()
        self._words: dict[int, list[str]] | None = None
        self._terms: dict[int, list[str]] | None = None
        self._sorted_words: list[str] | None = None

    def add_document(self, doc_id: str, content: str) -> None:
        """Index ``content`` under ``doc_id``, replacing what that id held before."""
        self.remove_document(doc_id)
        lowered = content.lower()
        self._documents[doc_id] = lowered
        slot = self._slots.add(doc_id)
        for word in set(_text_words(lowered)):
            self._word_docs.setdefault(word, set()).add(slot)
            self._word_arrays.pop(word, None)
        self._term_df.update(set(self.analyzer.tokens(lowered)))
        self._words = self._terms = self._sorted_words = None

    def remove_document(self, doc_id: str) -> bool:
        """Remove ``doc_id`` and the vocabulary terms no other document holds."""
        slot = self._slots.remove(doc_id)
        if slot is None:
            return False
        lowered = self._documents.pop(doc_id)
        for word in set(_text_words(lowered)):
            holders = self._word_docs[word]
            holders.discard(slot)
            if not holders:
                del self._word_docs[word]
            self._word_arrays.pop(word, None)
        for term in set(self.analyzer.tokens(lowered)):
            self._term_df[term] -= 1
            if self._term_df[term] <= 0:
                del self._term_df[term]
        self._words = self._terms = self._sorted_words = None
        return True

    # -- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._documents)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._documents

    @property
    def vocabulary(self) -> frozenset[str]:
        """Every analyzer term of the indexed documents."""
        return frozenset(self._term_df)

    @property
    def term_frequencies(self) -> Mapping[str, int]:
        """Each vocabulary term's document frequency (read-only)."""
        return MappingProxyType(self._term_df)

    def _terms_near(self, word: str) -> list[tuple[str, int]]:
        """Vocabulary terms within ``max_distance`` edits of ``word``, with their distances."""
        if self._terms is None:
            self._terms = _by_length(self._term_df)
        return _near(self._terms, word, self.max_distance)

    def _words_near(self, word: str) -> list[tuple[str, int]]:
        """Document words within ``max_distance`` edits of ``word``, with their distances."""
        if self._words is None:
            self._words = _by_length(self._word_docs)
        return _near(self._words, word, self.max_distance)

    def correct_word(self, word: str) -> tuple[str, int] | None:
        """The closest vocabulary term to ``word`` and its distance (see correct_word_against)."""
        lowered = word.lower()
        return _pick(self._terms_near(lowered), self._term_df)

    def correct_query(self, query: str) -> QueryCorrection:
        """Correct each word of ``query`` to the closest vocabulary term, as a readable word.

        With the seed analyzer each token becomes its closest term; with a stemming analyzer a
        misspelled word becomes the documents' word with the closest stem nearest to it (see
        :mod:`rag_plugin.lexical.correction`). A query without terms comes back unchanged.
        """
        return correct_with(self.analyzer, query, self._closest, self._words_starting_with)

    def _closest(self, terms: Sequence[str]) -> dict[str, tuple[str, int] | None]:
        return {term: self.correct_word(term) for term in terms}

    def _words_starting_with(self, prefixes: Sequence[str]) -> list[tuple[str, int]]:
        """The documents' words that begin with one of ``prefixes``, with their df."""
        if self._sorted_words is None:
            self._sorted_words = sorted(self._word_docs)
        words = self._sorted_words
        found: list[tuple[str, int]] = []
        for prefix in prefixes:
            position = bisect_left(words, prefix)
            while position < len(words) and words[position].startswith(prefix):
                found.append((words[position], len(self._word_docs[words[position]])))
                position += 1
        return found

    def search(
        self, query: str, top_k: int, allowed_ids: Container[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``top_k`` best ``(id, fuzzy score)`` pairs with score > 0, ties by id.

        ``allowed_ids`` restricts the documents considered before ranking (a metadata filter).
        """
        return self.search_words(fuzzy_query_words(query, self.analyzer), top_k, allowed_ids)

    def search_words(
        self, query_words: Sequence[str], top_k: int, allowed_ids: Container[str] | None = None
    ) -> list[tuple[str, float]]:
        """:meth:`search` of a query already split into the words it scores
        (:func:`fuzzy_query_words`)."""
        validate_top_k(top_k)
        if top_k == 0 or not query_words or not self._documents:
            return []
        capacity = self._slots.capacity
        totals = np.zeros(capacity, dtype=np.float64)
        matched = np.zeros(capacity, dtype=np.float64)
        best_by_word: dict[str, FloatArray] = {}
        # Query word by query word, so each document sums its similarities in the same order
        # as fuzzy_score (adding 0.0 for an unmatched word changes nothing) and gets its float.
        for query_word in query_words:
            best = best_by_word.get(query_word)
            if best is None:
                best = best_by_word[query_word] = self._bests(query_word, capacity)
            totals += best
            matched += best > 0.0
        candidates = np.flatnonzero(totals > 0.0)
        count = len(query_words)
        scores = (totals[candidates] / count) * (matched[candidates] / count)
        return top_by_score(candidates, scores, self._slots.ids, top_k, allowed_ids)

    def _bests(self, query_word: str, capacity: int) -> FloatArray:
        """Each document slot's best similarity to ``query_word`` (0 where nothing is close)."""
        best = np.zeros(capacity, dtype=np.float64)
        for word, distance in self._words_near(query_word):
            similarity = word_similarity(query_word, word, distance)
            if similarity > 0.0:
                slots = self._word_slots(word)
                best[slots] = np.maximum(best[slots], similarity)
        return best

    def _word_slots(self, word: str) -> IntArray:
        slots = self._word_arrays.get(word)
        if slots is None:
            holders = self._word_docs[word]
            slots = np.fromiter(holders, dtype=np.intp, count=len(holders))
            self._word_arrays[word] = slots
        return slots

    # -- persistence -----------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The seed's file layout, plus the analyzer's name."""
        return {
            "documents": dict(self._documents),
            "vocabulary": sorted(self._term_df),
            "max_distance": self.max_distance,
            "analyzer": self.analyzer.name,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        """Rebuild an index from :meth:`to_json` output (or a seed file); raise ValueError."""
        documents = data.get("documents")
        if not isinstance(documents, dict):
            raise ValueError("'documents' must map ids to text")
        index = cls(
            max_distance=data.get("max_distance", DEFAULT_MAX_DISTANCE),
            analyzer=str(data.get("analyzer", "seed")),
        )
        for doc_id, text in documents.items():
            if not isinstance(text, str):
                raise ValueError(f"the text of document {doc_id!r} is not a string")
            # The vocabulary is rebuilt from the documents, so it never holds removed terms.
            index.add_document(doc_id, text)
        return index
