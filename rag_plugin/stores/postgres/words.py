"""The fuzzy leg's word postings: each chunk's distinct scoring words and each word's df.

:func:`~rag_plugin.lexical.fuzzy.fuzzy_score` compares query words with a chunk's lowercased
whitespace words of 2 bytes or more, not with analyzer tokens, so the store keeps those words
in ``rag_words`` (word → chunk) and ``rag_word_vocabulary`` (word → df), written in the same
transaction as the chunks. The words are computed here, in Python, because SQL's ``lower()``
under the "C" collation and its notion of whitespace differ from Python's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.stores.postgres.rows import Tables

__all__ = ["backfill_words", "chunk_words", "insert_words", "remove_words"]

_BATCH = 5000


def chunk_words(content: str) -> list[str]:
    """The distinct words FuzzyIndex scores ``content`` by, sorted."""
    # FuzzyIndex lowercases the text and then each scoring word again; lower() twice mirrors
    # it even for the rare characters whose lowercase form lowercases further.
    lowered = content.lower()
    return sorted({word for word in lowered.lower().split() if len(word.encode()) >= 2})


def insert_words(
    conn: psycopg.Connection[Any],
    tables: Tables,
    collection_id: int,
    chunks: Iterable[tuple[str, int, Iterable[str]]],
) -> None:
    """Add the word postings of new chunks, given as (document id, chunk index, words), and
    raise the df.

    The chunk ids come from a join on (document, index), so nothing is read back and the
    statements can share a pipeline batch with the chunks' insert.
    """
    documents: list[str] = []
    indexes: list[int] = []
    words: list[str] = []
    document_frequency: Counter[str] = Counter()
    for document_id, index, chunk_vocabulary in chunks:
        for word in chunk_vocabulary:
            documents.append(document_id)
            indexes.append(index)
            words.append(word)
            document_frequency[word] += 1
    if not words:
        return
    conn.execute(
        tables(
            "INSERT INTO {words} (collection_id, word, chunk_id)"
            " SELECT c.collection_id, u.word, c.id"
            " FROM unnest(%b::text[], %b::integer[], %b::text[]) AS u(doc, idx, word)"
            " JOIN {chunks} c ON c.document_id = u.doc AND c.idx = u.idx"
        ),
        (documents, indexes, words),
    )
    vocabulary = sorted(document_frequency)
    conn.execute(
        tables(
            "INSERT INTO {word_vocabulary} AS v (collection_id, word, df)"
            " SELECT %s, w, n FROM unnest(%b::text[], %b::integer[]) AS u(w, n)"
            " ON CONFLICT (collection_id, word) DO UPDATE SET df = v.df + EXCLUDED.df"
        ),
        (collection_id, vocabulary, [document_frequency[w] for w in vocabulary]),
    )


def remove_words(
    conn: psycopg.Connection[Any], tables: Tables, collection_id: int, document_id: str
) -> None:
    """Remove a document's word postings (before its chunks) and lower their words' df."""
    remove_postings(
        conn,
        tables,
        collection_id,
        document_id,
        postings="words",
        vocabulary="word_vocabulary",
        key="word",
    )


def remove_postings(
    conn: psycopg.Connection[Any],
    tables: Tables,
    collection_id: int,
    document_id: str,
    *,
    postings: str,
    vocabulary: str,
    key: str,
) -> None:
    """Delete a document's rows of one postings table and lower the df of their keys.

    A key no chunk holds any more leaves its vocabulary (so correction never suggests a word
    the collection no longer has). ``postings``/``vocabulary`` name tables of :class:`Tables`
    and ``key`` their key column (``term`` for BM25, ``word`` for fuzzy). One statement that
    returns nothing: the decrement and the clean-up touch disjoint rows (df above or at most
    the count removed, both read from the statement's one snapshot).
    """
    conn.execute(
        tables(
            "WITH gone AS ("
            "  DELETE FROM {postings_table} p USING {chunks} c"
            "  WHERE c.document_id = %(doc)s AND p.chunk_id = c.id"
            "    AND p.collection_id = %(coll)s"
            "  RETURNING p.{key} AS key),"
            " counts AS (SELECT key, count(*)::integer AS n FROM gone GROUP BY key),"
            " lowered AS ("
            "  UPDATE {vocabulary_table} v SET df = v.df - counts.n FROM counts"
            "  WHERE v.collection_id = %(coll)s AND v.{key} = counts.key AND v.df > counts.n)"
            " DELETE FROM {vocabulary_table} v USING counts"
            " WHERE v.collection_id = %(coll)s AND v.{key} = counts.key AND v.df <= counts.n",
            postings_table=tables.table(postings),
            vocabulary_table=tables.table(vocabulary),
            key=sql.Identifier(key),
        ),
        {"doc": document_id, "coll": collection_id},
    )


def backfill_words(conn: psycopg.Connection[Any], schema: str) -> None:
    """Migration step: fill ``rag_words`` from every existing chunk's text."""
    chunks = sql.Identifier(schema, "rag_chunks")
    target = sql.SQL("COPY {} (collection_id, word, chunk_id) FROM STDIN").format(
        sql.Identifier(schema, "rag_words")
    )
    # A server-side cursor streams the texts in batches; each batch is copied before the next
    # is fetched (one connection cannot interleave a COPY with a fetch).
    with conn.cursor(name="rag_backfill_words") as source:
        source.itersize = _BATCH
        source.execute(sql.SQL("SELECT id, collection_id, content FROM {}").format(chunks))
        while batch := source.fetchmany(_BATCH):
            with conn.cursor().copy(target) as copy:
                for chunk_id, collection_id, content in batch:
                    for word in chunk_words(content):
                        copy.write_row((collection_id, word, chunk_id))
