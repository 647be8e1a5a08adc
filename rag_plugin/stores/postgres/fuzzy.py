"""The fuzzy leg, exact: the same ids, scores and order as the in-memory FuzzyIndex.

A chunk's score (:func:`~rag_plugin.lexical.fuzzy.fuzzy_score`) depends only on, for each query
word, the best similarity among the chunk's words within ``max_distance`` edits. So the search
never reads chunk texts: the word vocabulary (``words.py``) gives every *close word* of each
query word (:func:`~rag_plugin.stores.postgres.correction.near_terms`, exact distances by
rapidfuzz), the word
postings give the chunks holding them, and numpy combines the similarities per chunk in query
order exactly as FuzzyIndex does, so the floats are equal bit for bit. Only chunks holding a
close word can score above 0, so the candidates are exact too.

Pruning (MaxScore over close words), so common words' long posting lists are rarely read:

1. Seed: the postings of each query word's closest words (an exact match, usually) and of a
   few more close rare words give some chunks with partial scores. The likeliest best of them
   (counting the query words they lack at what a random chunk would expect: most chunks are
   two edits from a three-letter word) are probed for every other close word, and the
   ``n``-th best score is a floor θ for the final ``n``-th score. A chunk holding two query
   words exactly is found here even when each word alone is too common to probe from.
2. The costliest close words are left out while a chunk holding *only* left-out words stays
   below θ: its score is at most the formula applied to each query word's best left-out
   similarity (the score rises with every similarity, and so do rounded floats).
3. The other close words' postings give every chunk that can reach θ. Their scores without
   the left-out words are lower bounds (raising θ) and, with each query word's best left-out
   similarity, upper bounds; only chunks whose upper bound reaches θ are probed for the
   left-out words, so every chunk that can be in the top ``n`` gets its exact score.

Perfect scores first: a chunk holding every query word exactly scores 1.0, the highest score
there is, and ties go by chunk id. So when at least ``n`` chunks hold every word, the top ``n``
are the first ``n`` of them in id order: found by probing the words of the rarest word's chunks
when it is rare, or of the chunks in id order when every word is common (a few dozen probes,
where the general path would read long posting lists and sort tens of thousands of tied
chunks). If fewer turn up within the walk's budget, the general path answers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.fuzzy import DEFAULT_MAX_DISTANCE, fuzzy_query_words, word_similarity
from rag_plugin.lexical.slots import FloatArray, IntArray
from rag_plugin.stores.base import ScoredChunk
from rag_plugin.stores.postgres.correction import near_terms
from rag_plugin.stores.postgres.rows import CollectionRow, Tables, chunk_record

__all__ = ["fuzzy_search"]

_FILTER = (
    " AND {chunk} IN (SELECT id FROM {chunks}"
    " WHERE collection_id = %(coll)s AND metadata @> %(filters)s::jsonb)"
)


def _chunk_filter(tables: Tables, column: str, filters: str | None) -> sql.Composable:
    """`` AND <column> IN (the collection's chunks matching filters)``, or nothing."""
    if not filters:
        return sql.SQL("")
    return tables(_FILTER, chunk=sql.SQL(column))


_PROBE_COST = 8
"""About how many posting rows read in order cost as much as probing one chunk's words."""


def _probe_cost(words: int) -> float:
    """About how many posting rows read in order cost as much as probing one chunk for
    ``words`` words: the probe walks the chunk's words against the sorted list, so the cost
    grows with its logarithm (measured at 100k chunks: 6,739 chunks × 351 words took 151 ms,
    reading those words' 65k postings 38 ms)."""
    return _PROBE_COST * max(1.0, math.log2(max(words, 1)) / 2)


_PERFECT_WALK = 1000
"""The most chunks, in id order, the perfect-score walk probes before the general path answers."""

_PERFECT_PROBES = 8000
"""The most chunks of the rarest query word the perfect-score path probes."""

_HOLDS_ALL = (
    "(SELECT count(*) FROM {words} w"
    " WHERE w.chunk_id = {chunk} AND w.word = ANY(%(holds)s)) = %(holds_count)s"
)
"""True for a chunk (of the collection) holding every word of ``holds`` exactly; an
index-only probe of ``(chunk_id, word)``, as in ``_probe``."""

_TIES_SENT = 2000
"""Up to this many chunks tied with the ``n``-th score go to SQL to be ordered by id."""


_SEED_ROWS = 8000
"""The most postings read for the query words' closest words before θ is known."""


def _seed_size(n: int) -> int:
    # Postings read for the floor θ: enough chunks that n of them are likely good ones.
    return max(8 * n, 200)


def _seed_count(n: int) -> int:
    """How many of the seed's likeliest chunks are probed for every other close word."""
    return 8 * n


class _Scores:
    """Per-chunk best similarities for each distinct query word, from fetched postings."""

    def __init__(self, words: list[str], close: dict[str, dict[int, float]]) -> None:
        distinct = list(dict.fromkeys(words))
        self.order = [distinct.index(word) for word in words]  # query order, with repeats
        self.width = len(distinct)
        self.close = close  # close word → {distinct query word position: similarity}
        self.segments: list[tuple[str, IntArray]] = []

    def add(self, rows: list[tuple[str, list[int]]]) -> None:
        self.segments.extend((word, np.asarray(ids, dtype=np.int64)) for word, ids in rows)

    def matrix(self) -> tuple[IntArray, FloatArray]:
        """The chunk ids seen so far (sorted) and their best similarity per query word."""
        if not self.segments:
            return np.zeros(0, dtype=np.int64), np.zeros((self.width, 0))
        ids, column = np.unique(
            np.concatenate([chunk_ids for _, chunk_ids in self.segments]), return_inverse=True
        )
        # Each posting's similarity per query word, from its segment's word; then the best per
        # chunk in one pass per query word (max is exact in any order).
        per_segment = np.zeros((self.width, len(self.segments)))
        for segment, (word, _) in enumerate(self.segments):
            for position, similarity in self.close[word].items():
                per_segment[position, segment] = similarity
        segment_of = np.repeat(
            np.arange(len(self.segments)), [len(chunk_ids) for _, chunk_ids in self.segments]
        )
        best = np.zeros((self.width, len(ids)))
        for position in range(self.width):
            np.maximum.at(best[position], column, per_segment[position, segment_of])
        return ids, best

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
        the same order, so the same value, without numpy's per-call cost (it runs once per
        candidate word to leave out).
        """
        total = 0.0
        matched = 0.0
        for position in self.order:
            similarity = residual[position]
            total += similarity
            matched += similarity > 0.0
        count = len(self.order)
        return (total / count) * (matched / count)


def _nth(scores: FloatArray, n: int) -> float:
    """The ``n``-th highest score, or 0 when there are fewer."""
    if len(scores) < n:
        return 0.0
    return float(np.partition(scores, len(scores) - n)[len(scores) - n])


def _close_words(
    conn: psycopg.Connection[Any], tables: Tables, row: CollectionRow, words: list[str]
) -> tuple[dict[str, dict[int, float]], dict[str, int]]:
    """Each close word's similarity per distinct query word (only > 0), and its df."""
    distinct = list(dict.fromkeys(words))
    vocabulary = near_terms(conn, tables, row, distinct, DEFAULT_MAX_DISTANCE, "words")
    choices = list(vocabulary)
    close: dict[str, dict[int, float]] = {}
    for position, query_word in enumerate(distinct):
        # rapidfuzz's C loop finds the few words within reach among the window's candidates.
        for word, distance, _ in process.extract(
            query_word,
            choices,
            scorer=Levenshtein.distance,
            score_cutoff=DEFAULT_MAX_DISTANCE,
            limit=None,
        ):
            similarity = word_similarity(query_word, word, int(distance))
            if similarity > 0.0:
                close.setdefault(word, {})[position] = similarity
    return close, {word: vocabulary[word] for word in close}


def _postings(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    words: list[str],
    filters: str | None,
) -> list[tuple[str, list[int]]]:
    """The (filtered) chunks holding each of ``words``."""
    if not words:
        return []
    return conn.execute(
        tables(
            "SELECT word, array_agg(chunk_id) FROM {words}"
            " WHERE collection_id = %(coll)s AND word = ANY(%(words)b){where} GROUP BY word",
            where=_chunk_filter(tables, "chunk_id", filters),
        ),
        {"coll": row.id, "words": words, "filters": filters},
        binary=True,
    ).fetchall()


def _probe(
    conn: psycopg.Connection[Any],
    tables: Tables,
    chunk_ids: IntArray,
    words: list[str],
) -> list[tuple[str, list[int]]]:
    """Which of ``chunk_ids`` hold which of ``words`` (read through the per-chunk index).

    The chunk ids already belong to the collection, so no ``collection_id`` test: the index
    ``(chunk_id, word)`` then answers alone (an index-only scan), where testing the column
    would fetch every matching row from the table.
    """
    if not words or not len(chunk_ids):
        return []
    return conn.execute(
        tables(
            "SELECT word, array_agg(chunk_id) FROM {words}"
            " WHERE chunk_id = ANY(%b::bigint[]) AND word = ANY(%b) GROUP BY word"
        ),
        (chunk_ids.tolist(), words),
        binary=True,
    ).fetchall()


def fuzzy_search(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    query: str,
    n: int,
    filters: str | None,
) -> list[ScoredChunk]:
    """Top ``n`` chunks by the fuzzy word-match score; only scores > 0; ties by chunk id."""
    words = fuzzy_query_words(query, get_analyzer(row.info.analyzer))
    if not words or row.chunk_count == 0 or n == 0:
        return []
    close, df = _close_words(conn, tables, row, words)
    if not close:
        return []
    perfect = _perfect(conn, tables, row, words, df, n, filters)
    if perfect is not None:
        return perfect
    state = _Scores(words, close)
    seed = _seed_words(state, df, n)
    state.add(_postings(conn, tables, row, seed, filters))
    seeded = set(seed)
    rest = [word for word in close if word not in seeded]
    if rest:
        # The floor θ: the n-th best score once the likeliest best of the seed's chunks are
        # probed for every other close word (the rest have lower bounds, valid as well).
        ids, best = state.matrix()
        settled = np.zeros(0, dtype=np.int64)
        floor = 0.0
        if len(ids) >= n:
            settled = _likeliest(state, ids, best, _expected(state, df, row.chunk_count), n)
            state.add(_probe(conn, tables, settled, rest))
            floor = _nth(state.combine(state.matrix()[1]), n)
        # The costliest close words are left out while a chunk holding only left-out words
        # stays below θ; the others' postings are read in full.
        residual = [0.0] * state.width
        left_out: list[str] = []
        for word in sorted(rest, key=lambda word: (-df[word], word)):
            trial = residual.copy()
            for position, similarity in close[word].items():
                trial[position] = max(trial[position], similarity)
            if state.bound(trial) < floor:
                residual = trial
                left_out.append(word)
        skipped = set(left_out)
        state.add(_postings(conn, tables, row, [w for w in rest if w not in skipped], filters))
        if left_out:
            _settle_left_out(conn, tables, row, state, left_out, df, settled, floor, n, filters)
    ids, best = state.matrix()
    scores = state.combine(best)
    keep = scores > 0.0
    ids, scores = _break_ties(conn, tables, row, ids[keep], scores[keep], n)
    rows = conn.execute(
        tables(
            "SELECT {chunk_columns}, t.score FROM (SELECT u.id, u.score, k.chunk_key"
            "  FROM unnest(%b::bigint[], %b::float8[]) AS u(id, score)"
            "  JOIN {chunks} k ON k.id = u.id ORDER BY u.score DESC, k.chunk_key LIMIT %s) AS t"
            " JOIN {chunks} c ON c.id = t.id ORDER BY t.score DESC, t.chunk_key"
        ),
        (ids.tolist(), scores.tolist(), n),
    ).fetchall()
    # float8 round-trips exactly, so SQL's order and the returned scores are Python's.
    return [ScoredChunk(chunk_record(r), float(r[-1])) for r in rows]


def _expected(state: _Scores, df: dict[str, int], chunk_count: int) -> list[tuple[float, float]]:
    """Per distinct query word, a random chunk's expected best similarity to it and the chance
    that it holds a close word at all, as if words fell into chunks independently (a chunk
    holds one of words with ``d`` postings in all with chance ``1 - exp(-d / chunks)``).

    A short query word is two edits from hundreds of words, so most chunks hold one of them
    and a chunk that lacks the word itself still scores for it; a long word's few close words
    are rare, and a chunk without them scores nothing for it.
    """
    postings: list[dict[float, int]] = [{} for _ in range(state.width)]
    for word, similarities in state.close.items():
        for position, similarity in similarities.items():
            postings[position][similarity] = postings[position].get(similarity, 0) + df[word]
    expected = []
    for by_similarity in postings:
        total, mean, chance = 0, 0.0, 0.0
        for similarity in sorted(by_similarity, reverse=True):
            total += by_similarity[similarity]
            at_least = 1.0 - math.exp(-total / max(chunk_count, 1))
            mean += similarity * (at_least - chance)
            chance = at_least
        expected.append((mean, chance))
    return expected


def _seed_words(state: _Scores, df: dict[str, int], n: int) -> list[str]:
    """The close words whose postings are read first: each query word's closest words (an
    exact match, usually), the rarest first, within :data:`_SEED_ROWS` postings; then the
    closest rare words until :func:`_seed_size` postings."""
    best = [0.0] * state.width
    for similarities in state.close.values():
        for position, similarity in similarities.items():
            best[position] = max(best[position], similarity)
    closest = [
        word
        for word, similarities in state.close.items()
        if any(similarity == best[position] for position, similarity in similarities.items())
    ]
    seed: list[str] = []
    rows = 0
    for word in sorted(closest, key=lambda word: (df[word], word)):
        if rows + df[word] <= _SEED_ROWS:
            seed.append(word)
            rows += df[word]
    chosen = set(seed)
    by_closeness = sorted(
        state.close, key=lambda word: (-max(state.close[word].values()), df[word], word)
    )
    for word in by_closeness:
        if rows >= _seed_size(n):
            break
        if word not in chosen and df[word] <= 4 * _seed_size(n):
            seed.append(word)
            rows += df[word]
    return seed


def _likeliest(
    state: _Scores,
    ids: IntArray,
    best: FloatArray,
    expected: list[tuple[float, float]],
    n: int,
) -> IntArray:
    """The :func:`_seed_count` chunks (of ``ids``) likeliest to score best, sorted by id.

    A chunk's estimate is its score with each query word it has no similarity for yet
    counted at its :func:`_expected` similarity and chance of a match. A chunk holding close
    words of several query words ranks near the top, and so does one holding a rare query
    word's close word next to a common neighbourhood. Only the quality of θ depends on it.
    """
    weight = np.bincount(state.order, minlength=state.width).astype(float)[:, None]
    mean = np.asarray([mean for mean, _ in expected])[:, None]
    chance = np.asarray([chance for _, chance in expected])[:, None]
    total = (weight * np.maximum(best, mean)).sum(axis=0)
    matched = (weight * np.where(best > 0.0, 1.0, chance)).sum(axis=0)
    likeliest = np.argsort(-(total * matched), kind="stable")[: _seed_count(n)]
    return np.sort(ids[likeliest])


def _settle_left_out(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    state: _Scores,
    left_out: list[str],
    df: dict[str, int],
    settled: IntArray,
    floor: float,
    n: int,
    filters: str | None,
) -> None:
    """Give every chunk that can still reach the top ``n`` its similarities to the left-out
    words (the ``settled`` chunks already have them).

    The words go in tiers of their best similarity, highest first: after each tier the
    words still out can lift a chunk less, so fewer chunks stay unsure (their upper bound
    reaches the floor θ) — the commonest words, often the least similar ones (``the`` is two
    edits from ``tkh``), then rarely need reading. A chunk once below θ stays below: its
    bound only falls as tiers are settled and θ only rises.
    """
    level = {word: max(state.close[word].values()) for word in left_out}
    remaining = sorted(left_out, key=lambda word: (-level[word], word))
    while remaining:
        ids, best = state.matrix()
        floor = max(floor, _nth(state.combine(best), n))
        residual = np.zeros(state.width)
        for word in remaining:
            for position, similarity in state.close[word].items():
                residual[position] = max(residual[position], similarity)
        upper = state.combine(np.maximum(best, residual[:, None]))
        unsure = ~np.isin(ids, settled) & (upper >= floor)
        if not unsure.any():
            return
        tier = [word for word in remaining if level[word] == level[remaining[0]]]
        remaining = remaining[len(tier) :]
        # Probing is one index descent per chunk; when most chunks are unsure, reading the
        # tier's postings in full is cheaper (measured: 83k probes took 0.5 s).
        if int(unsure.sum()) * _probe_cost(len(tier)) > sum(df[word] for word in tier):
            state.add(_postings(conn, tables, row, tier, filters))
        else:
            state.add(_probe(conn, tables, ids[unsure], tier))


def _break_ties(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    ids: IntArray,
    scores: FloatArray,
    n: int,
) -> tuple[IntArray, FloatArray]:
    """The chunks that make the top ``n``, plus at most a few more tied with the last of them.

    Every chunk above the ``n``-th score is in; of those tied with it, the lowest chunk ids
    are. A few thousand tied chunks go to SQL, which orders them by id; more (a common word
    ties most of the collection) are never sent: the chunks are walked in id order until
    enough tied ones have turned up, the walk sized by how dense the tied ones are.
    """
    nth = _nth(scores, n)
    above = scores > nth
    tied = ids[scores == nth]  # sorted: ids come from np.unique
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
    """The ``needed`` lowest-id chunks of ``tied``, found by walking the chunks in id order."""
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


def _metadata_filter(alias: str, filters: str | None) -> sql.Composable:
    """`` AND <alias>.metadata @> filters`` for a chunks alias, or nothing without filters."""
    if not filters:
        return sql.SQL("")
    return sql.SQL(" AND {}.metadata @> %(filters)s::jsonb").format(sql.Identifier(alias))


def _perfect(
    conn: psycopg.Connection[Any],
    tables: Tables,
    row: CollectionRow,
    words: list[str],
    df: dict[str, int],
    n: int,
    filters: str | None,
) -> list[ScoredChunk] | None:
    """The top ``n`` when at least ``n`` chunks hold every query word (all score 1.0), else None.

    Every such chunk holds the rarest query word, so when that word is rare enough its chunks
    are all probed; when every word is common, the chunks are walked in id order instead, as
    long as the words' document frequencies promise ``n`` hits within the walk's budget
    (assuming words occur independently). A one-byte query word can never score 1.0, since
    documents' words have two bytes or more.
    """
    distinct = sorted(set(words))
    if any(len(word.encode()) < 2 or word not in df for word in distinct):
        return None
    rarest = min(distinct, key=lambda word: (df[word], word))
    density = 1.0
    for word in distinct:
        density *= df[word] / row.chunk_count
    # Words that rarely meet (as if independent, with room for correlated ones) are not tried.
    if df[rarest] < n or density * row.chunk_count * 4 < n:
        return None
    if df[rarest] <= _PERFECT_PROBES:
        # The rarest word's chunks that hold the others too (only the others need checking).
        # Keys first (from the key-by-id index), whole rows only for the n chosen.
        holds = [word for word in distinct if word != rarest]
        query = tables(
            "SELECT {chunk_columns} FROM (SELECT k.id, k.chunk_key FROM {words} r"
            "  JOIN {chunks} k ON k.id = r.chunk_id"
            "  WHERE r.collection_id = %(coll)s AND r.word = %(rarest)s"
            "  AND {holds_others}{where} ORDER BY k.chunk_key LIMIT %(n)s) AS t"
            " JOIN {chunks} c ON c.id = t.id ORDER BY t.chunk_key",
            holds_others=tables(_HOLDS_ALL, chunk=sql.SQL("r.chunk_id"))
            if holds
            else sql.SQL("true"),
            where=_metadata_filter("k", filters),
        )
    else:
        if density * _PERFECT_WALK < 2 * n:
            return None
        holds = distinct
        query = tables(
            "SELECT {chunk_columns} FROM (SELECT c.id, c.chunk_key, c.document_id, c.idx,"
            "  c.content, c.start_offset, c.end_offset, c.metadata FROM {chunks} c"
            "  WHERE c.collection_id = %(coll)s{where} ORDER BY c.chunk_key LIMIT %(walk)s) AS c"
            " WHERE {holds_all} ORDER BY c.chunk_key LIMIT %(n)s",
            holds_all=tables(_HOLDS_ALL, chunk=sql.SQL("c.id")),
            where=_metadata_filter("c", filters),
        )
    rows = conn.execute(
        query,
        {
            "coll": row.id,
            "filters": filters,
            "rarest": rarest,
            "walk": _PERFECT_WALK,
            "holds": holds,
            "holds_count": len(holds),
            "n": n,
        },
    ).fetchall()
    if len(rows) < n:
        return None
    return [ScoredChunk(chunk_record(r), 1.0) for r in rows]
