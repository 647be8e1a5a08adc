"""The fuzzy leg, exact: the same ids, scores and order as the in-memory FuzzyIndex.

A chunk's score (:func:`~rag_plugin.lexical.fuzzy.fuzzy_score`) depends only on, for each query
word, the best similarity among the chunk's words within ``max_distance`` edits. So the search
never reads chunk texts: the word vocabulary gives every *close word* of each query word
(:func:`~rag_plugin.stores.postgres.correction.near_terms`, exact distances by rapidfuzz), the
word blocks (``blocks.py``) give the chunks holding them, and numpy combines the similarities
per chunk in query order exactly as FuzzyIndex does, so the floats are equal bit for bit.
Only chunks holding a close word can score above 0, so the candidates are exact too.

Reading a word's postings costs ≈ 0.1 µs a posting from the blocks, so most close words are
simply read. What is left out is the commonest ones (``the`` is two edits from ``tkh``, ``and``
one from ``band``: tens of thousands of postings each), by MaxScore:

1. The query words' exact matches and the cheapest close words, up to :data:`_FIRST_READ`
   postings, are read first; the ``n``-th best partial score is a floor θ for the final
   ``n``-th score (a score only rises with more similarities). If at least ``n`` chunks hold
   every query word exactly, they are the answer (1.0 is the highest score; ties by id).
2. The costliest remaining close words are left out while a chunk holding *only* left-out
   words stays below θ: its score is at most the formula applied to each query word's best
   left-out similarity (the score rises with every similarity, and so do rounded floats).
   The others are read in one round trip.
3. Chunks whose upper bound (with each query word's best left-out similarity) still reaches θ
   get their left-out words settled, in tiers of similarity, highest first (a cheap tier read
   with the one before it: each tier costs passes over the state): by looking their words up
   in the forward index, or by reading the tier's postings when that is cheaper. A chunk
   below θ stays below (its bound only falls, θ only rises).

Ties at the ``n``-th score go by chunk id (the key); tens of thousands of tied chunks (one
common close word) are never sent to SQL: the chunks are walked in key order instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import psycopg

from rag_plugin.lexical.slots import FloatArray, IntArray
from rag_plugin.stores.base import ScoredChunk
from rag_plugin.stores.postgres.block_reads import (
    read_chunk_words,
    read_word_groups,
)
from rag_plugin.stores.postgres.filters import SqlFilter
from rag_plugin.stores.postgres.fuzzy_groups import CloseGroup, ScoreState, close_groups
from rag_plugin.stores.postgres.lexical import allowed_chunks, top_chunks
from rag_plugin.stores.postgres.rows import CollectionRow, Tables

__all__ = ["fuzzy_search"]

_FIRST_READ = 20_000
"""Postings read for the floor θ, cheapest close words first (the exact matches always)."""

_PROBE_COST = 100
"""About how many postings read from blocks cost as much as looking one chunk's words up in
the forward index: measured at 1M chunks, ≈ 9 µs a chunk (its row of words, decoded and
intersected in Python; the forward index's pages are rarely all cached) against ≈ 0.09 µs a
posting read and combined. Only the cost of the settling step depends on it: at 40, 1M-chunk
fuzzy p99 was 175 ms against 155, with the same p95 and the same at 100k."""

_TIER_MERGE = 2
"""A tier of left-out groups is read together with the one before it while its postings
times this are fewer than the chunks in the state (:func:`_next_tiers`)."""

_TIES_SENT = 2000
"""Up to this many chunks tied with the ``n``-th score go to SQL to be ordered by key."""


def _nth(scores: FloatArray, n: int) -> float:
    """The ``n``-th highest score, or 0 when there are fewer."""
    if len(scores) < n:
        return 0.0
    return float(np.partition(scores, len(scores) - n)[len(scores) - n])


def fuzzy_search(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    words: list[str],
    n: int,
    filters: SqlFilter | None,
) -> list[ScoredChunk]:
    """Top ``n`` chunks by the fuzzy word-match score for the query's ``words``
    (:func:`~rag_plugin.lexical.fuzzy.fuzzy_query_words`: in order, repetitions kept); only
    scores > 0; ties by chunk id."""
    if not words or row.chunk_count == 0 or n == 0:
        return []
    groups = close_groups(conn, tables, row, words)
    if not groups:
        return []
    allowed = allowed_chunks(conn, tables, row, filters) if filters else None
    state = ScoreState(words)
    # The exact matches (a group of one word, similarity 1.0), then the cheapest groups.
    exact = [group for group in groups if group.level == 1.0]
    first = {id(group) for group in exact}
    budget = _FIRST_READ - sum(group.df for group in exact)
    for group in sorted(groups, key=lambda group: group.df):
        if id(group) not in first and group.df <= budget:
            first.add(id(group))
            budget -= group.df
    read = [group for group in groups if id(group) in first]
    state.add(_read(conn, tables, row, read))
    perfect = _perfect(conn, tables, row, state, exact, allowed, n)
    if perfect is not None:
        return perfect
    floor = _nth(_kept(state, allowed)[1], n)
    # The costliest groups are left out while a chunk holding only left-out words stays
    # below θ; the others are read.
    residual = [0.0] * state.width
    left_out: list[CloseGroup] = []
    rest = [group for group in groups if id(group) not in first]
    for group in sorted(rest, key=lambda group: -group.df):
        trial = residual.copy()
        for position, similarity in group.similarities:
            trial[position] = max(trial[position], similarity)
        if state.bound(trial) < floor:
            residual = trial
            left_out.append(group)
    skipped = {id(group) for group in left_out}
    state.add(_read(conn, tables, row, [group for group in rest if id(group) not in skipped]))
    if left_out:
        _settle_left_out(conn, tables, row, state, left_out, allowed, floor, n)
    ids, scores = _kept(state, allowed)
    ids, scores = _break_ties(conn, tables, row, ids, scores, n)
    return top_chunks(conn, tables, ids, scores, n)


def _read(
    conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow, groups: list[CloseGroup]
) -> list[tuple[CloseGroup, IntArray]]:
    """Each group with the chunks holding one of its words."""
    if not groups:
        return []
    found = read_word_groups(conn, tables, row.id, [group.words for group in groups])
    return list(zip(groups, found, strict=True))


def _kept(state: ScoreState, allowed: IntArray | None) -> tuple[IntArray, FloatArray]:
    """The chunks seen so far that can be answers (score > 0, allowed) and their scores."""
    scores = state.combine(state.best)
    keep = scores > 0.0
    if allowed is not None:
        keep &= np.isin(state.ids, allowed)
    return state.ids[keep], scores[keep]


def _perfect(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    state: ScoreState,
    exact: list[CloseGroup],
    allowed: IntArray | None,
    n: int,
) -> list[ScoredChunk] | None:
    """The top ``n`` when at least ``n`` chunks hold every query word exactly, else None.

    Such chunks score 1.0, the highest score there is, so they are the answer, ties by id.
    The exact matches' postings are all read by then (the first read takes them). A one-byte
    query word can never score 1.0: documents' words have two bytes or more, so it has no
    exact match.
    """
    if len(exact) < state.width:
        return None
    holds_all = np.all(state.best == 1.0, axis=0)
    if allowed is not None:
        holds_all &= np.isin(state.ids, allowed)
    ids = state.ids[holds_all]
    if len(ids) < n:
        return None
    ids, scores = _break_ties(conn, tables, row, ids, np.ones(len(ids)), n)
    return top_chunks(conn, tables, ids, scores, n)


def _settle_left_out(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    state: ScoreState,
    left_out: list[CloseGroup],
    allowed: IntArray | None,
    floor: float,
    n: int,
) -> None:
    """Give every chunk that can still reach the top ``n`` its similarities to the left-out
    words (module docstring, step 3)."""
    remaining = sorted(left_out, key=lambda group: -group.level)
    # Chunks not seen by now hold left-out words only and stay below θ (that is how the words
    # were left out), and a chunk whose bound falls below θ stays there: neither is ever an
    # answer, so the state keeps only the others and reading a tier adds nobody.
    if allowed is not None:
        state.keep(np.isin(state.ids, allowed))
    settled = np.zeros(len(state.ids), dtype=bool)  # every left-out word of the chunk known
    while remaining:
        floor = max(floor, _nth(state.combine(state.best), n))
        residual = np.zeros(state.width)
        for group in remaining:
            for position, similarity in group.similarities:
                residual[position] = max(residual[position], similarity)
        reachable = state.combine(np.maximum(state.best, residual[:, None])) >= floor
        state.keep(reachable)
        settled = settled[reachable]
        unsure = ~settled
        if not unsure.any():
            return
        tier = _next_tiers(remaining, len(state.ids))
        remaining = remaining[len(tier) :]
        chunks = state.ids[unsure]
        if len(chunks) * _PROBE_COST > sum(group.df for group in tier):
            state.add(_read(conn, tables, row, tier), grow=False)
        else:
            # The unsure chunks' words tell every left-out word they hold: all tiers at once.
            pending = tier + remaining
            group_of = {word: i for i, group in enumerate(pending) for word in group.words}
            holders: list[list[int]] = [[] for _ in pending]
            for chunk_id, chunk_words in read_chunk_words(conn, tables, chunks):
                for word in group_of.keys() & chunk_words:
                    holders[group_of[word]].append(chunk_id)
            state.add(
                [
                    (group, np.asarray(ids, dtype=np.int64))
                    for group, ids in zip(pending, holders, strict=True)
                ],
                grow=False,
            )
            settled |= unsure


def _next_tiers(remaining: list[CloseGroup], chunks: int) -> list[CloseGroup]:
    """The groups of the highest similarity left, and those of the next ones while each
    further tier's postings are fewer than half the ``chunks`` still in the state.

    Every tier settled costs a few passes over the state (its scores and bounds), about as
    much as reading half as many postings as it has chunks; a cheap tier is read with the one
    before it instead (reading more postings never changes an answer).
    """
    end = 0
    while end < len(remaining):
        level = remaining[end].level
        stop = end
        while stop < len(remaining) and remaining[stop].level == level:
            stop += 1
        if end and sum(group.df for group in remaining[end:stop]) * _TIER_MERGE > chunks:
            break
        end = stop
    return remaining[:end]


def _break_ties(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    ids: IntArray,
    scores: FloatArray,
    n: int,
) -> tuple[IntArray, FloatArray]:
    """The chunks that make the top ``n``, plus at most a few more tied with the last of them.

    Every chunk above the ``n``-th score is in; of those tied with it, the lowest chunk keys
    are. A few thousand tied chunks go to SQL, which orders them by key; more (a common word
    ties most of the collection) are never sent: the chunks are walked in key order until
    enough tied ones have turned up, the walk sized by how dense the tied ones are.
    """
    nth = _nth(scores, n)
    above = scores > nth
    tied = ids[scores == nth]  # sorted: ids are
    needed = n - int(above.sum())
    if len(tied) <= max(_TIES_SENT, needed):
        keep = scores >= nth
        return ids[keep], scores[keep]
    found = _walk_ties(conn, tables, row, tied, needed)
    chosen = np.concatenate([ids[above], found])
    return chosen, np.concatenate([scores[above], np.full(len(found), nth)])


def _walk_ties(
    conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow, tied: IntArray, needed: int
) -> IntArray:
    """The ``needed`` lowest-key chunks of ``tied``, found by walking the chunks in key order."""
    walk = max(4 * needed, math.ceil(2 * needed * row.chunk_count / len(tied)))
    while True:
        walked = np.asarray(
            [
                r[0]
                for r in conn.execute(
                    tables(
                        "SELECT id FROM {chunks} WHERE collection_id = %s"
                        " ORDER BY chunk_key LIMIT %s"
                    ),
                    (row.id, walk),
                ).fetchall()
            ],
            dtype=np.int64,
        )
        found = walked[np.isin(walked, tied)][:needed]
        # A walk shorter than asked has seen every chunk, so it found every tied one.
        if len(found) == needed or len(walked) < walk:
            break
        walk *= 4
    return found
