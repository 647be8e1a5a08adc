"""The synthetic corpus and queries of bench/store_query.py, regenerated identically from seeds.

Chunks of 20 to 59 words drawn with a Zipf distribution from a 20k-word vocabulary of random
letter strings (with ``analyzer="english"`` the 100 most frequent words are real English
stopwords instead), and clustered random 384-d unit vectors (no model). Queries draw 2-3 words
from the same distribution (``zipf``) or 2-5 from outside the 100 most frequent (``natural``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from bench.store_schema import DIMENSIONS

VOCABULARY_SIZE = 20_000
CLUSTERS = 200
ANALYZERS = ("seed", "english")

HEAD = 100
"""The most frequent words: stopwords in the English corpus, left out of natural queries."""

STOPWORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "it",
    "for",
    "that",
    "with",
    "as",
    "on",
    "by",
    "at",
    "from",
    "he",
    "his",
    "an",
    "be",
    "this",
    "are",
    "or",
    "had",
    "not",
    "but",
    "which",
    "have",
    "one",
    "they",
    "you",
    "were",
    "her",
    "all",
    "she",
    "there",
    "would",
    "their",
    "we",
    "him",
    "been",
    "has",
    "when",
    "who",
    "will",
    "more",
    "no",
    "if",
    "out",
    "so",
    "said",
    "what",
    "up",
    "its",
    "about",
    "into",
    "than",
    "them",
    "can",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
    "our",
    "over",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
]


def vocabulary() -> list[str]:
    rng = np.random.default_rng(11)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: set[str] = set()
    while len(words) < VOCABULARY_SIZE:
        words.add("".join(rng.choice(letters, size=int(rng.integers(3, 10)))))
    return sorted(words)


WORDS = vocabulary()
# The same corpus with real stopwords at the head, for a stemming analyzer to drop.
_TAIL = [w for w in WORDS if w not in STOPWORDS]  # a few random words are real stopwords
ENGLISH_WORDS = STOPWORDS[:HEAD] + _TAIL[len(_TAIL) - (VOCABULARY_SIZE - HEAD) :]
ZIPF = 1.0 / np.arange(1, VOCABULARY_SIZE + 1)
ZIPF /= ZIPF.sum()


def centroids() -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(5)
    c = rng.normal(size=(CLUSTERS, DIMENSIONS))
    normalised: np.ndarray[Any, Any] = c / np.linalg.norm(c, axis=1, keepdims=True)
    return normalised


CENTROIDS = centroids()


def vectors(rng: np.random.Generator, count: int) -> np.ndarray[Any, Any]:
    picks = CENTROIDS[rng.integers(0, CLUSTERS, size=count)]
    v = picks + rng.normal(scale=0.6 / np.sqrt(DIMENSIONS) * 3, size=(count, DIMENSIONS))
    normalised: np.ndarray[Any, Any] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return normalised


def words_for(analyzer: str) -> list[str]:
    return WORDS if analyzer == "seed" else ENGLISH_WORDS


def texts(rng: np.random.Generator, count: int, words: list[str]) -> list[str]:
    lengths = rng.integers(20, 60, size=count)
    ids = rng.choice(VOCABULARY_SIZE, size=int(lengths.sum()), p=ZIPF)
    out, start = [], 0
    for length in lengths:
        out.append(" ".join(words[i] for i in ids[start : start + length]))
        start += length
    return out


def batches(size: int, analyzer: str) -> Iterator[tuple[list[str], np.ndarray[Any, Any]]]:
    """The corpus in batches of documents, regenerated identically from the seed.

    Each analyzer's corpus has vectors of its own: collections of one schema share an HNSW
    index, and exact duplicate vectors across collections would degrade its recall.
    """
    rng = np.random.default_rng(size if analyzer == "seed" else [size, ANALYZERS.index(analyzer)])
    step = 1000
    for _ in range(0, size, step):
        yield texts(rng, step, words_for(analyzer)), vectors(rng, step)


def queries(count: int, mix: str, analyzer: str) -> tuple[list[str], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(99)
    words = words_for(analyzer)
    if mix == "zipf":
        picks = [
            rng.choice(VOCABULARY_SIZE, size=int(rng.integers(2, 4)), p=ZIPF) for _ in range(count)
        ]
    else:
        tail = ZIPF[HEAD:] / ZIPF[HEAD:].sum()
        picks = [
            HEAD + rng.choice(VOCABULARY_SIZE - HEAD, size=int(rng.integers(2, 6)), p=tail)
            for _ in range(count)
        ]
    return [" ".join(words[i] for i in pick) for pick in picks], vectors(rng, count)
