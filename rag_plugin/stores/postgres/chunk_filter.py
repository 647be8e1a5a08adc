"""Which candidates of a lexical leg pass a metadata filter, asked only about the candidates.

A lexical leg knows its candidates and their scores before it needs the filter: the filter
only has to say which of the best ones pass. Reading the ids of *every* matching chunk costs a
visit to each matching chunk row (≈ 1 µs each, 10–15 ms for 10k matches at 100k chunks, the
rows being wide), while checking candidates by primary key in score order costs a few hundred
visits: a 10 % filter and a top 20 need about 200. So :class:`ChunkFilter` checks the ids it is
asked about, in batches, and remembers the answers; once the checks add up to more than
:data:`VERIFY_LIMIT` (a selective filter, whose candidates rarely pass), it reads the matching
ids once instead, which for such a filter is cheap.

The result is the same either way: exactly the chunks that match, before ranking.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import psycopg

from rag_plugin.lexical.slots import FloatArray, IntArray
from rag_plugin.stores.postgres.blocks import decode_int_array
from rag_plugin.stores.postgres.filters import SqlFilter
from rag_plugin.stores.postgres.rows import CollectionRow, Tables

__all__ = ["VERIFY_LIMIT", "ChunkFilter", "allowed_chunks"]

VERIFY_LIMIT = 4096
"""Candidates checked one by one before the filter's matching ids are read all at once."""

_FIRST_BATCH = 256
"""Candidates checked in the first round trip of :meth:`ChunkFilter.top`, at least…"""

_PER_RESULT = 8
"""…this many per result asked for: a 10 % filter passes about one in ten."""

BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


def allowed_chunks(
    conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow, filters: SqlFilter
) -> IntArray:
    """The ids of the collection's chunks whose metadata matches ``filters``, sorted."""
    found = conn.execute(
        tables(
            "SELECT array_send(coalesce(array_agg(c.id ORDER BY c.id), ARRAY[]::bigint[]))"
            " FROM {chunks} c WHERE c.collection_id = %(coll)s AND {condition}",
            condition=filters.condition,
        ),
        {**filters.params, "coll": row.id},
        binary=True,
    ).fetchone()
    return decode_int_array(found[0], wide=True) if found else np.zeros(0, dtype=np.int64)


class ChunkFilter:
    """A metadata filter over one collection's chunks, evaluated lazily (module docstring)."""

    def __init__(
        self, conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow, filters: SqlFilter
    ) -> None:
        self._conn, self._tables, self._row, self._filters = conn, tables, row, filters
        self._known = np.zeros(0, dtype=np.int64)  # sorted ids already checked
        self._passes = np.zeros(0, dtype=bool)  # their answers, in the same order
        self._allowed: IntArray | None = None  # every matching id, once read
        self.checked = 0
        """Candidates checked by primary key so far (for tests and benchmarks)."""

    @property
    def read_all(self) -> bool:
        """Whether the filter's matching ids were read all at once."""
        return self._allowed is not None

    def read_matching(self) -> None:
        """Read every matching id now: for a caller about to ask about more chunks than
        checking one by one would pay for."""
        if self._allowed is None:
            self._allowed = allowed_chunks(self._conn, self._tables, self._row, self._filters)

    def mask(self, ids: IntArray) -> BoolArray:
        """For each of ``ids`` (chunks of this collection), whether it matches."""
        if self._allowed is None:
            unknown = np.setdiff1d(ids, self._known, assume_unique=False)
            if len(unknown) and self.checked + len(unknown) > VERIFY_LIMIT:
                self.read_matching()
            elif len(unknown):
                self._learn(unknown)
        if self._allowed is not None:
            return _member(ids, self._allowed)
        return self._passes[np.searchsorted(self._known, ids)]

    def top(self, ids: IntArray, scores: FloatArray, n: int) -> tuple[IntArray, FloatArray]:
        """The matching chunks among ``ids`` that the top ``n`` of the matching ones are
        chosen from: every matching chunk scoring at least the ``n``-th best matching score
        (ties at it included, for the caller to break), and possibly some lower-scoring
        matches found on the way, so the caller still ranks what it gets.

        Candidates are checked best first, in batches that grow fourfold, until the next
        unchecked one scores below that. When the checks needed look like more than the
        budget left — many candidates tied, or few passing so far — the matching ids are
        read at once instead, before any check is wasted.
        """
        if self._allowed is not None:
            keep = _member(ids, self._allowed)
            return ids[keep], scores[keep]
        order = np.argsort(-scores, kind="stable")
        ranked = scores[order]

        def covering(k: int) -> int:
            # Candidates to check so the k best are in, with every one tied with the k-th.
            if k >= len(ranked):
                return len(ranked)
            return int(np.searchsorted(-ranked, -ranked[k - 1], side="right"))

        passed: list[IntArray] = []
        found = start = 0
        batch = max(_FIRST_BATCH, _PER_RESULT * n)
        while self._allowed is None and start < len(order):
            wanted = n if not start else math.ceil(n * start / max(found, 1))
            if covering(wanted) - start > VERIFY_LIMIT - self.checked:
                self.read_matching()
                break
            end = max(start + batch, covering(min(n, len(ranked))))
            part = order[start:end]
            good = part[self.mask(ids[part])]
            passed.append(good)
            found += len(good)
            start += len(part)
            batch *= 4
            if found >= n and start < len(order):
                nth = np.sort(scores[np.concatenate(passed)])[::-1][n - 1]
                if ranked[start] < nth:
                    break
        if self._allowed is not None:
            keep = _member(ids, self._allowed)
            return ids[keep], scores[keep]
        chosen = np.concatenate(passed) if passed else np.zeros(0, dtype=np.int64)
        return ids[chosen], scores[chosen]

    def _learn(self, unknown: IntArray) -> None:
        found = self._conn.execute(
            self._tables(
                "SELECT array_send(coalesce(array_agg(c.id ORDER BY c.id), ARRAY[]::bigint[]))"
                " FROM {chunks} c WHERE c.id = ANY(%(ids)s::bigint[])"
                " AND c.collection_id = %(coll)s AND {condition}",
                condition=self._filters.condition,
            ),
            {**self._filters.params, "ids": unknown.tolist(), "coll": self._row.id},
            binary=True,
        ).fetchone()
        passing = decode_int_array(found[0], wide=True) if found else np.zeros(0, dtype=np.int64)
        self.checked += len(unknown)
        known = np.concatenate([self._known, unknown])
        passes = np.concatenate([self._passes, np.isin(unknown, passing, assume_unique=True)])
        order = np.argsort(known, kind="stable")
        self._known, self._passes = known[order], passes[order]


def _member(ids: IntArray, sorted_ids: IntArray) -> BoolArray:
    """For each of ``ids``, whether it is in ``sorted_ids`` (sorted, unique)."""
    if not len(sorted_ids):
        return np.zeros(len(ids), dtype=bool)
    positions = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    found: BoolArray = sorted_ids[positions] == ids
    return found
