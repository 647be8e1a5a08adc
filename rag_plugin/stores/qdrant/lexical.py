"""The Qdrant store's BM25 and fuzzy legs and typo correction, from its points.

Every score is the memory store's, exactly: Qdrant finds the candidates, Python scores them.

- **BM25.** Each chunk point has a sparse vector ``bm25`` whose value for a term is BM25's
  saturation ``tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`` with avgdl as it was when the
  chunk was written; the query's value is ``qtf · idf``, idf from the collection's own counts
  (Qdrant's ``IDF`` modifier would count over the whole Qdrant collection, which holds every
  tenant's collections of that size and metric). Qdrant's dot product ranks the chunks holding
  a query term; the best :func:`bm25_candidates` of them are scored again exactly, from the
  ``tf`` and ``dl`` of their payloads and the collection's N, df and avgdl now. So the scores
  are exact, and so is the ranking whenever no more chunks hold a query term than are
  rescored; beyond that a chunk whose sparse value is stale (avgdl has moved since it was
  written) can miss the rescoring by a little.
- **Fuzzy.** The collection's words are vocabulary points with their deletion keys, so a
  query word's close words come from one keyword lookup and rapidfuzz; the chunks holding
  them come from the ``words`` keyword payload, and are scored from it as ``FuzzyIndex`` does.
- **Correction** does the same over the analyzer terms, with df counted from the chunks.

Those lookups and counts go through :mod:`.lexicon`: Qdrant's keyword indexes on a server,
an in-process mirror of the same points in local mode.

Sparse indices are 32-bit hashes of terms; two terms of one collection sharing a hash only
make both candidates (rescoring reads the real terms).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from qdrant_client import models
from rapidfuzz.distance import Levenshtein

from rag_plugin.lexical.bm25 import DEFAULT_B, DEFAULT_K1, bm25_term_score
from rag_plugin.lexical.fuzzy import DEFAULT_MAX_DISTANCE, word_similarity
from rag_plugin.lexical.near_keys import entry_keys

__all__ = [
    "bm25_candidates",
    "bm25_score",
    "close_entries",
    "entry_lookups",
    "fuzzy_scores",
    "query_sparse",
    "scroll_all",
    "similarities_of",
    "sparse_vector",
    "term_index",
]


def bm25_candidates(n: int) -> int:
    """How many of Qdrant's best sparse matches are scored again exactly for a top ``n``."""
    return max(4 * n, n + 200)


def term_index(term: str) -> int:
    """A term's sparse-vector index: 32 bits of its BLAKE2b hash."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "big")


def sparse_vector(frequencies: dict[str, int], length: int, average: float) -> models.SparseVector:
    """A chunk's ``bm25`` vector: each term's BM25 saturation at ``average`` length."""
    values: dict[int, float] = {}
    for term, tf in frequencies.items():
        # idf 1: the query side carries idf.
        weight = bm25_term_score(tf, length, average if average > 0 else float(length), 1.0)
        index = term_index(term)
        values[index] = values.get(index, 0.0) + weight
    indices = sorted(values)
    return models.SparseVector(indices=indices, values=[values[i] for i in indices])


def query_sparse(tokens: Sequence[str], idf: dict[str, float]) -> models.SparseVector:
    """A query's ``bm25`` vector: each term's idf times its count in the query."""
    values: dict[int, float] = {}
    for token in tokens:
        if idf.get(token, 0.0) > 0.0:
            index = term_index(token)
            values[index] = values.get(index, 0.0) + idf[token]
    indices = sorted(values)
    return models.SparseVector(indices=indices, values=[values[i] for i in indices])


def bm25_score(
    tokens: Sequence[str],
    tf: dict[str, int],
    length: int,
    average: float,
    idf: dict[str, float],
) -> float:
    """The chunk's BM25 score summed term by term in query order, repetitions included, with
    the very float operations of ``Bm25Index.search`` (so the same float)."""
    score = 0.0
    for token in tokens:
        count = tf.get(token, 0)
        if count:
            score += bm25_term_score(count, length, average, idf[token], DEFAULT_K1, DEFAULT_B)
    return score


def entry_lookups(kind: str, entry: str) -> dict[str, list[str]]:
    """What a vocabulary entry is found under: its deletion keys, and a word's prefixes."""
    found = {"keys": sorted(entry_keys(entry))}
    if kind == "word":
        found["prefixes"] = [entry[:end] for end in range(1, len(entry) + 1)]
    return found


def close_entries(
    query_words: Sequence[str],
    lookup: Callable[[list[str]], list[str]],
    max_distance: int = DEFAULT_MAX_DISTANCE,
) -> dict[str, list[tuple[str, int]]]:
    """Each query word's vocabulary entries within ``max_distance`` edits, with distances.

    ``lookup(keys)`` gives the entries indexed under any of the deletion keys; it is asked
    once for every word's keys together (one request, however many words).
    """
    keys = sorted(set().union(*(entry_keys(word) for word in query_words)))
    candidates = lookup(keys) if keys else []
    found: dict[str, list[tuple[str, int]]] = {}
    for word in query_words:
        close = found.setdefault(word, [])
        for entry in candidates:
            distance = Levenshtein.distance(word, entry, score_cutoff=max_distance)
            if distance <= max_distance:
                close.append((entry, distance))
    return found


def fuzzy_scores(
    words: Sequence[str],
    chunks: Sequence[tuple[str, Sequence[str]]],
    similarities: dict[str, dict[str, float]],
) -> list[tuple[str, float]]:
    """``(chunk id, score)`` of each of ``chunks`` (id and words) that scores above 0, summed
    query word by query word (``words``: ``fuzzy_query_words`` of the query) as
    ``FuzzyIndex.search`` sums them; ``similarities`` maps each query word to its close
    words' similarities."""
    count = len(words)
    scored = []
    for chunk_id, chunk_words in chunks:
        held = set(chunk_words)
        total = matched = 0.0
        for query_word in words:
            best = max(
                (s for word, s in similarities.get(query_word, {}).items() if word in held),
                default=0.0,
            )
            total += best
            matched += best > 0.0
        if total > 0.0:
            scored.append((chunk_id, (total / count) * (matched / count)))
    return scored


def similarities_of(query_word: str, close: list[tuple[str, int]]) -> dict[str, float]:
    """Each close word's similarity to ``query_word`` (0 similarities left out)."""
    found = {}
    for word, distance in close:
        similarity = word_similarity(query_word, word, distance)
        if similarity > 0.0:
            found[word] = similarity
    return found


def scroll_all(
    scroll: Callable[..., tuple[list[Any], Any]], *, page_size: int = 1000, **arguments: Any
) -> list[Any]:
    """Every point a Qdrant scroll with ``arguments`` gives, page by page."""
    points: list[Any] = []
    offset = None
    while True:
        page, offset = scroll(limit=page_size, offset=offset, **arguments)
        points.extend(page)
        if offset is None:
            return points
