"""Reading posting blocks (``blocks.py`` writes them): every posting of some terms or words in
one round trip, decoded from ``array_send``'s binary form by numpy without a Python object
per posting, and the forward index's words of some chunks."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg

from rag_plugin.lexical.slots import IntArray
from rag_plugin.stores.postgres.rows import Tables

__all__ = [
    "TermPostings",
    "chunk_ids_at",
    "decode_int_array",
    "read_chunk_words",
    "read_term_postings",
    "read_word_groups",
    "union_ids",
]


# array_send's binary layout: ndim, has-nulls flag, element type, then per dimension its size
# and lower bound; then each element as a 4-byte length and its big-endian value.
_HEADER = 12
_INT8 = np.dtype([("length", ">i4"), ("value", ">i8")])
_INT4 = np.dtype([("length", ">i4"), ("value", ">i4")])


def decode_int_array(data: bytes, wide: bool) -> IntArray:
    """The values of a one-dimensional, NULL-free ``bigint[]`` (``wide``) or ``integer[]``
    sent by ``array_send``, as int64."""
    if len(data) <= _HEADER:
        return np.zeros(0, dtype=np.int64)  # an empty array has no dimension
    values = np.frombuffer(data, dtype=_INT8 if wide else _INT4, offset=_HEADER + 8)["value"]
    decoded: IntArray = values.astype(np.int64)
    return decoded


class TermPostings:
    """One term's postings: chunk ids (each once, ascending within a block, blocks in no
    set order), tfs and chunk lengths, position by position."""

    __slots__ = ("dls", "ids", "tfs")

    def __init__(self, ids: IntArray, tfs: IntArray, dls: IntArray) -> None:
        self.ids, self.tfs, self.dls = ids, tfs, dls

    def __len__(self) -> int:
        return len(self.ids)


def read_term_postings(
    conn: psycopg.Connection[Any], tables: Tables, collection_id: int, terms: list[str]
) -> dict[str, TermPostings]:
    """Every posting of ``terms`` in the collection (absent terms are missing), one round trip."""
    rows = conn.execute(
        tables(
            "SELECT term, array_send(chunk_ids), array_send(tfs), array_send(dls)"
            " FROM {term_blocks} WHERE collection_id = %s AND term = ANY(%b)"
        ),
        (collection_id, terms),
        binary=True,
    ).fetchall()
    pieces: dict[str, list[tuple[IntArray, IntArray, IntArray]]] = {}
    for term, ids, tfs, dls in rows:
        pieces.setdefault(term, []).append(
            (
                decode_int_array(ids, wide=True),
                decode_int_array(tfs, wide=False),
                decode_int_array(dls, wide=False),
            )
        )
    return {
        term: TermPostings(*(np.concatenate(arrays) for arrays in zip(*blocks, strict=True)))
        for term, blocks in pieces.items()
    }


def chunk_ids_at(ids: IntArray, chunk_ids: IntArray) -> IntArray:
    """The positions in ``ids`` (ascending) of those of ``chunk_ids`` that it holds."""
    at = np.searchsorted(ids, chunk_ids)
    inside = at < len(ids)
    at = at[inside]
    found: IntArray = at[ids[at] == chunk_ids[inside]]
    return found


def union_ids(arrays: list[IntArray]) -> IntArray:
    """The distinct ids of ``arrays``, ascending (a sort and a diff: numpy's ``unique`` hashes
    int64s, which measured ten times slower at 100k ids)."""
    if not arrays:
        return np.zeros(0, dtype=np.int64)
    merged = np.concatenate(arrays)
    merged.sort()
    if len(merged) < 2:
        return merged
    keep = np.empty(len(merged), dtype=bool)
    keep[0] = True
    np.not_equal(merged[1:], merged[:-1], out=keep[1:])
    distinct: IntArray = merged[keep]
    return distinct


def read_word_groups(
    conn: psycopg.Connection[Any], tables: Tables, collection_id: int, groups: list[list[str]]
) -> list[IntArray]:
    """For each group of words, the ids of the chunks holding one of them (a chunk holding
    two comes twice; unordered), all in one round trip.

    The blocks' arrays are decoded per group, not per block: their element bytes are joined
    and read by numpy once (a close-words query reads thousands of small blocks).
    """
    group_of = {word: number for number, words in enumerate(groups) for word in words}
    if not group_of:
        return [np.zeros(0, dtype=np.int64) for _ in groups]
    rows = conn.execute(
        tables(
            "SELECT word, array_send(chunk_ids) FROM {word_blocks}"
            " WHERE collection_id = %s AND word = ANY(%b)"
        ),
        (collection_id, list(group_of)),
        binary=True,
    ).fetchall()
    payloads: list[list[bytes]] = [[] for _ in groups]
    for word, data in rows:
        if len(data) > _HEADER:
            payloads[group_of[word]].append(data[_HEADER + 8 :])
    found: list[IntArray] = []
    for parts in payloads:
        values = np.frombuffer(b"".join(parts), dtype=_INT8)["value"]
        found.append(values.astype(np.int64))
    return found


def read_chunk_words(
    conn: psycopg.Connection[Any], tables: Tables, chunk_ids: IntArray
) -> list[tuple[int, list[str]]]:
    """Each of ``chunk_ids`` with its distinct whitespace words, from the forward index."""
    if not len(chunk_ids):
        return []
    rows = conn.execute(
        tables("SELECT chunk_id, words FROM {chunk_terms} WHERE chunk_id = ANY(%b::bigint[])"),
        (chunk_ids.tolist(),),
        binary=True,
    ).fetchall()
    return [(int(chunk_id), words) for chunk_id, words in rows]
