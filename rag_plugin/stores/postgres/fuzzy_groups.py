r"""The fuzzy leg's working state: close words grouped by their similarities, and the best
similarity per chunk and query word as postings arrive (``fuzzy.py`` drives them).

A chunk's fuzzy score depends only on each query word's best similarity among the chunk's
words, so close words with the same similarities to every query word are one word for the
score: a query's thousands of close words fall into a few dozen :class:`CloseGroup`\ s, whose
postings are read, combined and left out together.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from rag_plugin.lexical.fuzzy import DEFAULT_MAX_DISTANCE
from rag_plugin.lexical.slots import BoolArray, FloatArray, IntArray
from rag_plugin.stores.postgres.block_reads import chunk_ids_at, union_ids
from rag_plugin.stores.postgres.correction import near_terms
from rag_plugin.stores.postgres.rows import CollectionRow, Tables

__all__ = ["CloseGroup", "ScoreState", "Similarities", "close_groups"]


Similarities = tuple[tuple[int, float], ...]
"""A close word's similarity to each distinct query word it is close to: (position, value)."""


class CloseGroup:
    """The close words with one and the same similarities: for the score they are one word,
    so postings are read, combined and left out per group, not per word (a query's thousands
    of close words fall into a few dozen groups)."""

    __slots__ = ("df", "similarities", "words")

    def __init__(self, similarities: Similarities) -> None:
        self.similarities = similarities
        self.words: list[str] = []
        self.df = 0  # postings of its words together

    @property
    def level(self) -> float:
        """The group's highest similarity."""
        return max(value for _, value in self.similarities)


class ScoreState:
    """Per-chunk best similarities for each distinct query word, grown as postings arrive.

    ``ids`` is sorted; ``best[position, column]`` is the best similarity seen so far of chunk
    ``ids[column]`` to the distinct query word at ``position``.
    """

    def __init__(self, words: list[str]) -> None:
        distinct = list(dict.fromkeys(words))
        self.order = [distinct.index(word) for word in words]  # query order, with repeats
        self.width = len(distinct)
        self.ids: IntArray = np.zeros(0, dtype=np.int64)
        self.best: FloatArray = np.zeros((self.width, 0))

    def add(self, found: list[tuple[CloseGroup, IntArray]], grow: bool = True) -> None:
        """Take in the chunks holding a word of each group; with ``grow`` false, only those
        already here (the others cannot reach the top any more)."""
        found = [(group, chunk_ids) for group, chunk_ids in found if len(chunk_ids)]
        if not found:
            return
        if grow:
            ids = union_ids([self.ids, *(chunk_ids for _, chunk_ids in found)])
            if len(ids) != len(self.ids):
                grown = np.zeros((self.width, len(ids)))
                grown[:, np.searchsorted(ids, self.ids)] = self.best
                self.ids, self.best = ids, grown
        for group, chunk_ids in found:
            # A chunk may come twice (two words of the group); it gets the same value twice.
            if grow:
                columns = np.searchsorted(self.ids, chunk_ids)
            else:
                columns = chunk_ids_at(self.ids, chunk_ids)
            for position, similarity in group.similarities:
                row = self.best[position]
                row[columns] = np.maximum(row[columns], similarity)

    def keep(self, mask: BoolArray) -> None:
        """Forget every chunk but those of ``mask``."""
        self.ids, self.best = self.ids[mask], self.best[:, mask]

    def combine(self, best: FloatArray) -> FloatArray:
        """``(Σ best / n) · (matched / n)`` per chunk, adding in query order like FuzzyIndex."""
        totals = np.zeros(best.shape[1])
        matched = np.zeros(best.shape[1])
        for position in self.order:
            totals += best[position]
            matched += best[position] > 0.0
        count = len(self.order)
        result: FloatArray = (totals / count) * (matched / count)
        return result

    def bound(self, residual: list[float]) -> float:
        """The highest score of a chunk whose similarities are at most ``residual``.

        :meth:`combine` for one chunk, in Python floats: the same IEEE double operations in
        the same order, so the same value, without numpy's per-call cost.
        """
        total = 0.0
        matched = 0.0
        for position in self.order:
            similarity = residual[position]
            total += similarity
            matched += similarity > 0.0
        count = len(self.order)
        return (total / count) * (matched / count)


def close_groups(
    conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow, words: list[str]
) -> list[CloseGroup]:
    """The close words of ``words`` (each similarity > 0), grouped by their similarities.

    In numpy: a short query word (``55``, ``90%``) is close to thousands of entries, and a
    Python step per (word, entry) pair cost up to 75 ms a query.
    """
    distinct = list(dict.fromkeys(words))
    vocabulary = near_terms(conn, tables, row, distinct, DEFAULT_MAX_DISTANCE, "words")
    if not vocabulary:
        return []
    choices = list(vocabulary)
    # A row per query word, a column per candidate; farther ones come back as max + 1.
    distances = process.cdist(
        distinct,
        choices,
        scorer=Levenshtein.distance,
        score_cutoff=DEFAULT_MAX_DISTANCE,
        dtype=np.int32,
    )
    # word_similarity's 1 − d / max(byte lengths), the same IEEE operations on the same values.
    query_bytes = np.array([len(word.encode()) for word in distinct])
    choice_bytes = np.array([len(word.encode()) for word in choices])
    longest = np.maximum(query_bytes[:, None], choice_bytes[None, :])
    similarity = np.where(distances <= DEFAULT_MAX_DISTANCE, 1.0 - distances / longest, 0.0)
    columns = np.flatnonzero((similarity > 0.0).any(axis=0))
    if not len(columns):
        return []
    # Candidates with equal similarities to every query word form one group: sorted by their
    # similarities (a lexsort: np.unique over rows took 4 ms), a group is a run of equal ones.
    close = similarity[:, columns]
    order = np.lexsort(close[::-1])
    close, columns = close[:, order], columns[order]
    starts = np.flatnonzero(np.concatenate(([True], (close[:, 1:] != close[:, :-1]).any(axis=0))))
    ends = [*starts[1:].tolist(), len(columns)]
    candidates = columns.tolist()
    groups: list[CloseGroup] = []
    for start, end in zip(starts.tolist(), ends, strict=True):
        key = close[:, start]
        group = CloseGroup(tuple((int(p), float(key[p])) for p in np.flatnonzero(key > 0.0)))
        group.words = [choices[column] for column in candidates[start:end]]
        group.df = sum(vocabulary[word] for word in group.words)
        groups.append(group)
    return groups
