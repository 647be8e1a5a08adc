"""Posting lists stored as blocks: a term's postings as arrays, a few rows per term.

Why: a query reads every posting of its terms (``lexical.py``). One row per posting costs
PostgreSQL's executor about a microsecond a row, so a 24-term claim with 30k postings took
tens of milliseconds before any scoring, and pruning that avoided reading cost more than it
saved on long queries. The same postings as arrays cost a few rows per term and come back in
binary (``array_send``), which numpy reads without a Python object per posting.

Layout, ``rag_term_blocks``: (collection, term, block) → ``chunk_ids`` (ascending), ``tfs``,
``dls`` (the chunk's length, copied so scoring needs no join), plus the block's ``level``,
``first_id`` and ``last_id``. ``rag_chunk_terms`` is the forward index: each chunk's distinct
terms, so a delete knows which terms' blocks to thin without re-analysing text.

Writes (all inside the document's transaction, so a crash leaves blocks and chunks in step):

- a write adds, per term, one block of its new chunks, cut into pieces of at most
  :data:`BLOCK_SIZE` postings;
- then the term's small blocks are merged by level, as an LSM tree does: a block of ``s``
  postings has level ``floor(log8 s)``; when a term has :data:`FANOUT` blocks of one level,
  all its blocks up to that level are merged and cut again into full pieces plus one
  remainder. A full piece (``BLOCK_SIZE`` postings) is never merged again. So a posting is
  rewritten about ``log8(BLOCK_SIZE)`` = 4 times in its life, and a term has at most a few
  small blocks besides its full pieces;
- removing chunks thins only the blocks whose id range holds them (one full piece or a
  small block per term, since ids grow with every write) and deletes blocks left empty.

The writers of one collection take turns on its row lock (``locks.py``), so merges never race.
Reading the blocks back is ``block_reads.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.adapt import PyFormat

from rag_plugin.stores.postgres import arrays
from rag_plugin.stores.postgres.near import VOCABULARIES
from rag_plugin.stores.postgres.rows import Tables

__all__ = [
    "BLOCK_SIZE",
    "FANOUT",
    "FULL_LEVEL",
    "TERMS",
    "WORDS",
    "BlockKind",
    "add_postings",
    "block_level",
    "block_levels",
    "remove_postings",
]

FANOUT = 8
"""Blocks of one level that trigger a merge (and the base of the levels)."""

FULL_LEVEL = 4
"""The level of a full block."""

BLOCK_SIZE = FANOUT**FULL_LEVEL
"""Postings in a full block (4,096); full blocks are never merged again."""

_LEVEL = "least(%(full_level)s, floor(ln(greatest(count(*), 1)) / ln(8) + 1e-9))::smallint"
"""The level of a block of ``count(*)`` postings: ``floor(log8 count)``, capped at the full
blocks' level; the epsilon keeps exact powers of 8 from rounding down."""


class BlockKind:
    """One kind of posting blocks: its table, its vocabulary (``"terms"`` or ``"words"``,
    which also names its forward-index column) and the arrays a posting carries besides its
    chunk id.

    The SQL below is written once for both kinds; these are the only parts that differ, all
    constants of this module (never input).
    """

    def __init__(self, table: str, vocabulary: str, payload: tuple[str, ...]) -> None:
        self.table, self.forward, self.payload = table, vocabulary, payload
        self.vocabulary, key = VOCABULARIES[vocabulary]
        columns = ("chunk_ids", *payload)
        values = ("id", *(column.removesuffix("s") for column in payload))
        self.fields: dict[str, sql.Composable] = {
            "key": sql.Identifier(key),
            "forward": sql.Identifier(vocabulary),
            "arrays": sql.SQL(", ").join(map(sql.Identifier, columns)),
            "values": sql.SQL(", ").join(map(sql.Identifier, values)),
            "u_values": sql.SQL(", ").join(sql.Identifier("u", v) for v in values),
            "aggregates": sql.SQL(", ").join(
                sql.SQL("array_agg({} ORDER BY id)").format(sql.Identifier(v)) for v in values
            ),
            "u_aggregates": sql.SQL(", ").join(
                sql.SQL("array_agg({} ORDER BY u.id)").format(sql.Identifier("u", v))
                for v in values
            ),
            "level": sql.SQL(_LEVEL),
            # _ADD_BLOCKS: each array column's piece of its flat parameter.
            "slices": sql.SQL(", ").join(
                sql.SQL("({}::{})[u.first : u.last]").format(
                    sql.Placeholder(name, PyFormat.BINARY),
                    sql.SQL("bigint[]" if name == "chunk_ids" else "integer[]"),
                )
                for name in columns
            ),
        }

    def sql(self, tables: Tables, template: str, **extra: sql.Composable) -> sql.Composed | sql.SQL:
        """``template`` with this kind's table as ``{blocks}``, its vocabulary as
        ``{key_vocabulary}``, its columns, and the block-cutting insert as ``{pieces}``."""
        fields = {
            **self.fields,
            "blocks": tables.table(self.table),
            "key_vocabulary": tables.table(self.vocabulary),
            **extra,
        }
        return tables(template, pieces=tables(_INSERT_PIECES, **fields), **fields)


TERMS = BlockKind("term_blocks", "terms", ("tfs", "dls"))
"""BM25: a posting is (chunk id, tf, chunk length)."""

WORDS = BlockKind("word_blocks", "words", ())
"""Fuzzy: a posting is a chunk id (the chunk holds the whitespace word)."""


# Postings (key, id, payload...) from the CTE ``p`` become blocks: per key, ascending ids, cut
# into pieces of BLOCK_SIZE.
_INSERT_PIECES = (
    "INSERT INTO {blocks} (collection_id, {key}, level, first_id, last_id, {arrays})"
    " SELECT %(coll)s, {key}, {level}, min(id), max(id), {aggregates}"
    " FROM (SELECT {key}, {values},"
    "  (row_number() OVER (PARTITION BY {key} ORDER BY id) - 1) / %(block_size)s AS piece"
    "  FROM p) AS numbered"
    " GROUP BY {key}, piece"
)

# New chunks' postings, cut into blocks in Python (:func:`_blocks`): each row is a key, its
# block's level and where its postings lie in the flat arrays (1-based, inclusive).
_ADD_BLOCKS = (
    "INSERT INTO {blocks} (collection_id, {key}, level, first_id, last_id, {arrays})"
    " SELECT %(coll)s, u.key, u.level, (%(chunk_ids)b::bigint[])[u.first],"
    " (%(chunk_ids)b::bigint[])[u.last], {slices}"
    " FROM unnest(%(keys)b::text[], %(levels)b::integer[], %(firsts)b::integer[],"
    "  %(lasts)b::integer[]) AS u(key, level, first, last)"
)

# A key with FANOUT blocks of one level gets every block of that level and below merged.
# ``tops`` is MATERIALIZED, computed once: inlined, it can become the inner side of a nested
# loop over the collection's blocks, and a planner that expects one block of the collection
# (statistics gathered before it had any, as for every new collection) then ran it once per
# block: a write of 10 SciFact documents into a collection of 2,800 word blocks took 6 s
# instead of 5 ms, and more with every write until the next ANALYZE (issue 31).
_MERGE = (
    "WITH levels AS (SELECT {key}, level FROM {blocks}"
    "  WHERE collection_id = %(coll)s AND {key} = ANY(%(keys)b) AND level < %(full_level)s"
    "  GROUP BY {key}, level HAVING count(*) >= %(fanout)s),"
    " tops AS MATERIALIZED (SELECT {key}, max(level) AS upto FROM levels GROUP BY {key}),"
    " gone AS (DELETE FROM {blocks} b USING tops"
    "  WHERE b.collection_id = %(coll)s AND b.{key} = tops.{key} AND b.level <= tops.upto"
    "  RETURNING b.{key}, {arrays}),"
    " p AS (SELECT g.{key}, {u_values} FROM gone g"
    "  CROSS JOIN LATERAL unnest({arrays}) AS u({values})) {pieces}"
)

# Each removed chunk's keys (from the forward index) thin the blocks whose id range holds it;
# a block holding only removed chunks goes. The df of each key falls by its removed chunks,
# and a key no chunk holds any more leaves the vocabulary. Blocks deleted and blocks updated
# are disjoint (``<@`` or not), so one statement does both.
_REMOVE = (
    "WITH removed AS (SELECT k.key, array_agg(f.chunk_id) AS ids,"
    "  min(f.chunk_id) AS low, max(f.chunk_id) AS high"
    "  FROM {chunk_terms} f CROSS JOIN LATERAL unnest(f.{forward}) AS k(key)"
    "  WHERE f.chunk_id IN (SELECT id FROM {chunks} WHERE document_id = %(doc)s)"
    "  GROUP BY k.key),"
    " emptied AS (DELETE FROM {blocks} b USING removed r"
    "  WHERE b.collection_id = %(coll)s AND b.{key} = r.key AND b.first_id <= r.high"
    "  AND b.last_id >= r.low AND b.chunk_ids <@ r.ids RETURNING 1),"
    " thinned AS (UPDATE {blocks} b SET (level, first_id, last_id, {arrays}) ="
    "  (SELECT {level}, min(u.id), max(u.id), {u_aggregates}"
    "   FROM unnest({arrays}) AS u({values}) WHERE u.id <> ALL(r.ids))"
    "  FROM removed r"
    "  WHERE b.collection_id = %(coll)s AND b.{key} = r.key AND b.first_id <= r.high"
    "  AND b.last_id >= r.low AND b.chunk_ids && r.ids AND NOT b.chunk_ids <@ r.ids"
    "  RETURNING 1),"
    " counts AS (SELECT key, cardinality(ids) AS n FROM removed),"
    # The entries are looked up by key (= ANY of the keys, an index probe each), never by a
    # join the planner may run as a scan of the collection's whole vocabulary.
    " lowered AS (UPDATE {key_vocabulary} v SET df = v.df - counts.n FROM counts"
    "  WHERE v.collection_id = %(coll)s AND v.{key} = ANY(ARRAY(SELECT key FROM counts))"
    "  AND v.{key} = counts.key AND v.df > counts.n)"
    # An entry that leaves keeps its keys in the near-entry index (another collection may
    # hold it; near.py).
    " DELETE FROM {key_vocabulary} v USING counts"
    " WHERE v.collection_id = %(coll)s AND v.{key} = ANY(ARRAY(SELECT key FROM counts))"
    " AND v.{key} = counts.key AND v.df <= counts.n"
)

_FORWARD = (
    "INSERT INTO {chunk_terms} (chunk_id, terms, words)"
    " SELECT u.id, (%(terms)b::text[])[u.terms_end - u.terms + 1 : u.terms_end],"
    "  (%(words)b::text[])[u.words_end - u.words + 1 : u.words_end]"
    " FROM unnest(%(ids)b::bigint[], %(term_counts)b::integer[], %(term_ends)b::integer[],"
    "  %(word_counts)b::integer[], %(word_ends)b::integer[])"
    "  AS u(id, terms, terms_end, words, words_end)"
)


def _shape(collection_id: int) -> dict[str, int]:
    return {
        "coll": collection_id,
        "block_size": BLOCK_SIZE,
        "fanout": FANOUT,
        "full_level": FULL_LEVEL,
    }


def block_level(size: int) -> int:
    """The level of a block of ``size`` postings, as :data:`_LEVEL` computes it in SQL:
    ``floor(log8 size)``, at most :data:`FULL_LEVEL`."""
    return int(block_levels(np.array([size]))[0])


def block_levels(sizes: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """:func:`block_level` of each of ``sizes``."""
    bounds = FANOUT ** np.arange(1, FULL_LEVEL + 1)  # 8, 64, 512, 4096: a level's first size
    return np.searchsorted(bounds, sizes, side="right")


def _blocks(
    kind: BlockKind, postings: dict[str, list[tuple[int, ...]]], keys: list[str]
) -> dict[str, arrays.TextArray | arrays.Int4Array | arrays.Int8Array]:
    """The parameters of :data:`_ADD_BLOCKS` for ``postings`` (key → (chunk id, payload...)
    in ascending chunk id; ``keys`` sorted): per key, pieces of at most :data:`BLOCK_SIZE`
    postings, as :data:`_INSERT_PIECES` cuts them."""
    piece_keys: list[str] = []
    sizes: list[int] = []
    flat: list[tuple[int, ...]] = []
    for key in keys:
        found = postings[key]
        if len(found) <= BLOCK_SIZE:  # nearly always: one piece
            piece_keys.append(key)
            sizes.append(len(found))
            flat += found
            continue
        for start in range(0, len(found), BLOCK_SIZE):
            piece = found[start : start + BLOCK_SIZE]
            piece_keys.append(key)
            sizes.append(len(piece))
            flat += piece
    lasts = np.cumsum(sizes)
    columns = list(zip(*flat, strict=True))
    params: dict[str, arrays.TextArray | arrays.Int4Array | arrays.Int8Array] = {
        "keys": arrays.texts(piece_keys),
        "levels": arrays.int4s(block_levels(np.array(sizes))),
        "firsts": arrays.int4s(lasts - np.array(sizes) + 1),
        "lasts": arrays.int4s(lasts),
        "chunk_ids": arrays.int8s(columns[0]),
    }
    for name, values in zip(kind.payload, columns[1:], strict=True):
        params[name] = arrays.int4s(values)
    return params


def add_postings(
    conn: psycopg.Connection[Any],
    tables: Tables,
    collection_id: int,
    chunks: list[tuple[int, int, dict[str, int], list[str]]],
) -> tuple[dict[str, int], dict[str, int]]:
    """Add new chunks, given as (chunk id, length, {term: tf}, distinct words) in ascending
    id, to the forward index and both kinds of blocks, and merge the touched keys' small
    blocks; return the df each term and each word gains (its new postings), which the
    vocabularies' upkeep adds (``near.add_entries``).

    The chunk ids are known (taken with the collection's lock), so the blocks are cut here
    and the statements, reading nothing back, share a pipeline batch with the chunks' insert.
    The long arrays go in :mod:`arrays`' binary form: psycopg's lists dump element by element.
    """
    term_postings: dict[str, list[tuple[int, ...]]] = {}
    word_postings: dict[str, list[tuple[int, ...]]] = {}
    terms: list[str] = []
    words: list[str] = []
    forward: dict[str, list[int]] = {
        "term_counts": [],
        "term_ends": [],
        "word_counts": [],
        "word_ends": [],
    }
    for chunk_id, length, frequencies, chunk_words in chunks:
        for term, tf in frequencies.items():
            term_postings.setdefault(term, []).append((chunk_id, tf, length))
        for word in chunk_words:
            word_postings.setdefault(word, []).append((chunk_id,))
        terms += frequencies
        words += chunk_words
        forward["term_counts"].append(len(frequencies))
        forward["term_ends"].append(len(terms))
        forward["word_counts"].append(len(chunk_words))
        forward["word_ends"].append(len(words))
    conn.execute(
        tables(_FORWARD),
        {
            "terms": arrays.texts(terms),
            "words": arrays.texts(words),
            "ids": arrays.int8s([chunk_id for chunk_id, _, _, _ in chunks]),
            **{name: arrays.int4s(values) for name, values in forward.items()},
        },
    )
    shape = _shape(collection_id)
    for kind, postings in ((TERMS, term_postings), (WORDS, word_postings)):
        if postings:
            keys = sorted(postings)
            conn.execute(kind.sql(tables, _ADD_BLOCKS), {**shape, **_blocks(kind, postings, keys)})
            conn.execute(kind.sql(tables, _MERGE), {**shape, "keys": arrays.texts(keys)})
    return (
        {term: len(found) for term, found in term_postings.items()},
        {word: len(found) for word, found in word_postings.items()},
    )


def remove_postings(
    conn: psycopg.Connection[Any], tables: Tables, collection_id: int, document_id: str
) -> None:
    """Remove a document's chunks from both kinds of blocks and the forward index (before the
    chunks themselves go), lowering df and dropping keys left at 0."""
    params = {**_shape(collection_id), "doc": document_id}
    for kind in (TERMS, WORDS):
        conn.execute(kind.sql(tables, _REMOVE), params)
    conn.execute(
        tables(
            "DELETE FROM {chunk_terms} WHERE chunk_id IN"
            " (SELECT id FROM {chunks} WHERE document_id = %(doc)s)"
        ),
        params,
    )
